// Package packaging_test checks what ships the controller: the Helm chart in charts/fleet-controller,
// rendered by the pinned helm and applied (server-side, dry run) to the local hub, and the OCI
// image layout `make image` writes to dist/image.
package packaging_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/config/crd"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

const (
	release   = "fleet"
	namespace = "fleet-system"
	fullname  = "fleet-fleet-controller" // <release>-<chart>

	agentCacheDir = "/var/cache/fleet-controller/oci" // agent.cache.path, the agent's default --cache-dir
)

var (
	repoRoot = filepath.Join("..", "..")
	chartDir = filepath.Join(repoRoot, "charts", "fleet-controller")
)

// TestChartAppliesOnHub renders the chart with its defaults and with overrides and applies every
// object to the local hub with server-side apply in dry-run mode, so the API server validates
// and defaults each one, then checks what the controller would run with.
func TestChartAppliesOnHub(t *testing.T) {
	helm := helmPath(t)
	hub := testbed.StartT(t)
	cs, err := kubernetes.NewForConfig(hub.Config)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(cs.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	a := &applier{mapper: restmapper.NewDiscoveryRESTMapper(groups), dyn: dynamic.NewForConfigOrDie(hub.Config)}

	t.Run("defaults", func(t *testing.T) {
		out, err := helmTemplate(t, helm, "--include-crds")
		if err != nil {
			t.Fatal(err)
		}
		got := a.applyAll(t, out)
		wantKinds(t, got, "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Role",
			"RoleBinding", "Service", "ServiceAccount")

		// Our CRDs, and not OCM's, which a hub already has.
		var crdNames, wantCRDs []string
		for _, o := range got["CustomResourceDefinition"] {
			crdNames = append(crdNames, o.GetName())
		}
		all, err := crd.CRDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			if !strings.HasSuffix(c.Spec.Group, "open-cluster-management.io") {
				wantCRDs = append(wantCRDs, c.Name)
			}
		}
		slices.Sort(crdNames)
		slices.Sort(wantCRDs)
		if !slices.Equal(crdNames, wantCRDs) || len(wantCRDs) == 0 {
			t.Errorf("CRDs in the chart = %v, want %v", crdNames, wantCRDs)
		}

		dep := deployment(t, got)
		if *dep.Spec.Replicas != 2 {
			t.Errorf("replicas = %d, want 2", *dep.Spec.Replicas)
		}
		pod := dep.Spec.Template.Spec
		c := container(t, dep)
		wantArgs(t, c.Args, "hub", "--controllers=routing,pull-status,probe-status,replication,sites,cluster-joins,storage-site,apps,app-routes", "--leader-elect=true",
			"--leader-election-namespace="+namespace, "--metrics-bind-address=:8080",
			"--health-probe-bind-address=:8081", "--max-concurrent-writes=64", "--gateway-namespace=fleet-system", "--kube-api-qps=500",
			"--kube-api-burst=1000", "--zap-log-level=info", "--zap-encoder=json")
		if want := "ghcr.io/umkim/fleet-controller:" + appVersion(t); c.Image != want {
			t.Errorf("image = %q, want %q (the chart's appVersion)", c.Image, want)
		}

		// Hardening: non-root, no privilege escalation, no capabilities, read-only root.
		psc, sc := pod.SecurityContext, c.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("pod securityContext.runAsNonRoot not true: %+v", psc)
		}
		if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("pod seccompProfile not RuntimeDefault: %+v", psc)
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container readOnlyRootFilesystem not true: %+v", sc)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container allowPrivilegeEscalation not false: %+v", sc)
		}
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container capabilities do not drop ALL: %+v", sc)
		}
		if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() {
			t.Errorf("resources = %+v, want requests and limits", c.Resources)
		}
		// The collector's soft limit follows the container's limit (manager.MemoryLimitEnv).
		if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == manager.MemoryLimitEnv }); i < 0 ||
			c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.ResourceFieldRef == nil || c.Env[i].ValueFrom.ResourceFieldRef.Resource != "limits.memory" ||
			!c.Env[i].ValueFrom.ResourceFieldRef.Divisor.IsZero() && c.Env[i].ValueFrom.ResourceFieldRef.Divisor.Value() != 1 {
			t.Errorf("container env = %+v, want %s from a resourceFieldRef of limits.memory, in bytes", c.Env, manager.MemoryLimitEnv)
		}

		// Probes and the metrics port, and the Service in front of it.
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports["metrics"] != 8080 || ports["health"] != 8081 {
			t.Errorf("container ports = %v, want metrics 8080 and health 8081", ports)
		}
		for probe, want := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
			if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.String() != "health" {
				t.Errorf("probe = %+v, want GET %s on port health", probe, want)
			}
		}
		var svc corev1.Service
		convert(t, only(t, got, "Service"), &svc)
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
			t.Errorf("metrics Service ports = %+v, want 8080 -> metrics", svc.Spec.Ports)
		}
		for k, v := range svc.Spec.Selector {
			if dep.Spec.Template.Labels[k] != v {
				t.Errorf("Service selector %s=%s does not match the pod labels %v", k, v, dep.Spec.Template.Labels)
			}
		}

		// RBAC: the pods' ServiceAccount is bound to the generated ClusterRole and to the
		// leader-election Role.
		sa := only(t, got, "ServiceAccount").GetName()
		if pod.ServiceAccountName != sa || sa != fullname {
			t.Errorf("serviceAccountName = %q, ServiceAccount %q, want both %q", pod.ServiceAccountName, sa, fullname)
		}
		// Three ClusterRoles: the controller's, and the tenant roles of files/tenant-roles.yaml.
		roles := map[string]rbacv1.ClusterRole{}
		for _, u := range got["ClusterRole"] {
			var r rbacv1.ClusterRole
			convert(t, u, &r)
			roles[r.Name] = r
		}
		cr := roles[fullname]
		if want := roleRules(t, filepath.Join(chartDir, "files", "role.yaml")); len(roles) != 3 || !equalRules(cr.Rules, want) {
			t.Errorf("ClusterRoles %v; %s's rules = %+v, want files/role.yaml's %+v", slices.Collect(maps.Keys(roles)), fullname, cr.Rules, want)
		}
		raw, err := os.ReadFile(filepath.Join(chartDir, "files", "tenant-roles.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			var want rbacv1.ClusterRole
			if err := yaml.Unmarshal([]byte(doc), &want); err != nil {
				t.Fatal(err)
			}
			name := fullname + "-" + strings.TrimPrefix(want.Name, "fleet-")
			if got, ok := roles[name]; !ok || !equalRules(got.Rules, want.Rules) {
				t.Errorf("tenant ClusterRole %s: %+v, want the rules of %s in files/tenant-roles.yaml", name, got.Rules, want.Name)
			}
		}
		var crb rbacv1.ClusterRoleBinding
		convert(t, only(t, got, "ClusterRoleBinding"), &crb)
		checkBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", cr.Name, sa)
		var role rbacv1.Role
		convert(t, only(t, got, "Role"), &role)
		leases := rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
		events := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}
		if !equalRules(role.Rules, []rbacv1.PolicyRule{leases, events}) {
			t.Errorf("leader-election Role rules = %+v", role.Rules)
		}
		var rb rbacv1.RoleBinding
		convert(t, only(t, got, "RoleBinding"), &rb)
		checkBinding(t, rb.RoleRef, rb.Subjects, "Role", role.Name, sa)
	})

	t.Run("one replica without leader election or metrics", func(t *testing.T) {
		out, err := helmTemplate(t, helm, "--set", "controllers={routing}", "--set", "replicas=1",
			"--set", "leaderElection.enabled=false", "--set", "metrics.enabled=false", "--set", "logLevel=debug",
			"--set", "kubeAPI.qps=20.5", "--set", "kubeAPI.burst=40", "--set", "maxConcurrentWrites=4", "--set", "gatewayNamespace=gateway",
			"--set", "image.tag=dev", "--set", "extraArgs={--zap-devel}")
		if err != nil {
			t.Fatal(err)
		}
		got := a.applyAll(t, out)
		wantKinds(t, got, "ClusterRole", "ClusterRoleBinding", "Deployment", "ServiceAccount")
		dep := deployment(t, got)
		if *dep.Spec.Replicas != 1 {
			t.Errorf("replicas = %d, want 1", *dep.Spec.Replicas)
		}
		c := container(t, dep)
		wantArgs(t, c.Args, "hub", "--controllers=routing", "--leader-elect=false", "--metrics-bind-address=0",
			"--health-probe-bind-address=:8081", "--max-concurrent-writes=4", "--gateway-namespace=gateway", "--kube-api-qps=20.5",
			"--kube-api-burst=40", "--zap-log-level=debug", "--zap-encoder=json", "--zap-devel")
		if c.Image != "ghcr.io/umkim/fleet-controller:dev" {
			t.Errorf("image = %q, want the tag override", c.Image)
		}
		if len(c.Ports) != 1 || c.Ports[0].Name != "health" {
			t.Errorf("ports = %+v, want only health", c.Ports)
		}
	})

	t.Run("lease name and an existing ServiceAccount", func(t *testing.T) {
		out, err := helmTemplate(t, helm, "--set", "leaderElection.id=hub-a.fleet.umkim.io",
			"--set", "serviceAccount.create=false", "--set", "serviceAccount.name=fleet-hub",
			"--set", "controllers={routing,other}")
		if err != nil {
			t.Fatal(err)
		}
		got := a.applyAll(t, out)
		wantKinds(t, got, "ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "Service")
		dep := deployment(t, got)
		wantArgs(t, container(t, dep).Args, "hub", "--controllers=routing,other", "--leader-elect=true",
			"--leader-election-namespace="+namespace, "--leader-election-id=hub-a.fleet.umkim.io",
			"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--max-concurrent-writes=64",
			"--gateway-namespace=fleet-system", "--kube-api-qps=500", "--kube-api-burst=1000", "--zap-log-level=info", "--zap-encoder=json")
		if dep.Spec.Template.Spec.ServiceAccountName != "fleet-hub" {
			t.Errorf("serviceAccountName = %q, want fleet-hub", dep.Spec.Template.Spec.ServiceAccountName)
		}
		var rb rbacv1.RoleBinding
		convert(t, only(t, got, "RoleBinding"), &rb)
		checkBinding(t, rb.RoleRef, rb.Subjects, "Role", fullname+"-leader-election", "fleet-hub")
	})

	t.Run("agent mode", func(t *testing.T) {
		out, err := helmTemplate(t, helm, "--set", "mode=agent")
		if err != nil {
			t.Fatal(err)
		}
		got := a.applyAll(t, out)
		wantKinds(t, got, "ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "Service",
			"ServiceAccount")
		dep := deployment(t, got)
		pod := dep.Spec.Template.Spec
		c := container(t, dep)
		wantArgs(t, c.Args, "agent", "--cache-dir="+agentCacheDir, "--workspace-role=fleet-workspace", "--drift-interval=5m", "--leader-elect=true",
			"--leader-election-namespace="+namespace, "--metrics-bind-address=:8080",
			"--health-probe-bind-address=:8081", "--zap-log-level=info", "--zap-encoder=json")
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container readOnlyRootFilesystem not true: %+v", sc)
		}
		vol := cacheVolume(t, pod, c)
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit != nil || vol.PersistentVolumeClaim != nil {
			t.Errorf("cache volume = %+v, want an emptyDir without a size limit", vol.VolumeSource)
		}

		// RBAC: the agent's generated ClusterRole and fleet-system Role, no hub rules; the
		// leader-election Role beside them.
		sa := only(t, got, "ServiceAccount").GetName()
		if pod.ServiceAccountName != sa || sa != fullname {
			t.Errorf("serviceAccountName = %q, ServiceAccount %q, want both %q", pod.ServiceAccountName, sa, fullname)
		}
		wantCluster, wantRoles := agentRoles(t, filepath.Join(chartDir, "files", "agent-role.yaml"))
		clusterRoles := map[string]rbacv1.ClusterRole{}
		for _, o := range got["ClusterRole"] {
			var r rbacv1.ClusterRole
			convert(t, o, &r)
			clusterRoles[r.Name] = r
		}
		cr, workspace := clusterRoles[fullname], clusterRoles["fleet-workspace"]
		if len(clusterRoles) != 2 || cr.Name == "" || workspace.Name == "" {
			t.Fatalf("ClusterRoles = %v, want %s and fleet-workspace", slices.Collect(maps.Keys(clusterRoles)), fullname)
		}
		if !equalRules(cr.Rules, wantCluster) || len(wantCluster) == 0 {
			t.Errorf("ClusterRole rules = %+v, want files/agent-role.yaml's %+v", cr.Rules, wantCluster)
		}
		// Least privilege: neither the agent nor a workspace gets a wildcard, and the agent may
		// bind only the workspace role.
		if want := roleRules(t, filepath.Join(chartDir, "files", "workspace-role.yaml")); !equalRules(workspace.Rules, want) || len(want) == 0 {
			t.Errorf("workspace ClusterRole rules = %+v, want files/workspace-role.yaml's %+v", workspace.Rules, want)
		}
		for _, r := range append(slices.Clone(cr.Rules), workspace.Rules...) {
			if slices.Contains(r.Resources, "*") || slices.Contains(r.Verbs, "*") || slices.Contains(r.APIGroups, "*") {
				t.Errorf("rule %+v grants a wildcard", r)
			}
			if slices.Contains(r.Verbs, "bind") && !slices.Equal(r.ResourceNames, []string{"fleet-workspace"}) {
				t.Errorf("bind rule %+v, want it limited to the workspace role fleet-workspace", r)
			}
		}
		var crb rbacv1.ClusterRoleBinding
		convert(t, only(t, got, "ClusterRoleBinding"), &crb)
		checkBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", cr.Name, sa)
		roles := map[string]rbacv1.Role{}
		for _, o := range got["Role"] {
			var r rbacv1.Role
			convert(t, o, &r)
			roles[r.Name] = r
		}
		agentRole, ok := roles[fullname]
		if len(roles) != 2 || !ok || roles[fullname+"-leader-election"].Name == "" {
			t.Fatalf("Roles = %v, want %s and %s-leader-election", slices.Collect(maps.Keys(roles)), fullname, fullname)
		}
		if len(wantRoles) != 1 || wantRoles[0].Namespace != namespace {
			t.Fatalf("files/agent-role.yaml Roles = %+v, want one in %s", wantRoles, namespace)
		}
		if agentRole.Namespace != namespace || !equalRules(agentRole.Rules, wantRoles[0].Rules) {
			t.Errorf("agent Role in %q with rules %+v, want files/agent-role.yaml's in %q: %+v",
				agentRole.Namespace, agentRole.Rules, namespace, wantRoles[0].Rules)
		}
		secrets := false
		for _, r := range agentRole.Rules {
			secrets = secrets || slices.Contains(r.Resources, "secrets")
		}
		if !secrets {
			t.Errorf("agent Role rules %+v do not grant the chain Secrets", agentRole.Rules)
		}
		bindings := map[string]rbacv1.RoleBinding{}
		for _, o := range got["RoleBinding"] {
			var rb rbacv1.RoleBinding
			convert(t, o, &rb)
			bindings[rb.Name] = rb
		}
		if len(bindings) != 2 {
			t.Errorf("RoleBindings = %v, want 2", slices.Collect(maps.Keys(bindings)))
		}
		for name := range roles {
			rb := bindings[name]
			checkBinding(t, rb.RoleRef, rb.Subjects, "Role", name, sa)
		}
	})

	t.Run("agent mode with a persistent cache, one replica", func(t *testing.T) {
		out, err := helmTemplate(t, helm, "--set", "mode=agent", "--set", "replicas=1",
			"--set", "leaderElection.enabled=false", "--set", "agent.cache.persistentVolumeClaim=oci-cache",
			"--set", "agent.cache.sizeLimit=5Gi", "--set", "extraArgs={--retry-failed=30s}",
			"--set", "agent.workspaceRole.name=edit", "--set", "agent.workspaceRole.create=false")
		if err != nil {
			t.Fatal(err)
		}
		got := a.applyAll(t, out)
		wantKinds(t, got, "ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "Service",
			"ServiceAccount")
		// Kubernetes' own edit role for workspaces: none created, the agent may bind edit only.
		var cr rbacv1.ClusterRole
		convert(t, only(t, got, "ClusterRole"), &cr)
		binds := 0
		for _, r := range cr.Rules {
			if slices.Contains(r.Verbs, "bind") {
				binds++
				if !slices.Equal(r.ResourceNames, []string{"edit"}) {
					t.Errorf("bind rule %+v, want it limited to edit", r)
				}
			}
		}
		if binds != 1 {
			t.Errorf("the agent ClusterRole has %d bind rules, want 1: %+v", binds, cr.Rules)
		}
		dep := deployment(t, got)
		c := container(t, dep)
		wantArgs(t, c.Args, "agent", "--cache-dir="+agentCacheDir, "--workspace-role=edit", "--drift-interval=5m", "--leader-elect=false",
			"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081", "--zap-log-level=info",
			"--zap-encoder=json", "--retry-failed=30s")
		vol := cacheVolume(t, dep.Spec.Template.Spec, c)
		if vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != "oci-cache" || vol.EmptyDir != nil {
			t.Errorf("cache volume = %+v, want PersistentVolumeClaim oci-cache", vol.VolumeSource)
		}
		// Without leader election the one Role is the agent's.
		var role rbacv1.Role
		convert(t, only(t, got, "Role"), &role)
		if role.Name != fullname || role.Namespace != namespace {
			t.Errorf("Role %s/%s, want %s/%s", role.Namespace, role.Name, namespace, fullname)
		}
	})

	t.Run("agent mode cache size limit", func(t *testing.T) {
		out, err := helmTemplate(t, helm, "--set", "mode=agent", "--set", "agent.cache.sizeLimit=5Gi")
		if err != nil {
			t.Fatal(err)
		}
		got := a.applyAll(t, out)
		dep := deployment(t, got)
		vol := cacheVolume(t, dep.Spec.Template.Spec, container(t, dep))
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.String() != "5Gi" {
			t.Errorf("cache volume = %+v, want an emptyDir of at most 5Gi", vol.VolumeSource)
		}
	})

	t.Run("refuses an unknown mode", func(t *testing.T) {
		_, err := helmTemplate(t, helm, "--set", "mode=spoke")
		if err == nil || !strings.Contains(err.Error(), "neither hub nor agent") {
			t.Errorf("helm template with mode=spoke: err = %v, want the chart's refusal", err)
		}
	})

	t.Run("refuses replicas without leader election", func(t *testing.T) {
		_, err := helmTemplate(t, helm, "--set", "leaderElection.enabled=false")
		if err == nil || !strings.Contains(err.Error(), "replicas > 1 needs leaderElection.enabled=true") {
			t.Errorf("helm template with 2 replicas and no leader election: err = %v, want the chart's refusal", err)
		}
	})
}

