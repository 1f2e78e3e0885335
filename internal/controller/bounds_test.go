package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestRouteThatCannotDecodeStopsNothing writes a route whose replicationWait no duration can hold
// ("3000000h" overflows time.Duration), as a hub whose CRD predates the bound stores it. Such a
// route once made the controller's route list undecodable: no route of any workspace changed any
// more. Now the bad route is marked (SpecValid=False, InvalidSpec naming the field, and an
// Event) while the routes of every workspace stay Ready and new ones become Ready.
func TestRouteThatCannotDecodeStopsNothing(t *testing.T) {
	const goodWS, badWS, laterWS = "bounds-good", "bounds-bad", "bounds-later"
	h, c, good := seededWorkspace(t, goodWS)
	ctx := t.Context()
	bad := hubView{t, ctx, c, badWS}
	seedWorkspace(t, ctx, c, badWS)
	runManager(t, h)
	good.converged()
	bad.converged()

	overflowing := route(badWS, "overflow", v1alpha1.OCIStorageRouteSpec{Priority: 7, ClusterNames: []string{"us-01"},
		Registries: []string{"source"}, ReplicationWait: "3000000h"})

	// The CRD refuses it.
	if err := c.Create(ctx, overflowing.DeepCopy()); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicationWait") {
		t.Fatalf("creating a route with replicationWait 3000000h: %v, want Invalid naming spec.replicationWait", err)
	}

	// Under a CRD without the bound, it is stored.
	restore := testkit.LoosenCRD(t, c, "ocistorageroutes."+v1alpha1.GroupVersion.Group, "replicationWait")
	// Written as unstructured: a typed client would decode the answer, which is what failed.
	raw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "OCIStorageRoute",
		"metadata": map[string]any{"name": overflowing.Name, "namespace": badWS},
		"spec":     map[string]any{"priority": int64(7), "clusterNames": []any{"us-01"}, "registries": []any{"source"}, "replicationWait": "3000000h"},
	}}
	testkit.Eventually(t, converge, "the loosened CRD to store the overflowing route", func() error {
		return c.Create(ctx, raw.DeepCopy())
	})
	restore()

	// The bad route is marked, naming the field.
	testkit.Eventually(t, converge, "route overflow marked SpecValid=False", func() error {
		r := bad.route("overflow")
		cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.SpecValidCondition)
		if cond == nil || cond.Status != "False" || cond.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(cond.Message, "spec.replicationWait") {
			return fmt.Errorf("SpecValid %+v, want False/InvalidSpec naming spec.replicationWait", cond)
		}
		if got := condition(r.Status.Conditions, v1alpha1.ReadyCondition); got != "False/InvalidSpec" {
			return fmt.Errorf("Ready %s, want False/InvalidSpec", got)
		}
		return nil
	})
	testkit.Eventually(t, converge, "an InvalidSpec Event on route overflow", func() error {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(badWS)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "overflow" && e.Reason == v1alpha1.ReasonInvalidSpec && strings.Contains(e.Note, "spec.replicationWait") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(evs.Items))
	})

	// The other routes, of its workspace and of the others, stay Ready.
	for _, v := range []hubView{good, bad} {
		for name := range seedRoutes {
			if got := condition(v.route(name).Status.Conditions, v1alpha1.ReadyCondition); got != "True/Ready" {
				t.Errorf("workspace %s route %s: Ready %s, want True/Ready", v.ws, name, got)
			}
		}
	}

	// New routes, in an existing workspace and in a new one, become Ready.
	if err := c.Create(ctx, route(goodWS, "us", v1alpha1.OCIStorageRouteSpec{Priority: 3, ClusterNames: []string{"us-01"}, Registries: []string{"source"}, ReplicationWait: "24h"})); err != nil {
		t.Fatal(err)
	}
	later := hubView{t, ctx, c, laterWS}
	seedWorkspace(t, ctx, c, laterWS)
	for _, tc := range []struct {
		v    hubView
		name string
	}{{good, "us"}, {later, "eu"}, {later, "fallback"}} {
		testkit.Eventually(t, converge, fmt.Sprintf("route %s/%s Ready", tc.v.ws, tc.name), func() error {
			if got := condition(tc.v.route(tc.name).Status.Conditions, v1alpha1.ReadyCondition); got != "True/Ready" {
				return fmt.Errorf("Ready %s", got)
			}
			return nil
		})
	}
	testkit.Eventually(t, converge, "cluster us-01 of "+goodWS+" on route us", func() error {
		st, err := good.storage("us-01")
		if err == nil && st.Status.Route != "us" {
			err = fmt.Errorf("route %q", st.Status.Route)
		}
		return err
	})
}

