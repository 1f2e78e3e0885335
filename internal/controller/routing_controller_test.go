package controller_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/demoseed"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

const converge = 60 * time.Second

// Push passwords: no work may carry them, except the one of a registry without agent credentials.
const (
	sourcePush   = "push-source-s3cret"
	mirrorPush   = "push-mirror-s3cret"
	fallbackPush = "push-only-s3cret"
)

func route(ws, name string, spec v1alpha1.OCIStorageRouteSpec) *v1alpha1.OCIStorageRoute {
	return &v1alpha1.OCIStorageRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ws}, Spec: spec}
}

func selector(k, v string) []v1alpha1.LabelSelector {
	return []v1alpha1.LabelSelector{{MatchLabels: map[string]string{k: v}}}
}

// seedWorkspace creates the sample fleet bound to ws, three registries and four routes:
// eu (region=eu → mirror-eu, source; 10m), lab (lab-sandbox → legacy), shadowed (region=eu at a
// priority after eu, so it wins nothing) and the default (→ source).
func seedWorkspace(t *testing.T, ctx context.Context, c client.Client, ws string) {
	t.Helper()
	if err := demoseed.Seed(ctx, c, ws); err != nil {
		t.Fatal(err)
	}
	wait := (10 * time.Minute).String()
	for _, o := range []client.Object{
		testkit.RegistrySecret(ws, "source", registrysecret.RoleSource, registrysecret.Registry{Reference: "source.example:5000/fleet",
			Username: "pusher", Password: sourcePush, AgentUsername: "puller", AgentPassword: "pull-source", CACerts: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}),
		testkit.RegistrySecret(ws, "mirror-eu", registrysecret.RoleMirror, registrysecret.Registry{Reference: "mirror.eu.example/fleet",
			Username: "pusher", Password: mirrorPush, AgentUsername: "puller-eu", AgentPassword: "pull-eu", InsecureSkipTLS: true}),
		testkit.RegistrySecret(ws, "legacy", registrysecret.RoleMirror, registrysecret.Registry{Reference: "legacy.example/fleet",
			Username: "legacy-user", Password: fallbackPush, BasicHTTP: true}),
		route(ws, "eu", v1alpha1.OCIStorageRouteSpec{Priority: 10, ClusterSelectors: selector("region", "eu"), Registries: []string{"mirror-eu", "source"}, ReplicationWait: wait}),
		route(ws, "lab", v1alpha1.OCIStorageRouteSpec{Priority: 5, ClusterNames: []string{"lab-sandbox"}, Registries: []string{"legacy"}}),
		route(ws, "shadowed", v1alpha1.OCIStorageRouteSpec{Priority: 50, ClusterSelectors: selector("region", "eu"), Registries: []string{"source"}}),
		route(ws, "fallback", v1alpha1.OCIStorageRouteSpec{Priority: 1000, Default: true, Registries: []string{"source"}}),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// seededWorkspace starts (or reuses) the package's hub and seeds workspace ws on it.
func seededWorkspace(t *testing.T, ws string) (*testbed.Hub, client.Client, hubView) {
	t.Helper()
	h, c := startHub(t)
	seedWorkspace(t, t.Context(), c, ws)
	return h, c, hubView{t, t.Context(), c, ws}
}

type hubView struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	ws  string
}

func (v hubView) route(name string) *v1alpha1.OCIStorageRoute {
	var r v1alpha1.OCIStorageRoute
	if err := v.c.Get(v.ctx, types.NamespacedName{Namespace: v.ws, Name: name}, &r); err != nil {
		v.t.Fatal(err)
	}
	return &r
}

func (v hubView) storage(cluster string) (*v1alpha1.ClusterOCIStorage, error) {
	var s v1alpha1.ClusterOCIStorage
	return &s, v.c.Get(v.ctx, types.NamespacedName{Namespace: v.ws, Name: cluster}, &s)
}

func (v hubView) work(cluster string) (*workv1.ManifestWork, error) {
	var w workv1.ManifestWork
	return &w, v.c.Get(v.ctx, types.NamespacedName{Namespace: cluster, Name: controller.WorkName(v.ws)}, &w)
}

// chain decodes the chain Secret a work carries, checking where it lands on the cluster.
func (v hubView) chain(w *workv1.ManifestWork) ocichain.Chain {
	v.t.Helper()
	var secret corev1.Secret
	found := false
	for _, m := range w.Spec.Workload.Manifests {
		var probe metav1.TypeMeta
		if err := json.Unmarshal(m.Raw, &probe); err != nil {
			v.t.Fatal(err)
		}
		if probe.Kind == "Secret" {
			if err := json.Unmarshal(m.Raw, &secret); err != nil {
				v.t.Fatal(err)
			}
			found = true
		}
	}
	if !found || secret.Namespace != ocichain.Namespace || secret.Name != ocichain.SecretName(v.ws) {
		v.t.Fatalf("work %s/%s carries no Secret %s/%s", w.Namespace, w.Name, ocichain.Namespace, ocichain.SecretName(v.ws))
	}
	ch, err := ocichain.Parse(secret.Data[ocichain.Key])
	if err != nil {
		v.t.Fatalf("work %s/%s: %v", w.Namespace, w.Name, err)
	}
	return ch
}

// converged waits until every route's status describes its current generation.
func (v hubView) converged() {
	v.t.Helper()
	testkit.Eventually(v.t, converge, "route statuses of workspace "+v.ws, func() error {
		var routes v1alpha1.OCIStorageRouteList
		if err := v.c.List(v.ctx, &routes, client.InNamespace(v.ws)); err != nil {
			return err
		}
		for _, r := range routes.Items {
			if r.Status.ObservedGeneration != r.Generation || meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReadyCondition) == nil {
				return fmt.Errorf("route %s: observedGeneration %d of %d", r.Name, r.Status.ObservedGeneration, r.Generation)
			}
		}
		return nil
	})
}

