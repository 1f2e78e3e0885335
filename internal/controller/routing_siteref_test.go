package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestRoutingSiteReferences: one registry whose reference names the cluster's site label serves
// every site; the controller on the real apiserver resolves it per cluster. A cluster without the
// label, one whose label value tries to reach another host, and one whose label another
// workspace's join set get no entry for it, with a condition naming cluster, registry and label.
func TestRoutingSiteReferences(t *testing.T) {
	const ws, set = "siteref-ws", "siteref-set"
	h, c := startHub(t)
	ctx := t.Context()
	clusters := []*clusterv1.ManagedCluster{
		siteCluster(set, "sr-berlin", map[string]string{"site": "berlin"}, nil),
		siteCluster(set, "sr-paris", map[string]string{"site": "paris"}, nil),
		siteCluster(set, "sr-nolabel", nil, nil),
		// A valid Kubernetes label value that would put the host under another domain.
		siteCluster(set, "sr-hostile", map[string]string{"site": "evil.com"}, nil),
		// The label was set by a cluster join of another workspace.
		siteCluster(set, "sr-foreign", map[string]string{"site": "theirs"},
			map[string]string{v1alpha1.JoinedByAnnotation: "other-ws/join-sr-foreign", v1alpha1.JoinLabelsAnnotation: "site"}),
		// Routed to the site registry alone: no chain at all.
		siteCluster(set, "sr-only", nil, nil),
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ws}},
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: set}},
		&clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: ws}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}},
		testkit.RegistrySecret(ws, "site", registrysecret.RoleMirror, registrysecret.Registry{Reference: "zot.{{ .labels.site }}.stores.internal:5000/fleet",
			AgentUsername: "site-puller", AgentPassword: "site-pull-s3cret"}),
		testkit.RegistrySecret(ws, "central", registrysecret.RoleSource, registrysecret.Registry{Reference: "harbor.example.com/fleet"}),
		route(ws, "sites", v1alpha1.OCIStorageRouteSpec{Priority: 1000, Default: true, Registries: []string{"site", "central"}}),
		route(ws, "site-only", v1alpha1.OCIStorageRouteSpec{Priority: 1, ClusterNames: []string{"sr-only"}, Registries: []string{"site"}}),
	}
	for _, cl := range clusters {
		objs = append(objs, cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cl.Name}})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	v := hubView{t, ctx, c, ws}
	runManager(t, h)
	v.converged()

	type want struct {
		chain  []string // references, in order
		reason string   // of ReferencesResolved False, "" when True
	}
	wants := map[string]want{
		"sr-berlin":  {chain: []string{"zot.berlin.stores.internal:5000/fleet", "harbor.example.com/fleet"}},
		"sr-paris":   {chain: []string{"zot.paris.stores.internal:5000/fleet", "harbor.example.com/fleet"}},
		"sr-nolabel": {chain: []string{"harbor.example.com/fleet"}, reason: v1alpha1.ReasonLabelMissing},
		"sr-hostile": {chain: []string{"harbor.example.com/fleet"}, reason: v1alpha1.ReasonLabelRefused},
		"sr-foreign": {chain: []string{"harbor.example.com/fleet"}, reason: v1alpha1.ReasonLabelForeign},
	}
	check := func() error {
		for cl, w := range wants {
			st, err := v.storage(cl)
			if err != nil {
				return err
			}
			cond := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.ReferencesResolvedCondition)
			switch {
			case cond == nil:
				return fmt.Errorf("%s: no ReferencesResolved", cl)
			case w.reason == "" && cond.Status != metav1.ConditionTrue:
				return fmt.Errorf("%s: ReferencesResolved %s/%s: %s", cl, cond.Status, cond.Reason, cond.Message)
			case w.reason != "" && (cond.Status != metav1.ConditionFalse || cond.Reason != w.reason ||
				!strings.Contains(cond.Message, `cluster "`+cl+`"`) || !strings.Contains(cond.Message, `registry "site"`) || !strings.Contains(cond.Message, `label "site"`)):
				return fmt.Errorf("%s: ReferencesResolved %s/%s %q, want False/%s naming cluster, registry and label", cl, cond.Status, cond.Reason, cond.Message, w.reason)
			}
			work, err := v.work(cl)
			if err != nil {
				return fmt.Errorf("%s: %v", cl, err)
			}
			var refs, names []string
			for _, r := range v.chain(work).Registries {
				refs, names = append(refs, r.Reference), append(names, r.Name)
				if r.Name == "site" && (r.AgentUsername != "site-puller" || r.AgentPassword != "site-pull-s3cret") {
					return fmt.Errorf("%s: the site entry lost its agent credentials", cl)
				}
			}
			if join(refs) != join(w.chain) {
				return fmt.Errorf("%s: chain %v, want %v", cl, refs, w.chain)
			}
			if join(st.Status.Chain) != join(names) {
				return fmt.Errorf("%s: status chain %v, work %v", cl, st.Status.Chain, names)
			}
		}
		return nil
	}
	testkit.Eventually(t, converge, "per-cluster references", check)

	t.Run("the hostile value reaches no work", func(t *testing.T) {
		var works []string
		for _, cl := range []string{"sr-hostile", "sr-foreign"} {
			w, _ := v.work(cl)
			works = append(works, decodedData(w))
		}
		for i, d := range works {
			if strings.Contains(d, "evil.com") || strings.Contains(d, "theirs") || strings.Contains(d, "site-pull-s3cret") {
				t.Errorf("work %d carries the hostile host or the site registry's credentials: %s", i, d)
			}
		}
	})

	t.Run("a chain of only unresolved registries is not delivered", func(t *testing.T) {
		st, err := v.storage("sr-only")
		if err != nil {
			t.Fatal(err)
		}
		if got := condition(st.Status.Conditions, v1alpha1.WrittenCondition); got != "False/NoUsableRegistry" || len(st.Status.Chain) != 0 || st.Status.Work != "" {
			t.Errorf("sr-only: Written %s chain %v work %q", got, st.Status.Chain, st.Status.Work)
		}
		if _, err := v.work("sr-only"); !apierrors.IsNotFound(err) {
			t.Errorf("sr-only has a work: %v", err)
		}
		if got := condition(v.route("site-only").Status.Conditions, v1alpha1.WrittenCondition); got != "False/NoUsableRegistry" {
			t.Errorf("route site-only: Written %s", got)
		}
	})

	t.Run("route status counts and names them", func(t *testing.T) {
		r := v.route("sites")
		cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ReferencesResolvedCondition)
		if cond == nil || cond.Status != metav1.ConditionFalse || !strings.HasPrefix(cond.Message, "3 of 5 clusters get no entry") ||
			!strings.Contains(cond.Message, `cluster "sr-foreign" gets no entry for registry "site"`) {
			t.Errorf("route sites: ReferencesResolved %+v", cond)
		}
		if got := condition(r.Status.Conditions, v1alpha1.ReadyCondition); got != "True/Ready" {
			t.Errorf("route sites: Ready %s; the clusters pull from the rest of the chain", got)
		}
	})

	t.Run("written once", func(t *testing.T) {
		w0, s0, r0 := writes("manifestwork", ""), writes("clusterocistorage", ""), writes("ocistorageroute", "")
		before := workVersions(t, v)
		time.Sleep(3 * time.Second)
		if dw, ds, dr := writes("manifestwork", "")-w0, writes("clusterocistorage", "")-s0, writes("ocistorageroute", "")-r0; dw+ds+dr != 0 {
			t.Errorf("steady state wrote %v works, %v ClusterOCIStorages, %v routes", dw, ds, dr)
		}
		if changed := rewritten(t, v, before); len(changed) != 0 {
			t.Errorf("works rewritten in steady state: %v", changed)
		}
	})

	t.Run("labelling the cluster gives it its site registry", func(t *testing.T) {
		before := workVersions(t, v)
		testkit.Update(t, c, &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "sr-nolabel"}}, func(m *clusterv1.ManagedCluster) {
			m.Labels["site"] = "rome"
		})
		wants["sr-nolabel"] = want{chain: []string{"zot.rome.stores.internal:5000/fleet", "harbor.example.com/fleet"}}
		testkit.Eventually(t, converge, "sr-nolabel pulls from zot.rome", check)
		if changed := rewritten(t, v, before); join(changed) != "sr-nolabel" {
			t.Errorf("works rewritten: %v, want only sr-nolabel's", changed)
		}
	})
}

func siteCluster(set, name string, labels, annotations map[string]string) *clusterv1.ManagedCluster {
	l := map[string]string{clusterv1beta2.ClusterSetLabel: set}
	for k, v := range labels {
		l[k] = v
	}
	return &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: annotations},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
}