// bigPEM is a CA bundle of about n bytes: certificates of filler, as a large corporate bundle.
func bigPEM(n int) string {
	var b strings.Builder
	line := strings.Repeat("A", 64) + "\n"
	for b.Len() < n {
		b.WriteString("-----BEGIN CERTIFICATE-----\n")
		for range 60 {
			b.WriteString(line)
		}
		b.WriteString("-----END CERTIFICATE-----\n")
	}
	return b.String()
}

// TestChainOverWorkBudget gives two registries of a chain CA bundles of 200 KiB each: the chain
// work would be over the 450 KiB budget (OCM's limit is 500 KiB), so the controller writes
// nothing for that route's clusters, which keep the chain delivered before, and says
// WorkTooLarge naming both bundles; a route whose chain holds one of them stays delivered.
func TestChainOverWorkBudget(t *testing.T) {
	const ws = "bounds-ca"
	h, c, v := seededWorkspace(t, ws)
	ctx := t.Context()
	runManager(t, h)
	v.converged()
	bundle := bigPEM(200 << 10)
	setCA := func(name string) {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: ws, Name: name}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data[registrysecret.KeyCACerts] = []byte(bundle)
		if err := c.Update(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	// One large bundle in eu's chain is under the budget: delivered.
	setCA("source")
	var before *workv1.ManifestWork
	testkit.Eventually(t, converge, "eu-01's chain carries source's large bundle", func() (err error) {
		if before, err = v.work("eu-01"); err == nil {
			if ch := v.chain(before); len(ch.Registries) != 2 || ch.Registries[1].CACerts != bundle {
				err = fmt.Errorf("not yet")
			}
		}
		return err
	})
	// Two are over it.
	setCA("mirror-eu")

	testkit.Eventually(t, converge, "route eu WorkTooLarge", func() error {
		r := v.route("eu")
		cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.WrittenCondition)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonWorkTooLarge {
			return fmt.Errorf("Written %+v", cond)
		}
		for _, want := range []string{`registry "mirror-eu"'s CA bundle`, `registry "source"'s CA bundle`, "450 KiB", "500 KiB", "3 clusters"} {
			if !strings.Contains(cond.Message, want) && !(want == "3 clusters" && strings.Contains(cond.Message, "3 of 3 clusters")) {
				return fmt.Errorf("Written message %q lacks %q", cond.Message, want)
			}
		}
		if got := condition(r.Status.Conditions, v1alpha1.ReadyCondition); got != "False/"+v1alpha1.ReasonWorkTooLarge {
			return fmt.Errorf("Ready %s", got)
		}
		return nil
	})
	for _, cl := range seedRoutes["eu"] {
		testkit.Eventually(t, converge, "cluster "+cl+" WorkTooLarge", func() error {
			st, err := v.storage(cl)
			if err != nil {
				return err
			}
			if got := condition(st.Status.Conditions, v1alpha1.ReadyCondition); got != "False/"+v1alpha1.ReasonWorkTooLarge {
				return fmt.Errorf("Ready %s", got)
			}
			return nil
		})
	}
	// Nothing was written for eu's clusters: the chain delivered before stays.
	after, err := v.work("eu-01")
	if err != nil {
		t.Fatal(err)
	}
	if ch := v.chain(after); after.Generation != before.Generation || ch.Registries[0].CACerts != "" {
		t.Errorf("work of eu-01 changed: generation %d → %d", before.Generation, after.Generation)
	}
	// The default route's chain (source alone, one bundle) is under the budget and delivered.
	testkit.Eventually(t, converge, "route fallback delivers the large bundle", func() error {
		w, err := v.work("us-01")
		if err != nil {
			return err
		}
		if ch := v.chain(w); len(ch.Registries) != 1 || ch.Registries[0].CACerts != bundle {
			return fmt.Errorf("chain of us-01 does not carry the new bundle")
		}
		if got := condition(v.route("fallback").Status.Conditions, v1alpha1.ReadyCondition); got != "True/Ready" {
			return fmt.Errorf("route fallback Ready %s", got)
		}
		return nil
	})
}