// TestChartInSync checks that the chart's copies match what controller-gen generated into
// config/: `make generate` refreshes both.
func TestChartInSync(t *testing.T) {
	bases, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	copies, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := func(paths []string) (n []string) {
		for _, p := range paths {
			n = append(n, filepath.Base(p))
		}
		return n
	}
	if !slices.Equal(names(bases), names(copies)) || len(bases) == 0 {
		t.Fatalf("chart crds/ holds %v, config/crd/bases %v: run make generate", names(copies), names(bases))
	}
	for i := range bases {
		sameFile(t, bases[i], copies[i])
	}
	sameFile(t, filepath.Join(repoRoot, "config", "rbac", "role.yaml"), filepath.Join(chartDir, "files", "role.yaml"))
	agentSrc := filepath.Join(repoRoot, "config", "rbac", "agent", "role.yaml")
	if _, err := os.Stat(agentSrc); err != nil {
		t.Errorf("agent roles: %v: run make generate", err)
	}
	sameFile(t, agentSrc, filepath.Join(chartDir, "files", "agent-role.yaml"))
	sameFile(t, filepath.Join(repoRoot, "config", "rbac", "tenant", "roles.yaml"), filepath.Join(chartDir, "files", "tenant-roles.yaml"))
	sameFile(t, filepath.Join(repoRoot, "config", "rbac", "workspace", "role.yaml"), filepath.Join(chartDir, "files", "workspace-role.yaml"))
}

