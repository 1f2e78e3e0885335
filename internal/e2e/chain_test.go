package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

const converge = 90 * time.Second

// Push passwords: a workload cluster must never receive them.
const (
	sourcePush = "push-source-s3cret"
	mirrorPush = "push-mirror-s3cret"
)

// TestMain discards the controllers' logs: the tests assert on objects. FLEET_E2E_LOG=<file>
// writes them to the file instead, to debug a failure.
func TestMain(m *testing.M) {
	log := logr.Discard()
	if path := os.Getenv("FLEET_E2E_LOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			panic(err)
		}
		log = zap.New(zap.WriteTo(f), zap.UseDevMode(true))
	}
	ctrl.SetLogger(log)
	os.Exit(m.Run())
}

// TestChainDeliveredToClusters runs the hub controller against a fleet of two demo clusters in
// different routes, eu-01 (region=eu → route eu) and us-01 (→ the default route), and checks what
// their work agents put on each cluster: the chain Secret, its route and registry order, agent
// credentials only; then that route changes on the hub reach the clusters.
func TestChainDeliveredToClusters(t *testing.T) {
	ctx := t.Context()
	const ws = demoseed.Workspace
	begin := time.Now()

	// The demo fleet's hub objects go first, so that the fleet keeps the seed's ManagedClusters
	// (labels, cluster sets) for the clusters it starts; the other seed clusters have no agent.
	wait := (10 * time.Minute).String()
	seed := func(ctx context.Context, hub *testbed.Hub) error {
		c, err := client.New(hub.Config, client.Options{Scheme: controller.Scheme()})
		if err != nil {
			return err
		}
		if err := demoseed.Seed(ctx, c, ws); err != nil {
			return err
		}
		for _, o := range []client.Object{
			testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example:5000/fleet",
				Username: "pusher", Password: sourcePush, AgentUsername: "puller", AgentPassword: "pull-source",
				CACerts: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}),
			testkit.RegistrySecret(ws, "mirror-eu", registrysecret.RoleMirror, registrysecret.Registry{Reference: "mirror.eu.example/fleet",
				Username: "pusher", Password: mirrorPush, AgentUsername: "puller-eu", AgentPassword: "pull-eu", InsecureSkipTLS: true}),
			route(ws, "eu", v1alpha1.OCIStorageRouteSpec{Priority: 10, Registries: []string{"mirror-eu", "source"}, ReplicationWait: wait,
				ClusterSelectors: []v1alpha1.LabelSelector{{MatchLabels: map[string]string{"region": "eu"}}}}),
			route(ws, "fallback", v1alpha1.OCIStorageRouteSpec{Priority: 1000, Default: true, Registries: []string{"source"}}),
		} {
			if err := c.Create(ctx, o); err != nil {
				return err
			}
		}
		return nil
	}
	f := testbed.StartFleetT(t, testbed.FleetOptions{ClusterNames: []string{"eu-01", "us-01"}, StatusSyncInterval: 2 * time.Second, Prepare: seed})
	t.Logf("hub and fleet of %d clusters up in %v", len(f.Clusters), time.Since(begin).Round(time.Millisecond))
	hub := f.Hub
	c, err := client.New(hub.Config, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, hub, "routing")
	spokes := map[string]client.Client{}
	for _, cl := range f.Clusters {
		if spokes[cl.Name], err = cl.Client(); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(t *testing.T, cluster string, want chainWant) {
		t.Helper()
		start := time.Now()
		var last error
		deadline := start.Add(converge)
		for {
			if last = checkSpoke(ctx, spokes[cluster], ws, want); last == nil {
				t.Logf("%s: chain of route %s %v on the cluster after %v", cluster, want.route, want.registries, time.Since(start).Round(time.Millisecond))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster %s: chain not delivered within %v: %v%s", cluster, converge, last, f.Cluster(cluster).AgentLog())
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	euWant := chainWant{route: "eu", registries: []string{"mirror-eu", "source"}, wait: "10m0s"}
	usWant := chainWant{route: "fallback", registries: []string{"source"}}
	t.Run("each cluster gets the chain of its route", func(t *testing.T) {
		expect(t, "eu-01", euWant)
		expect(t, "us-01", usWant)
	})

	t.Run("the agents report the works applied to the hub", func(t *testing.T) {
		for _, cl := range f.Clusters {
			var w workv1.ManifestWork
			deadline := time.Now().Add(converge)
			for {
				err := c.Get(ctx, types.NamespacedName{Namespace: cl.Name, Name: controller.WorkName(ws)}, &w)
				if err == nil && meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkApplied) &&
					meta.IsStatusConditionTrue(w.Status.Conditions, workv1.WorkAvailable) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("work %s/%s: not Applied and Available within %v: %v %+v", cl.Name, controller.WorkName(ws), converge, err, w.Status.Conditions)
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	})

	t.Run("a route's new registry order reaches its clusters only", func(t *testing.T) {
		updateRoute(t, c, ws, "eu", func(r *v1alpha1.OCIStorageRoute) { r.Spec.Registries = []string{"source", "mirror-eu"} })
		euWant.registries = []string{"source", "mirror-eu"}
		expect(t, "eu-01", euWant)
		if err := checkSpoke(ctx, spokes["us-01"], ws, usWant); err != nil {
			t.Errorf("us-01 changed: %v", err)
		}
	})

	t.Run("a new route that wins a cluster moves it", func(t *testing.T) {
		if err := c.Create(ctx, route(ws, "us", v1alpha1.OCIStorageRouteSpec{Priority: 5, ClusterNames: []string{"us-01"},
			Registries: []string{"mirror-eu", "source"}})); err != nil {
			t.Fatal(err)
		}
		expect(t, "us-01", chainWant{route: "us", registries: []string{"mirror-eu", "source"}})
		if err := checkSpoke(ctx, spokes["eu-01"], ws, euWant); err != nil {
			t.Errorf("eu-01 changed: %v", err)
		}
	})

	t.Run("a change made while a cluster's agent is down reaches it when the agent is back", func(t *testing.T) {
		eu := f.Cluster("eu-01")
		if err := eu.StopAgent(); err != nil {
			t.Fatal(err)
		}
		updateRoute(t, c, ws, "eu", func(r *v1alpha1.OCIStorageRoute) {
			r.Spec.ReplicationWait = (5 * time.Minute).String()
		})
		// The hub's work changes; the cluster, without its agent, does not.
		deadline := time.Now().Add(converge)
		for {
			ch, err := workChain(ctx, c, "eu-01", ws)
			if err == nil && ch.ReplicationWait == "5m0s" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the hub's work for eu-01 does not carry the new wait within %v: %+v, %v", converge, ch, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
		time.Sleep(2 * time.Second)
		if err := checkSpoke(ctx, spokes["eu-01"], ws, euWant); err != nil {
			t.Fatalf("eu-01 changed without its agent: %v", err)
		}
		if err := eu.StartAgent(ctx); err != nil {
			t.Fatal(err)
		}
		euWant.wait = "5m0s"
		expect(t, "eu-01", euWant)
	})
}

type chainWant struct {
	route      string
	registries []string
	wait       string
}

// checkSpoke checks the chain Secret of workspace ws on a workload cluster.
func checkSpoke(ctx context.Context, spoke client.Client, ws string, want chainWant) error {
	var s corev1.Secret
	if err := spoke.Get(ctx, types.NamespacedName{Namespace: ocichain.Namespace, Name: ocichain.SecretName(ws)}, &s); err != nil {
		return err
	}
	// No push password anywhere in the Secret: data, labels, annotations (the agent's too).
	raw, err := json.Marshal(&s)
	if err != nil {
		return err
	}
	for _, secret := range []string{sourcePush, mirrorPush} {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			if strings.Contains(string(raw), form) || strings.Contains(string(s.Data[ocichain.Key]), secret) {
				return fmt.Errorf("FATAL: Secret %s/%s carries a push password", s.Namespace, s.Name)
			}
		}
	}
	if s.Labels[hub.WorkspaceLabel] != ws {
		return fmt.Errorf("Secret labelled %v", s.Labels)
	}
	ch, err := ocichain.Parse(s.Data[ocichain.Key])
	if err != nil {
		return fmt.Errorf("%s: %w", ocichain.Key, err)
	}
	var names []string
	for _, r := range ch.Registries {
		names = append(names, r.Name)
		if r.AgentUsername == "" || r.AgentPassword == "" {
			return fmt.Errorf("registry %s without agent credentials", r.Name)
		}
		if r.Username != "" || r.Password != "" {
			return fmt.Errorf("registry %s with push credentials", r.Name)
		}
	}
	if ch.Workspace != ws || ch.Route != want.route || !slices.Equal(names, want.registries) || !sameWait(ch.ReplicationWait, want.wait) {
		return fmt.Errorf("chain of workspace %q route %q registries %v wait %q, want %q %q %v %q",
			ch.Workspace, ch.Route, names, ch.ReplicationWait, ws, want.route, want.registries, want.wait)
	}
	for _, r := range ch.Registries {
		var wantUser, wantPass string
		switch r.Name {
		case "source":
			wantUser, wantPass = "puller", "pull-source"
			if r.Reference != "source.example:5000/fleet" || !strings.Contains(r.CACerts, "MIIB") {
				return fmt.Errorf("registry source: %q, CA %q", r.Reference, r.CACerts)
			}
		case "mirror-eu":
			wantUser, wantPass = "puller-eu", "pull-eu"
			if r.Reference != "mirror.eu.example/fleet" || !r.InsecureSkipTLS {
				return fmt.Errorf("registry mirror-eu: %q, insecureSkipTLS %v", r.Reference, r.InsecureSkipTLS)
			}
		}
		if r.AgentUsername != wantUser || string(r.AgentPassword) != wantPass {
			return fmt.Errorf("registry %s: agent credentials of %q", r.Name, r.AgentUsername)
		}
	}
	return nil
}

// workChain decodes the chain that the hub's ManifestWork for cluster carries.
func workChain(ctx context.Context, c client.Client, cluster, ws string) (ocichain.Chain, error) {
	var w workv1.ManifestWork
	if err := c.Get(ctx, types.NamespacedName{Namespace: cluster, Name: controller.WorkName(ws)}, &w); err != nil {
		return ocichain.Chain{}, err
	}
	for _, m := range w.Spec.Workload.Manifests {
		var s corev1.Secret
		if err := json.Unmarshal(m.Raw, &s); err != nil {
			return ocichain.Chain{}, err
		}
		if s.Kind == "Secret" {
			return ocichain.Parse(s.Data[ocichain.Key])
		}
	}
	return ocichain.Chain{}, fmt.Errorf("work %s/%s carries no Secret", w.Namespace, w.Name)
}

// sameWait compares replication waits, taking no wait and "0s" for the same.
func sameWait(got, want string) bool {
	zero := func(s string) bool { return s == "" || s == "0s" }
	return got == want || zero(got) && zero(want)
}

func route(ws, name string, spec v1alpha1.OCIStorageRouteSpec) *v1alpha1.OCIStorageRoute {
	return &v1alpha1.OCIStorageRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ws}, Spec: spec}
}

func updateRoute(t *testing.T, c client.Client, ws, name string, change func(*v1alpha1.OCIStorageRoute)) {
	t.Helper()
	testkit.Update(t, c, &v1alpha1.OCIStorageRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name}}, change)
}

// runManager runs the named reconcilers of fleet-controller hub on h, in-process, until t ends.
func runManager(t testing.TB, h *testbed.Hub, controllers string) {
	t.Helper()
	mgr, err := controller.NewHubManager(h.Config, controller.HubOptions{
		Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"}, Controllers: controllers, QPS: 500, Burst: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, mgr)
}
