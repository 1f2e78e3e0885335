package controller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

type siteView struct {
	t  *testing.T
	c  client.Client
	ws string
}

func (v siteView) create(objs ...client.Object) {
	v.t.Helper()
	for _, o := range objs {
		if err := v.c.Create(v.t.Context(), o); err != nil {
			v.t.Fatal(err)
		}
	}
}

func (v siteView) site(name string, spec v1alpha1.FleetSiteSpec) *v1alpha1.FleetSite {
	return &v1alpha1.FleetSite{ObjectMeta: metav1.ObjectMeta{Namespace: v.ws, Name: name}, Spec: spec}
}

func (v siteView) join(name, cluster, site, ingress string, caps ...string) *v1alpha1.FleetClusterJoin {
	j := &v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: v.ws, Name: name},
		Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: site, Capabilities: caps}}
	if ingress != "" {
		j.Spec.Edge = &v1alpha1.ClusterJoinEdge{IngressID: ingress}
	}
	return j
}

func (v siteView) clusterLabels(name string) map[string]string {
	v.t.Helper()
	var mc clusterv1.ManagedCluster
	if err := v.c.Get(v.t.Context(), types.NamespacedName{Name: name}, &mc); err != nil {
		v.t.Fatal(err)
	}
	return mc.Labels
}

// labelsAre waits until cluster's labels of ours (fleet.site and capabilities) are exactly want,
// and every label in keep is still there.
func (v siteView) labelsAre(cluster string, want map[string]string, keep map[string]string) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, "labels of "+cluster, func() error {
		got := v.clusterLabels(cluster)
		ours := map[string]string{}
		for k, val := range got {
			if k == v1alpha1.SiteLabel || strings.HasPrefix(k, v1alpha1.CapabilityLabelPrefix) {
				ours[k] = val
			}
		}
		if fmt.Sprint(ours) != fmt.Sprint(want) {
			return fmt.Errorf("join labels %v, want %v", ours, want)
		}
		for k, val := range keep {
			if got[k] != val {
				return fmt.Errorf("label %s=%q, want %q kept", k, got[k], val)
			}
		}
		return nil
	})
}

// joinCondition waits until the join's condition typ, for its current generation, is
// status/reason with a message containing each of parts.
func (v siteView) joinCondition(name, typ, statusReason string, parts ...string) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, "condition "+typ+" of join "+name, func() error {
		var j v1alpha1.FleetClusterJoin
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.ws, Name: name}, &j); err != nil {
			return err
		}
		if j.Status.ObservedGeneration != j.Generation {
			return fmt.Errorf("observedGeneration %d of %d", j.Status.ObservedGeneration, j.Generation)
		}
		c := meta.FindStatusCondition(j.Status.Conditions, typ)
		if c == nil {
			return fmt.Errorf("no %s condition", typ)
		}
		if got := string(c.Status) + "/" + c.Reason; got != statusReason {
			return fmt.Errorf("%s = %s (%s), want %s", typ, got, c.Message, statusReason)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("%s message %q does not say %q", typ, c.Message, p)
			}
		}
		return nil
	})
}

// siteIs waits until the site reports joined clusters and its edge ConfigMap holds want.
func (v siteView) siteIs(name string, joined int32, wan bool, want map[string]string) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, "status and edge of site "+name, func() error {
		var s v1alpha1.FleetSite
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.ws, Name: name}, &s); err != nil {
			return err
		}
		if s.Status.ObservedGeneration != s.Generation || s.Status.JoinedClusters != joined {
			return fmt.Errorf("observedGeneration %d of %d, joinedClusters %d, want %d", s.Status.ObservedGeneration, s.Generation, s.Status.JoinedClusters, joined)
		}
		if !meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ReadyCondition) {
			return fmt.Errorf("not Ready: %v", s.Status.Conditions)
		}
		if meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.WANPathCondition) != wan {
			return fmt.Errorf("WANPath %v, want %v", s.Status.Conditions, wan)
		}
		if s.Status.EdgeConfigMap != controller.EdgeConfigMapName(name) {
			return fmt.Errorf("edgeConfigMap %q", s.Status.EdgeConfigMap)
		}
		var cm corev1.ConfigMap
		if err := v.c.Get(v.t.Context(), types.NamespacedName{Namespace: v.ws, Name: controller.EdgeConfigMapName(name)}, &cm); err != nil {
			return err
		}
		if fmt.Sprint(cm.Data) != fmt.Sprint(want) {
			return fmt.Errorf("edge ConfigMap data\n%v\nwant\n%v", cm.Data, want)
		}
		if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != s.UID {
			return fmt.Errorf("edge ConfigMap owners %v", cm.OwnerReferences)
		}
		return nil
	})
}