// sameFile fails unless both files hold the same bytes or neither exists.
func sameFile(t *testing.T, src, dst string) {
	t.Helper()
	a, errA := os.ReadFile(src)
	b, errB := os.ReadFile(dst)
	switch {
	case errors.Is(errA, os.ErrNotExist) && errors.Is(errB, os.ErrNotExist):
	case errA != nil && !errors.Is(errA, os.ErrNotExist):
		t.Error(errA)
	case errB != nil && !errors.Is(errB, os.ErrNotExist):
		t.Error(errB)
	case !bytes.Equal(a, b):
		t.Errorf("%s differs from %s (or one is missing): run make generate", dst, src)
	}
}

// helmPath is bin/helm; without it the test skips, or fails when FLEET_REQUIRE_TESTBED=1.
func helmPath(t *testing.T) string {
	t.Helper()
	dir, err := testbed.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "helm")
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o111 == 0 {
		msg := fmt.Sprintf("no helm in %s: run `make tools` (or set %s)", dir, testbed.EnvBinDir)
		if os.Getenv(testbed.EnvRequire) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// helmTemplate renders the chart as release "fleet" in namespace fleet-system; a failed render
// returns helm's message in the error.
func helmTemplate(t *testing.T, helm string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), helm, append([]string{"template", release, chartDir, "--namespace", namespace}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

type applier struct {
	mapper meta.RESTMapper
	dyn    dynamic.Interface
}

// applyAll decodes every object of a render, checks its namespace against its scope, applies it
// with server-side apply and DryRun=All, and returns what the API server answered, by kind.
func (a *applier) applyAll(t *testing.T, render []byte) map[string][]*unstructured.Unstructured {
	t.Helper()
	got := map[string][]*unstructured.Unstructured{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(render), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding the render: %v", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		what := gvk.Kind + " " + obj.GetName()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		var ri dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if obj.GetNamespace() != namespace {
				t.Errorf("%s: namespace %q, want %q", what, obj.GetNamespace(), namespace)
			}
			ri = a.dyn.Resource(m.Resource).Namespace(namespace)
		} else if obj.GetNamespace() != "" {
			t.Errorf("cluster-scoped %s has namespace %q", what, obj.GetNamespace())
		}
		applied, err := ri.Apply(t.Context(), obj.GetName(), obj, metav1.ApplyOptions{
			FieldManager: "packaging-test", Force: true, DryRun: []string{metav1.DryRunAll},
		})
		if err != nil {
			t.Errorf("apply %s: %v", what, err)
			continue
		}
		got[gvk.Kind] = append(got[gvk.Kind], applied)
	}
	return got
}