func condition(conds []metav1.Condition, typ string) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return "<none>"
	}
	return string(c.Status) + "/" + c.Reason
}

var seedRoutes = map[string][]string{ // route → clusters it wins
	"eu":       {"eu-01", "eu-02", "eu-staging-01"},
	"lab":      {"lab-sandbox"},
	"fallback": {"store-0201", "store-0203", "us-01", "us-staging-01"},
}

func TestRoutingWorkspace(t *testing.T) {
	const ws = "routing-ws"
	h, c, v := seededWorkspace(t, ws)
	ctx := t.Context()
	stop := runManager(t, h)
	v.converged()

	t.Run("route status", func(t *testing.T) {
		for name, clusters := range seedRoutes {
			r := v.route(name)
			if got := condition(r.Status.Conditions, v1alpha1.ReadyCondition); got != "True/Ready" {
				t.Errorf("route %s: Ready %s, want True/Ready", name, got)
			}
			if r.Status.MatchedClusters != int32(len(clusters)) || join(r.Status.MatchedClusterSample) != join(clusters) {
				t.Errorf("route %s: matched %d %v, want %v", name, r.Status.MatchedClusters, r.Status.MatchedClusterSample, clusters)
			}
		}
		sh := v.route("shadowed")
		if got := condition(sh.Status.Conditions, v1alpha1.ShadowedCondition); got != "True/ShadowedByEarlierRoutes" {
			t.Errorf("route shadowed: Shadowed %s", got)
		}
		if msg := meta.FindStatusCondition(sh.Status.Conditions, v1alpha1.ShadowedCondition).Message; !strings.Contains(msg, `"eu"`) {
			t.Errorf("route shadowed: message %q does not name the route that wins", msg)
		}
		if sh.Status.MatchedClusters != 0 {
			t.Errorf("route shadowed matched %d", sh.Status.MatchedClusters)
		}
		lab := v.route("lab")
		cond := meta.FindStatusCondition(lab.Status.Conditions, v1alpha1.AgentCredentialsCondition)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonNoAgentCredentials || !strings.Contains(cond.Message, `"legacy"`) {
			t.Errorf("route lab: AgentCredentials %+v, want False/%s naming legacy", cond, v1alpha1.ReasonNoAgentCredentials)
		}
		if got := condition(v.route("eu").Status.Conditions, v1alpha1.AgentCredentialsCondition); got != "True/AgentCredentialsOnly" {
			t.Errorf("route eu: AgentCredentials %s", got)
		}
	})

	t.Run("per-cluster objects and works", func(t *testing.T) {
		for routeName, clusters := range seedRoutes {
			for _, cl := range clusters {
				var st *v1alpha1.ClusterOCIStorage
				testkit.Eventually(t, converge, "ClusterOCIStorage "+cl, func() (err error) { st, err = v.storage(cl); return err })
				// No work agent runs here: the chain is written on the hub, and not applied.
				if st.Status.Route != routeName || condition(st.Status.Conditions, v1alpha1.WrittenCondition) != "True/Written" ||
					condition(st.Status.Conditions, v1alpha1.ReadyCondition) != "False/WorkPending" {
					t.Errorf("cluster %s: route %q written %s ready %s, want %q True/Written False/WorkPending", cl, st.Status.Route,
						condition(st.Status.Conditions, v1alpha1.WrittenCondition), condition(st.Status.Conditions, v1alpha1.ReadyCondition), routeName)
				}
				w, err := v.work(cl)
				if err != nil {
					t.Fatalf("cluster %s: %v", cl, err)
				}
				if w.Labels[hub.WorkspaceLabel] != ws {
					t.Errorf("work of %s labelled %v", cl, w.Labels)
				}
				ch := v.chain(w)
				var names []string
				for _, r := range ch.Registries {
					names = append(names, r.Name)
				}
				if ch.Route != routeName || join(names) != join(st.Status.Chain) {
					t.Errorf("cluster %s: work carries route %q chain %v; status says %v", cl, ch.Route, names, st.Status.Chain)
				}
				raw, _ := json.Marshal(w)
				for _, secret := range []string{sourcePush, mirrorPush, base64.StdEncoding.EncodeToString([]byte(sourcePush))} {
					if strings.Contains(string(raw), secret) || strings.Contains(decodedData(w), secret) {
						t.Errorf("work of %s carries a push password", cl)
					}
				}
			}
		}
		eu, _ := v.work("eu-01")
		ch := v.chain(eu)
		if len(ch.Registries) != 2 || ch.Registries[0].Name != "mirror-eu" || ch.Registries[0].AgentUsername != "puller-eu" ||
			ch.Registries[0].AgentPassword != "pull-eu" || !ch.Registries[0].InsecureSkipTLS || ch.Registries[0].Username != "" ||
			ch.Registries[1].Reference != "source.example:5000/fleet" || !strings.Contains(ch.Registries[1].CACerts, "MIIB") || ch.ReplicationWait != "10m0s" {
			t.Errorf("eu-01's chain: %+v", ch)
		}
		if st, _ := v.storage("eu-01"); st.Status.MatchedBy != "spec.clusterSelectors[0]" || st.Status.ReplicationWait != "10m0s" {
			t.Errorf("eu-01: matchedBy %q wait %q", st.Status.MatchedBy, st.Status.ReplicationWait)
		}
		lab, _ := v.work("lab-sandbox")
		if r := v.chain(lab).Registries[0]; r.Username != "" || r.Password != "" || r.AgentUsername != "" || !r.BasicHTTP || r.Reference != "legacy.example/fleet" {
			t.Errorf("lab-sandbox: a registry with push credentials only is delivered without credentials, got %+v", r)
		}
	})

	t.Run("push credentials reach clusters only when the registry opts in", func(t *testing.T) {
		testkit.Update(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "legacy"}}, func(s *corev1.Secret) {
			s.Data[registrysecret.KeyAgentUsesPushCredentials] = []byte("true")
		})
		testkit.Eventually(t, converge, "lab-sandbox's chain carries the push credentials", func() error {
			w, err := v.work("lab-sandbox")
			if err != nil {
				return err
			}
			if r := v.chain(w).Registries[0]; r.Username != "legacy-user" || r.Password != fallbackPush {
				return fmt.Errorf("registry %s: user %q", r.Name, r.Username)
			}
			if got := condition(v.route("lab").Status.Conditions, v1alpha1.AgentCredentialsCondition); got != "False/PushCredentialsDelivered" {
				return fmt.Errorf("route lab: AgentCredentials %s", got)
			}
			return nil
		})
	})

	t.Run("a registry change rewrites only the works whose chain names it", func(t *testing.T) {
		before := workVersions(t, v)
		var s corev1.Secret
		if err := c.Get(ctx, types.NamespacedName{Namespace: ws, Name: "mirror-eu"}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data[registrysecret.KeyAgentPassword] = []byte("pull-eu-rotated")
		if err := c.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, converge, "the eu clusters' chains carry the rotated password", func() error {
			for _, cl := range seedRoutes["eu"] {
				w, err := v.work(cl)
				if err != nil {
					return err
				}
				if got := v.chain(w).Registries[0].AgentPassword; got != "pull-eu-rotated" {
					return fmt.Errorf("%s: agent password %s", cl, got)
				}
			}
			return nil
		})
		time.Sleep(time.Second) // a work rewritten by mistake would be by now
		if changed := rewritten(t, v, before); join(changed) != join(seedRoutes["eu"]) {
			t.Errorf("works rewritten: %v, want exactly those of route eu %v", changed, seedRoutes["eu"])
		}
	})

	t.Run("priority change moves exactly the affected clusters", func(t *testing.T) {
		before := workVersions(t, v)
		w0, s0 := writes("manifestwork", ""), writes("clusterocistorage", "")
		testkit.Update(t, c, v.route("shadowed"), func(r *v1alpha1.OCIStorageRoute) { r.Spec.Priority = 7 }) // after lab (5), before eu (10)
		v.converged()
		testkit.Eventually(t, converge, "eu clusters on route shadowed", func() error {
			for _, cl := range seedRoutes["eu"] {
				if st, err := v.storage(cl); err != nil || st.Status.Route != "shadowed" {
					return fmt.Errorf("%s still on %q", cl, st.Status.Route)
				}
			}
			return nil
		})
		if changed := rewritten(t, v, before); join(changed) != join(seedRoutes["eu"]) {
			t.Errorf("works rewritten: %v, want exactly %v", changed, seedRoutes["eu"])
		}
		if dw, ds := writes("manifestwork", "")-w0, writes("clusterocistorage", "")-s0; dw != 3 || ds != 3 {
			t.Errorf("writes for 3 moved clusters: %v works, %v ClusterOCIStorages; want 3 and 3", dw, ds)
		}
		if got := condition(v.route("eu").Status.Conditions, v1alpha1.ShadowedCondition); got != "True/ShadowedByEarlierRoutes" {
			t.Errorf("route eu after the change: Shadowed %s", got)
		}
	})

	t.Run("deleted registry keeps the last good chain", func(t *testing.T) {
		before := workVersions(t, v)
		if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "legacy"}}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, converge, "route lab RegistryNotFound", func() error {
			r := v.route("lab")
			if got := condition(r.Status.Conditions, v1alpha1.RegistriesResolvedCondition); got != "False/RegistryNotFound" {
				return fmt.Errorf("RegistriesResolved %s", got)
			}
			if got := condition(r.Status.Conditions, v1alpha1.ReadyCondition); got != "False/RegistryNotFound" {
				return fmt.Errorf("Ready %s", got)
			}
			return nil
		})
		testkit.Eventually(t, converge, "a Warning event on route lab", func() error {
			var evs eventsv1.EventList
			if err := c.List(ctx, &evs, client.InNamespace(ws)); err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Regarding.Name == "lab" && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonRegistryNotFound && strings.Contains(e.Note, `"legacy"`) {
					return nil
				}
			}
			return fmt.Errorf("none among %d events", len(evs.Items))
		})
		st, _ := v.storage("lab-sandbox")
		if condition(st.Status.Conditions, v1alpha1.ReadyCondition) != "False/LastGoodChainKept" || join(st.Status.Chain) != "legacy" {
			t.Errorf("lab-sandbox: %s chain %v", condition(st.Status.Conditions, v1alpha1.ReadyCondition), st.Status.Chain)
		}
		if after := workVersions(t, v); after["lab-sandbox"] != before["lab-sandbox"] {
			t.Errorf("lab-sandbox's work was rewritten after its registry was deleted")
		}
		if w, err := v.work("lab-sandbox"); err != nil || v.chain(w).Registries[0].Name != "legacy" {
			t.Errorf("lab-sandbox's last good chain is gone: %v", err)
		}
	})

	t.Run("cluster leaving the workspace loses its work and object", func(t *testing.T) {
		if err := c.Delete(ctx, &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "airgap-stores"}}); err != nil {
			t.Fatal(err)
		}
		for _, cl := range []string{"store-0201", "store-0203"} {
			testkit.Eventually(t, converge, cl+" removed", func() error {
				if _, err := v.work(cl); !apierrors.IsNotFound(err) {
					return fmt.Errorf("work: %v", err)
				}
				if _, err := v.storage(cl); !apierrors.IsNotFound(err) {
					return fmt.Errorf("ClusterOCIStorage: %v", err)
				}
				return nil
			})
		}
		v.converged()
		if r := v.route("fallback"); r.Status.MatchedClusters != 2 {
			t.Errorf("route fallback matches %d clusters, want 2 (us-01, us-staging-01)", r.Status.MatchedClusters)
		}
	})

	t.Run("deleting a route moves its clusters to their next match", func(t *testing.T) {
		if err := c.Delete(ctx, v.route("lab")); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, converge, "lab-sandbox on route shadowed", func() error {
			w, err := v.work("lab-sandbox")
			if err != nil {
				return err
			}
			if ch := v.chain(w); ch.Route != "shadowed" || ch.Registries[0].Name != "source" {
				return fmt.Errorf("work carries route %q", ch.Route)
			}
			if st, err := v.storage("lab-sandbox"); err != nil || st.Status.Route != "shadowed" || condition(st.Status.Conditions, v1alpha1.WrittenCondition) != "True/Written" {
				return fmt.Errorf("ClusterOCIStorage: %+v %v", st.Status, err)
			}
			return nil
		})
	})

	t.Run("restarted controller writes nothing", func(t *testing.T) {
		stop()
		before := writes("", "")
		reconciles := testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "routing"})
		runManager(t, h)
		testkit.Eventually(t, converge, "a reconcile of the restarted controller", func() error {
			if testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "routing"}) <= reconciles {
				return fmt.Errorf("no reconcile yet")
			}
			return nil
		})
		time.Sleep(2 * time.Second) // let every queued workspace reconcile
		if got := writes("", "") - before; got != 0 {
			t.Errorf("the restarted controller wrote %v times to a converged hub", got)
		}
	})
}

// workVersions maps each cluster of the workspace's works to the work's resourceVersion.
func workVersions(t *testing.T, v hubView) map[string]string {
	t.Helper()
	var works workv1.ManifestWorkList
	if err := v.c.List(v.ctx, &works, client.MatchingLabels{hub.WorkspaceLabel: v.ws}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, w := range works.Items {
		out[w.Namespace] = w.ResourceVersion
	}
	return out
}

// rewritten lists, sorted, the clusters whose work's resourceVersion differs from before.
func rewritten(t *testing.T, v hubView, before map[string]string) []string {
	var changed []string
	for cl, rv := range workVersions(t, v) {
		if before[cl] != rv {
			changed = append(changed, cl)
		}
	}
	slices.Sort(changed)
	return changed
}

// decodedData returns the decoded values of every Secret a work carries, concatenated.
func decodedData(w *workv1.ManifestWork) string {
	var b strings.Builder
	for _, m := range w.Spec.Workload.Manifests {
		var s corev1.Secret
		if json.Unmarshal(m.Raw, &s) == nil {
			for _, v := range s.Data {
				b.Write(v)
			}
		}
	}
	return b.String()
}