func (v siteView) update(obj client.Object, change func()) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, "update "+obj.GetName(), func() error {
		if err := v.c.Get(v.t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return v.c.Update(v.t.Context(), obj)
	})
}

// setStatus writes obj's status as change leaves it, reading it again after a conflict.
func (v siteView) setStatus(obj client.Object, change func()) {
	v.t.Helper()
	testkit.Eventually(v.t, converge, "status of "+obj.GetName(), func() error {
		if err := v.c.Get(v.t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return v.c.Status().Update(v.t.Context(), obj)
	})
}

func siteSpec() v1alpha1.FleetSiteSpec {
	return v1alpha1.FleetSiteSpec{DisplayName: "Berlin store", Edge: v1alpha1.SiteEdge{Ingress: []v1alpha1.IngressEntry{
		{ID: "wan", Method: v1alpha1.IngressPortForward, Address: "203.0.113.10", Ports: &v1alpha1.IngressPorts{HTTP: 30080, HTTPS: 30443}},
		{ID: "proxy", Method: v1alpha1.IngressReverseProxy, Address: "edge.berlin.example.com"},
	}}}
}

// TestClusterJoins: a join labels its ManagedCluster with its site and capabilities and leaves
// foreign labels alone; removing a capability removes exactly its label; a second join on a
// port_forward entry is IngressTaken naming the first, and takes over when the first goes;
// reverse_proxy entries are shared; the site counts its Ready joins and publishes its edge
// ConfigMap; deleting a join removes its labels; steady state writes nothing.
func TestClusterJoins(t *testing.T) {
	const ws = "joins-ws"
	_, c := startHub(t)
	if err := demoseed.Seed(t.Context(), c, ws); err != nil {
		t.Fatal(err)
	}
	v := siteView{t, c, ws}
	ctx := t.Context()
	h := sharedHub
	defer runControllers(t, h.Config, "sites,cluster-joins")()
	defer cleanJoins(t, c, ws) // while the manager runs: the demo seed's clusters are shared with other tests

	start := time.Now()
	v.create(v.site("berlin", siteSpec()), v.site("airgap", v1alpha1.FleetSiteSpec{}))
	v.create(v.join("eu-01", "eu-01", "berlin", "wan", "gpu", "storage"))
	v.labelsAre("eu-01", map[string]string{"fleet.site": "berlin", "capability.fleet.umkim.io/gpu": "true", "capability.fleet.umkim.io/storage": "true"},
		map[string]string{"region": "eu", "cluster.open-cluster-management.io/clusterset": "edge"})
	v.joinCondition("eu-01", v1alpha1.JoinedCondition, "True/Labelled", "fleet.site=berlin")
	v.joinCondition("eu-01", v1alpha1.ReadyCondition, "True/Ready", `port_forward entry "wan"`)
	edge := map[string]string{"site": "berlin", "displayName": "Berlin store", "wanPath": "true", "clusters": "eu-01", "ingress": "wan,proxy",
		"ingress.wan.method": "port_forward", "ingress.wan.address": "203.0.113.10", "ingress.wan.http": "30080", "ingress.wan.https": "30443", "ingress.wan.clusters": "eu-01",
		"ingress.proxy.method": "reverse_proxy", "ingress.proxy.address": "edge.berlin.example.com", "ingress.proxy.clusters": ""}
	v.siteIs("berlin", 1, true, edge)
	v.siteIs("airgap", 0, false, map[string]string{"site": "airgap", "wanPath": "false", "clusters": "", "ingress": ""})
	t.Logf("first join labelled and counted in %v", time.Since(start))

	// A foreign label beside ours, then a capability removed: only its label goes.
	var mc clusterv1.ManagedCluster
	mc.Name = "eu-01"
	v.update(&mc, func() { mc.Labels["team"] = "retail" })
	var j1 v1alpha1.FleetClusterJoin
	j1.Namespace, j1.Name = ws, "eu-01"
	v.update(&j1, func() { j1.Spec.Capabilities = []string{"gpu"} })
	v.labelsAre("eu-01", map[string]string{"fleet.site": "berlin", "capability.fleet.umkim.io/gpu": "true"}, map[string]string{"team": "retail", "region": "eu"})
	if got := v.clusterLabels("eu-01"); got["capability.fleet.umkim.io/storage"] != "" {
		t.Errorf("storage capability label kept: %v", got)
	}

	// A second join on the port_forward entry: labelled, but not Ready, naming the first.
	v.create(v.join("eu-02", "eu-02", "berlin", "wan"))
	v.joinCondition("eu-02", v1alpha1.JoinedCondition, "True/Labelled")
	v.joinCondition("eu-02", v1alpha1.ReadyCondition, "False/IngressTaken", "FleetClusterJoin "+ws+"/eu-01 (cluster eu-01) holds it")
	// Two joins share the reverse_proxy entry.
	v.create(v.join("us-01", "us-01", "berlin", "proxy", "edge-gateway"), v.join("eu-staging-01", "eu-staging-01", "berlin", "proxy"))
	v.joinCondition("us-01", v1alpha1.ReadyCondition, "True/Ready", "reverse_proxy")
	v.joinCondition("eu-staging-01", v1alpha1.ReadyCondition, "True/Ready", "reverse_proxy")
	edge["clusters"], edge["ingress.proxy.clusters"] = "eu-01,eu-staging-01,us-01", "eu-staging-01,us-01"
	v.siteIs("berlin", 3, true, edge)

	// Missing entry, missing site, missing cluster.
	v.create(v.join("lab", "lab-sandbox", "berlin", "nope"), v.join("store", "store-0201", "nowhere", ""), v.join("ghost", "no-such-cluster", "berlin", ""))
	v.joinCondition("lab", v1alpha1.ReadyCondition, "False/IngressNotFound", `no ingress entry "nope"`, "wan, proxy")
	v.joinCondition("store", v1alpha1.JoinedCondition, "False/SiteNotFound", ws+"/nowhere")
	v.joinCondition("ghost", v1alpha1.JoinedCondition, "False/ClusterNotFound", "no-such-cluster")
	v.labelsAre("store-0201", map[string]string{}, nil)
	// A second join of the same cluster is refused and sets nothing.
	v.create(v.join("lab-again", "lab-sandbox", "airgap", ""))
	v.joinCondition("lab-again", v1alpha1.JoinedCondition, "False/ClusterAlreadyJoined", ws+"/lab")

	// Steady state: nothing more is written.
	time.Sleep(2 * time.Second)
	before := writes("", "")
	time.Sleep(3 * time.Second)
	if after := writes("", ""); after != before {
		t.Errorf("steady state wrote %v times", after-before)
	}

	// Deleting the first join removes exactly its labels, and the second takes the entry over.
	if err := c.Delete(ctx, &j1); err != nil {
		t.Fatal(err)
	}
	v.labelsAre("eu-01", map[string]string{}, map[string]string{"team": "retail", "region": "eu"})
	testkit.Eventually(t, converge, "join eu-01 gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(&j1), &j1); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	v.joinCondition("eu-02", v1alpha1.ReadyCondition, "True/Ready", `port_forward entry "wan"`)
	edge["clusters"], edge["ingress.wan.clusters"] = "eu-02,eu-staging-01,us-01", "eu-02"
	v.siteIs("berlin", 3, true, edge)
	// A status the reconcilers would not write (one whose write was skipped against a cache that
	// did not hold their last write yet, or one edited by hand) is rewritten on the event of that
	// status change alone: no spec changes, and the informers' resync is hours away.
	var berlin v1alpha1.FleetSite
	berlin.Namespace, berlin.Name = ws, "berlin"
	v.setStatus(&berlin, func() { berlin.Status.JoinedClusters = 2 })
	v.siteIs("berlin", 3, true, edge)
	var j2 v1alpha1.FleetClusterJoin
	j2.Namespace, j2.Name = ws, "eu-02"
	v.setStatus(&j2, func() {
		meta.SetStatusCondition(&j2.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonIngressTaken, Message: "edited by hand", ObservedGeneration: j2.Generation})
	})
	v.joinCondition("eu-02", v1alpha1.ReadyCondition, "True/Ready", `port_forward entry "wan"`)
	v.siteIs("berlin", 3, true, edge)
	// A cluster freed: the refused join now takes it.
	if err := c.Delete(ctx, v.join("lab", "", "", "")); err != nil {
		t.Fatal(err)
	}
	v.joinCondition("lab-again", v1alpha1.JoinedCondition, "True/Labelled")
	v.labelsAre("lab-sandbox", map[string]string{"fleet.site": "airgap"}, map[string]string{"region": "eu"})

	// The annotations record exactly the labels set.
	var mc2 clusterv1.ManagedCluster
	if err := c.Get(ctx, types.NamespacedName{Name: "us-01"}, &mc2); err != nil {
		t.Fatal(err)
	}
	if got := mc2.Annotations[v1alpha1.JoinLabelsAnnotation]; got != "capability.fleet.umkim.io/edge-gateway,fleet.site" {
		t.Errorf("join-labels annotation %q", got)
	}
	if got := mc2.Annotations[v1alpha1.JoinedByAnnotation]; got != ws+"/us-01" {
		t.Errorf("joined-by annotation %q", got)
	}

	// Deleting a site deletes its edge ConfigMap and un-labels its joins' clusters.
	var airgap v1alpha1.FleetSite
	airgap.Namespace, airgap.Name = ws, "airgap"
	if err := c.Delete(ctx, &airgap); err != nil {
		t.Fatal(err)
	}
	v.joinCondition("lab-again", v1alpha1.JoinedCondition, "False/SiteNotFound")
	v.labelsAre("lab-sandbox", map[string]string{}, map[string]string{"region": "eu"})
	testkit.Eventually(t, converge, "edge ConfigMap of the deleted site gone", func() error {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, types.NamespacedName{Namespace: ws, Name: controller.EdgeConfigMapName("airgap")}, &cm); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	t.Logf("done in %v", time.Since(start))
}

// TestGeneratedRBACSufficesForSites runs the sites and cluster-joins reconcilers as a
// ServiceAccount that holds only the generated ClusterRole (config/rbac/role.yaml) and checks that
// a join labels its cluster, is removed cleanly, and that the site's status and ConfigMap are
// written.
func TestGeneratedRBACSufficesForSites(t *testing.T) {
	const ws, sa, ns = "rbac-sites-ws", "fleet-controller-sites", "kube-system"
	h, c := startHub(t)
	ctx := t.Context()
	if err := demoseed.Seed(ctx, c, ws); err != nil {
		t.Fatal(err)
	}
	cfg := roleConfig(t, h, c, "rbac-sites-test", sa, ns)
	defer runControllers(t, cfg, "sites,cluster-joins")()
	defer cleanJoins(t, c, ws)

	v := siteView{t, c, ws}
	v.create(v.site("hamburg", siteSpec()), v.join("store", "store-0203", "hamburg", "wan", "pos"))
	v.labelsAre("store-0203", map[string]string{"fleet.site": "hamburg", "capability.fleet.umkim.io/pos": "true"}, map[string]string{"region": "apac"})
	v.joinCondition("store", v1alpha1.ReadyCondition, "True/Ready")
	v.siteIs("hamburg", 1, true, map[string]string{"site": "hamburg", "displayName": "Berlin store", "wanPath": "true", "clusters": "store-0203", "ingress": "wan,proxy",
		"ingress.wan.method": "port_forward", "ingress.wan.address": "203.0.113.10", "ingress.wan.http": "30080", "ingress.wan.https": "30443", "ingress.wan.clusters": "store-0203",
		"ingress.proxy.method": "reverse_proxy", "ingress.proxy.address": "edge.berlin.example.com", "ingress.proxy.clusters": ""})
	j := v.join("store", "", "", "")
	if err := c.Delete(ctx, j); err != nil {
		t.Fatal(err)
	}
	v.labelsAre("store-0203", map[string]string{}, map[string]string{"region": "apac"})
	testkit.Eventually(t, converge, "join gone", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(j), j); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// roleConfig binds the generated hub ClusterRole (as name) to ServiceAccount ns/sa and returns a
// configuration that authenticates as it.
func roleConfig(t *testing.T, h *testbed.Hub, c client.Client, name, sa, ns string) *rest.Config {
	t.Helper()
	ctx := t.Context()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	role.Name = name
	if err := c.Create(ctx, &role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(h.Config)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(h.Config)
	cfg.BearerToken = tok.Status.Token
	return cfg
}

// cleanJoins deletes the joins of ws and waits until they are gone, their labels removed by the
// reconciler.
func cleanJoins(t *testing.T, c client.Client, ws string) {
	t.Helper()
	ctx := context.Background()
	if err := c.DeleteAllOf(ctx, &v1alpha1.FleetClusterJoin{}, client.InNamespace(ws)); err != nil {
		t.Errorf("cleaning up joins: %v", err)
		return
	}
	testkit.Eventually(t, converge, "joins of "+ws+" gone", func() error {
		var l v1alpha1.FleetClusterJoinList
		if err := c.List(ctx, &l, client.InNamespace(ws)); err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("%d left, e.g. %s", len(l.Items), l.Items[0].Name)
		}
		return nil
	})
}