func wantKinds(t *testing.T, got map[string][]*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	var have []string
	for k := range got {
		have = append(have, k)
	}
	slices.Sort(have)
	if !slices.Equal(have, kinds) {
		t.Fatalf("rendered and applied kinds = %v, want %v", have, kinds)
	}
}

// only returns the one object of a kind.
func only(t *testing.T, got map[string][]*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	if len(got[kind]) != 1 {
		t.Fatalf("%d %s objects, want 1", len(got[kind]), kind)
	}
	return got[kind][0]
}

func convert(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func deployment(t *testing.T, got map[string][]*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	convert(t, only(t, got, "Deployment"), &d)
	if d.Name != fullname || d.Spec.Replicas == nil {
		t.Fatalf("Deployment %q, replicas %v: want %q with replicas", d.Name, d.Spec.Replicas, fullname)
	}
	return &d
}

func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if cs := d.Spec.Template.Spec.Containers; len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	return d.Spec.Template.Spec.Containers[0]
}

func wantArgs(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("args:\n got %q\nwant %q", got, want)
	}
}

func checkBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, role, sa string) {
	t.Helper()
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: namespace}
	if ref.Kind != kind || ref.Name != role || len(subjects) != 1 || subjects[0] != want {
		t.Errorf("binding to %s %s for %+v, want to %s %s for %+v", ref.Kind, ref.Name, subjects, kind, role, want)
	}
}