// TestAppValuesOverWorkBudget: an app whose values make its work larger than the budget gets
// WorkTooLarge naming its spec.values, and no work: a stall, Stalled=True/WorkTooLarge with the
// same message and Ready following it, after which the app is not written again while it stays
// so; with smaller values its work is written and Stalled goes.
func TestAppValuesOverWorkBudget(t *testing.T) {
	const ws, cluster = "bounds-apps", "bounds-app-01"
	_, c := startHub(t)
	ctx := t.Context()
	v := appView{t, c, ws, cluster}
	v.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}})
	managedCluster(t, c, ws, cluster, "")
	v.create(&v1alpha1.FleetClusterJoin{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: cluster}, Spec: v1alpha1.FleetClusterJoinSpec{Cluster: cluster, Site: "berlin"}})
	defer runControllers(t, sharedHub.Config, "apps")()

	big := fmt.Sprintf(`{"blob":%q}`, strings.Repeat("v", 460<<10))
	app := v.app("huge", "hello", func(a *v1alpha1.FleetApp) { a.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(big)} })
	v.create(&v1alpha1.FleetChart{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "hello"},
		Spec: v1alpha1.FleetChartSpec{Repository: "charts/hello", Version: "0.1.0"}}, app)
	got := v.appIs("huge", v1alpha1.AppPending, v1alpha1.ReasonWorkTooLarge, nil)
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.DeliveredCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1alpha1.ReasonWorkTooLarge ||
		!strings.Contains(cond.Message, "the app's spec.values (461 KiB)") || !strings.Contains(cond.Message, "450 KiB") {
		t.Errorf("Delivered %+v, want False/WorkTooLarge naming the app's spec.values", cond)
	}
	key := types.NamespacedName{Namespace: cluster, Name: appwork.NamesOf(app).Work}
	if err := c.Get(ctx, key, &workv1.ManifestWork{}); !apierrors.IsNotFound(err) {
		t.Errorf("work %s: %v, want none written", key, err)
	}
	stalled := meta.FindStatusCondition(got.Status.Conditions, kube.StalledCondition)
	if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != v1alpha1.ReasonWorkTooLarge || stalled.Message != cond.Message ||
		stalled.ObservedGeneration != got.Generation {
		t.Errorf("Stalled %+v, want True/WorkTooLarge at generation %d with Delivered's message", stalled, got.Generation)
	}
	if ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition); ready.Message != cond.Message {
		t.Errorf("Ready's message %q, want Stalled's", ready.Message)
	}
	// Stalled: no requeue, nothing written.
	rv := got.ResourceVersion
	time.Sleep(3 * time.Second)
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil || got.ResourceVersion != rv {
		t.Errorf("a stalled app is written again: resourceVersion %s → %s (%v)", rv, got.ResourceVersion, err)
	}
	// Over the budget through its values Secret, which no watch shows shrink: WorkTooLarge, naming
	// the Secret's key, but a wait (looked at again), not a stall.
	v.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: "huge-values"}, Data: map[string][]byte{"values.yaml": []byte("blob: " + strings.Repeat("v", 460<<10))}},
		v.app("huge-secret", "hello", func(a *v1alpha1.FleetApp) {
			a.Spec.ValuesSecretRef = &v1alpha1.SecretKeyRef{Name: "huge-values", Key: "values.yaml"}
		}))
	viaSecret := v.appIs("huge-secret", v1alpha1.AppPending, v1alpha1.ReasonWorkTooLarge, nil)
	if d := meta.FindStatusCondition(viaSecret.Status.Conditions, v1alpha1.DeliveredCondition); d == nil || !strings.Contains(d.Message, `key "values.yaml" of values Secret`) {
		t.Errorf("Delivered %+v, want it to name the Secret's key", d)
	}
	if got := condition(viaSecret.Status.Conditions, kube.StalledCondition); got != "<none>" {
		t.Errorf("an app over the budget through its values Secret is Stalled (%s): no watch would wake it", got)
	}

	// Smaller values: the work is written.
	var cur v1alpha1.FleetApp
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}
	if err := c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, converge, "work "+key.String(), func() error { return c.Get(ctx, key, &workv1.ManifestWork{}) })
	testkit.Eventually(t, converge, "app huge no longer WorkTooLarge", func() error {
		var a v1alpha1.FleetApp
		if err := c.Get(ctx, client.ObjectKeyFromObject(app), &a); err != nil {
			return err
		}
		for _, typ := range []string{v1alpha1.DeliveredCondition, v1alpha1.ReadyCondition} {
			if got := condition(a.Status.Conditions, typ); strings.HasSuffix(got, v1alpha1.ReasonWorkTooLarge) {
				return fmt.Errorf("%s %s", typ, got)
			}
		}
		if got := condition(a.Status.Conditions, kube.StalledCondition); got != "<none>" {
			return fmt.Errorf("Stalled %s", got)
		}
		return nil
	})
}
