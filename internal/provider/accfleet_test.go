package provider

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// accFleet is a test's workspace on the suite's hub with one workload cluster "edge" and the
// real parts between them: a registry (the workspace's source registry "source", with push and
// agent credentials), a route and a join for the cluster, the cluster's own kube-apiserver with
// OCM's work agent, the named hub reconcilers, and `fleet-controller agent`, which runs as its
// ServiceAccount with the chart's roles only.
type accFleet struct {
	ws, cluster string
	fixtures    *hubFixtures
	hub         client.Client
	registry    *testbed.Registry
	spoke       *testbed.Cluster
	logs        *syncBuffer
}

// startAccFleet starts an accFleet whose hub runs the reconcilers named and whose agent has the
// test's options, each changed by opts; all of it stops when the test ends.
func startAccFleet(t *testing.T, reconcilers []string, opts ...func(*agent.Options)) *accFleet {
	t.Helper()
	return startAccFleetWith(t, controller.Options{}, reconcilers, opts...)
}

// startAccFleetWith is startAccFleet with the hub reconcilers' options co.
func startAccFleetWith(t *testing.T, co controller.Options, reconcilers []string, opts ...func(*agent.Options)) *accFleet {
	t.Helper()
	begin := time.Now()
	ws := testWorkspace(t, testHub(t))
	fl := &accFleet{ws: ws, fixtures: newHubFixtures(t, ws), hub: accHubClient(t)}
	fl.fixtures.ClusterSet("fleet")
	fl.cluster = fl.fixtures.Cluster("edge", "fleet", map[string]string{"region": "eu"})
	fl.registry = testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: "push-s3cret", Users: map[string]string{"puller": "pull-s3cret"}})
	secret := testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{
		Reference: fl.registry.Reference("fleet"), BasicHTTP: true, Username: fl.registry.Username, Password: fl.registry.Password,
		AgentUsername: "puller", AgentPassword: "pull-s3cret",
	})
	if err := fl.hub.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	fl.fixtures.Route("edge", map[string]any{"priority": 10, "clusterNames": []any{fl.cluster}, "registries": []any{"source"}})
	newSiteHub(t, ws).create("FleetClusterJoin", "edge", false, map[string]any{"cluster": fl.cluster, "site": "lab"})
	fl.spoke = joinAccFleet(t, fl.hub, fl.cluster)
	fl.logs = runHubReconcilersWith(t, []string{ws, fl.cluster}, co, reconcilers...)
	o := agent.Options{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, CacheDir: t.TempDir(),
		AttemptTimeout: 10 * time.Second, RetryFailed: 2 * time.Second, Backoff: puller.Backoff{Initial: 300 * time.Millisecond, Max: time.Second},
	}
	for _, opt := range opts {
		opt(&o)
	}
	am, err := agent.NewManager(fl.spoke.AgentConfig, o)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, am)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log:\n%s", fl.spoke.AgentLog())
		}
	})
	t.Logf("registry, workload cluster %s, reconcilers %v and agent up in %v", fl.cluster, reconcilers, time.Since(begin).Round(time.Millisecond))
	return fl
}

// accHubClient is a client of the suite's hub with the scheme of the hub controller.
func accHubClient(t *testing.T) client.Client {
	t.Helper()
	hc, err := client.New(testRESTConfig(t), client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// joinAccFleet starts a workload cluster (its own kube-apiserver and etcd, OCM's real work
// agent) and registers it with the suite's hub as the ManagedCluster cluster, which the test's
// fixtures created; StartFleet leaves a hub it is given running. Once the fleet has stopped
// (cleanups run last first), the cluster's namespace goes, its works released from the stopped
// agent's finalizers.
func joinAccFleet(t *testing.T, hc client.Client, cluster string) *testbed.Cluster {
	t.Helper()
	t.Cleanup(func() { removeClusterNamespace(t, hc, cluster) })
	fleet := testbed.StartFleetT(t, testbed.FleetOptions{ClusterNames: []string{cluster}, StatusSyncInterval: time.Second,
		Hub: &testbed.Hub{Kubeconfig: os.Getenv("KUBE_CONFIG_PATH"), Config: testRESTConfig(t)}})
	return fleet.Cluster(cluster)
}

// runHubReconcilers runs the named reconcilers of `fleet-controller hub` in-process until the
// test ends, their cache narrowed to namespaces (the test's workspace and cluster namespaces)
// so that they leave the other tests' workspaces alone. It returns their log, shown if the test
// fails.
func runHubReconcilers(t *testing.T, namespaces []string, names ...string) *syncBuffer {
	t.Helper()
	return runHubReconcilersWith(t, namespaces, controller.Options{}, names...)
}

// runHubReconcilersWith is runHubReconcilers with the reconcilers' options co.
func runHubReconcilersWith(t *testing.T, namespaces []string, co controller.Options, names ...string) *syncBuffer {
	t.Helper()
	logs := &syncBuffer{}
	opts := controller.CacheOptions()
	opts.DefaultNamespaces = map[string]cache.Config{}
	for _, ns := range namespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
	}
	mgr, err := ctrl.NewManager(testRESTConfig(t), ctrl.Options{
		Scheme: controller.Scheme(), Cache: opts,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:     zap.New(zap.WriteTo(logs)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controller.Setup(mgr, names, co); err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, mgr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", logs.String())
		}
	})
	return logs
}

// removeClusterNamespace deletes a test cluster's namespace on the shared hub once its agent is
// gone, releasing the works the agent can no longer finalize.
func removeClusterNamespace(t *testing.T, c client.Client, ns string) {
	ctx := context.Background()
	var works workv1.ManifestWorkList
	if err := c.List(ctx, &works, client.InNamespace(ns)); err != nil {
		t.Errorf("clean up the works of %s: %v", ns, err)
		return
	}
	for i := range works.Items {
		w := &works.Items[i]
		if len(w.Finalizers) == 0 {
			continue
		}
		patch := client.MergeFrom(w.DeepCopy())
		w.Finalizers = nil
		if err := c.Patch(ctx, w, patch); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("clean up work %s/%s: %v", ns, w.Name, err)
		}
	}
	err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsNotFound(err) && !errors.Is(err, context.Canceled) {
		t.Errorf("clean up namespace %s: %v", ns, err)
	}
}