// roleRules reads the rules of the ClusterRole controller-gen writes; none when the file is
// missing (no +kubebuilder:rbac markers yet).
func roleRules(t *testing.T, path string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if role.Kind != "ClusterRole" {
		t.Fatalf("%s holds a %q, want a ClusterRole", path, role.Kind)
	}
	return role.Rules
}

// cacheVolume returns the pod's cache volume and checks the container mounts it, writable, at the
// agent's cache directory.
func cacheVolume(t *testing.T, pod corev1.PodSpec, c corev1.Container) corev1.Volume {
	t.Helper()
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == agentCacheDir })
	if i < 0 || c.VolumeMounts[i].ReadOnly {
		t.Fatalf("volume mounts = %+v, want a writable one at %s", c.VolumeMounts, agentCacheDir)
	}
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if j < 0 {
		t.Fatalf("no volume %q in %+v", c.VolumeMounts[i].Name, pod.Volumes)
	}
	return pod.Volumes[j]
}

// agentRoles reads the roles controller-gen writes for the agent, one YAML stream: the
// ClusterRole's rules and the namespaced Roles.
func agentRoles(t *testing.T, path string) (cluster []rbacv1.PolicyRule, roles []rbacv1.Role) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	clusterRoles := 0
	for {
		var obj unstructured.Unstructured
		err := dec.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch obj.GetKind() {
		case "":
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			convert(t, &obj, &cr)
			cluster = cr.Rules
			clusterRoles++
		case "Role":
			var r rbacv1.Role
			convert(t, &obj, &r)
			roles = append(roles, r)
		default:
			t.Fatalf("%s holds a %q, want a ClusterRole and Roles", path, obj.GetKind())
		}
	}
	if clusterRoles != 1 {
		t.Fatalf("%s holds %d ClusterRoles, want 1", path, clusterRoles)
	}
	return cluster, roles
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) &&
			slices.Equal(x.Verbs, y.Verbs) && slices.Equal(x.ResourceNames, y.ResourceNames) &&
			slices.Equal(x.NonResourceURLs, y.NonResourceURLs)
	})
}

func appVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion %q: %v", c.AppVersion, err)
	}
	return c.AppVersion
}
