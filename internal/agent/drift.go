package agent

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	cliresource "k8s.io/cli-runtime/pkg/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// Release drift: on a schedule, the agent compares each deployed release's objects, as Helm's
// release manifest renders them, with the cluster's live objects and reports the objects that
// differ (or are gone) in the FleetRelease's status.drift, which the app's work carries to the
// hub. A new generation of the FleetRelease (a repair the app asks for, or any change) upgrades
// the release, and Helm's three-way merge restores what differs.
//
// The comparison is read-only: a GET per object, as the workspace's ServiceAccount, and the
// rendered object's fields as a subset of the live one (driftedField). A server-side-apply dry
// run would let the apiserver normalize values, but it is a PATCH per object and pass (admission
// webhooks and audit see it every few minutes), it needs the field manager's conflicts sorted
// out against Helm's client-side ownership, and it refuses what Helm's merge accepts (duplicate
// list keys); the subset rule asks for get alone and normalizes the few values the apiserver
// rewrites (quantities, a Secret's stringData, zero values it omits).

const (
	// DefaultDriftInterval is how often the agent compares a deployed release with the cluster.
	DefaultDriftInterval = 5 * time.Minute
	// MinDriftInterval is the shortest interval --drift-interval takes, 0 (off) aside.
	MinDriftInterval = time.Second
	// driftJitter spreads the checks of releases deployed at the same time: each waits up to
	// this fraction of the interval longer.
	driftJitter = 0.1
	// maxDriftObjects bounds the objects one check reads: the first ones of the manifest.
	maxDriftObjects = 500
)

// checkDrift runs the drift check of a steady release when it is due, records what it found
// (a status write only when that changed), and asks to be called again at the next check.
func (r *FleetReleaseReconciler) checkDrift(rel *v1alpha1.FleetRelease, status *v1alpha1.FleetReleaseStatus, log logr.Logger) (ctrl.Result, bool, error) {
	if r.DriftInterval <= 0 {
		status.Drift = nil
		return ctrl.Result{}, true, nil
	}
	key := client.ObjectKeyFromObject(rel)
	if wait := r.driftDue(key); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, true, nil
	}
	next := ctrl.Result{RequeueAfter: wait.Jitter(r.DriftInterval, driftJitter)}
	cfg, err := r.helm(rel, log)
	if err != nil {
		return next, false, err
	}
	last, err := lastRelease(cfg, rel.Spec.ReleaseName)
	if err != nil || last == nil || !ownedBy(last, rel) {
		// Gone or taken over since the deploy: the next generation or restart looks again.
		log.V(1).Info("drift not checked: no release of the app's", "release", rel.Spec.ReleaseName, "namespace", rel.Spec.Namespace, "error", err)
		return next, true, nil
	}
	next = r.findDrift(cfg, last, key, status, log)
	return next, true, nil
}

// findDrift checks Helm's release hr of FleetRelease key for drift, records the finding in
// status (left as it was when the check failed, which is logged), and returns when to check
// again.
func (r *FleetReleaseReconciler) findDrift(cfg *action.Configuration, hr *release.Release, key types.NamespacedName, status *v1alpha1.FleetReleaseStatus, log logr.Logger) ctrl.Result {
	next := ctrl.Result{RequeueAfter: wait.Jitter(r.DriftInterval, driftJitter)}
	drifted, err := r.drift(cfg, hr, key, log)
	if err != nil {
		log.Error(err, "drift check", "release", hr.Name, "namespace", hr.Namespace)
		return next
	}
	status.SetDrift(drifted)
	return next
}

// driftDue is how long until the release's next drift check; 0 when it is due.
func (r *FleetReleaseReconciler) driftDue(key types.NamespacedName) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.driftChecked[key]
	if !ok {
		return 0
	}
	return max(0, r.DriftInterval-time.Since(last))
}

// forgetDrift forgets when a FleetRelease that is gone was checked.
func (r *FleetReleaseReconciler) forgetDrift(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.driftChecked, key)
}

// drift compares the objects of Helm's release hr (its manifest, hooks aside) with the cluster
// and returns those that differ or are gone, ordered by kind, namespace and name. An object the
// workspace may not read is not counted. It records the time of the check of FleetRelease key.
func (r *FleetReleaseReconciler) drift(cfg *action.Configuration, hr *release.Release, key types.NamespacedName, log logr.Logger) ([]v1alpha1.ObjectRef, error) {
	infos, err := cfg.KubeClient.Build(strings.NewReader(hr.Manifest), false)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of release %s revision %d: %w", hr.Name, hr.Version, err)
	}
	if len(infos) > maxDriftObjects {
		log.Info("release has more objects than a drift check reads: only the first are compared", "release", hr.Name, "objects", len(infos), "compared", maxDriftObjects)
		infos = infos[:maxDriftObjects]
	}
	var drifted []v1alpha1.ObjectRef
	for _, info := range infos {
		rendered, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		ref := v1alpha1.ObjectRef{Kind: rendered.GetKind(), Namespace: info.Namespace, Name: info.Name}
		live, err := cliresource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
		switch {
		case apierrors.IsNotFound(err):
			log.V(1).Info("drift: object deleted", "release", hr.Name, "object", ref.String())
			drifted = append(drifted, ref)
			continue
		case apierrors.IsForbidden(err):
			log.V(1).Info("drift: object not readable by the workspace", "release", hr.Name, "object", ref.String())
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s of release %s: %w", ref, hr.Name, err)
		}
		u, ok := live.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if at := driftedField(rendered.Object, u.Object); at != "" {
			log.V(1).Info("drift: object changed", "release", hr.Name, "object", ref.String(), "field", at)
			drifted = append(drifted, ref)
		}
	}
	slices.SortFunc(drifted, func(a, b v1alpha1.ObjectRef) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.driftChecked == nil {
		r.driftChecked = map[types.NamespacedName]time.Time{}
	}
	r.driftChecked[key] = time.Now()
	return drifted, nil
}

// driftedField is the path of the first field the rendered object sets whose live value
// differs, "" when the live object holds every one: the rendered object's fields are a subset
// of the live one's. What it compares: labels and annotations of the metadata (the apiserver
// and controllers add the rest), every other top-level field but status, apiVersion and kind.
// A Secret's stringData is compared as the data the apiserver turns it into.
func driftedField(rendered, live map[string]any) string {
	want := map[string]any{}
	for k, v := range rendered {
		switch k {
		case "apiVersion", "kind", "status", "metadata":
		default:
			want[k] = v
		}
	}
	meta, _ := rendered["metadata"].(map[string]any)
	liveMeta, _ := live["metadata"].(map[string]any)
	wantMeta := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := meta[k]; ok {
			wantMeta[k] = v
		}
	}
	if at := subset(wantMeta, liveMeta, "metadata"); at != "" {
		return at
	}
	if rendered["kind"] == "Secret" && rendered["apiVersion"] == "v1" {
		if sd, ok := want["stringData"].(map[string]any); ok {
			data, _ := want["data"].(map[string]any)
			merged := make(map[string]any, len(data)+len(sd))
			for k, v := range data {
				merged[k] = v
			}
			for k, v := range sd {
				if s, ok := v.(string); ok {
					merged[k] = base64.StdEncoding.EncodeToString([]byte(s))
				}
			}
			want["data"] = merged
			delete(want, "stringData")
		}
	}
	return subset(want, live, "")
}

// subset is the path, below at, of the first value of want that got does not hold; "".
// Maps: each key of want, a missing one matching only a zero value (the apiserver omits
// empty fields). Lists of objects: each element of want matched by its name when it has one
// (containers, ports, env, volumes), else by position, so that elements others add (a sidecar)
// do not count. Other lists: element by element, of the same length. Scalars: equal, numbers
// by value and quantities by meaning (500m and 0.5).
func subset(want, got any, at string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if got == nil && isZero(w) {
				return ""
			}
			return at
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p := subset(w[k], g[k], join(at, k)); p != "" {
				return p
			}
		}
		return ""
	case []any:
		if len(w) == 0 {
			return ""
		}
		g, ok := got.([]any)
		if !ok {
			return at
		}
		if !allObjects(w) {
			if len(w) != len(g) {
				return at
			}
			for i := range w {
				if p := subset(w[i], g[i], at+"["+strconv.Itoa(i)+"]"); p != "" {
					return p
				}
			}
			return ""
		}
		for i, e := range w {
			m := e.(map[string]any)
			var match any
			if name, ok := m["name"].(string); ok && name != "" {
				match = byNameField(g, name)
			} else if i < len(g) {
				match = g[i]
			}
			if p := subset(m, match, at+"["+elementKey(m, i)+"]"); p != "" {
				return p
			}
		}
		return ""
	default:
		if got == nil && isZero(want) || scalarEqual(want, got) {
			return ""
		}
		return at
	}
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func allObjects(l []any) bool {
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return false
		}
	}
	return true
}

func byNameField(l []any, name string) any {
	for _, e := range l {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

func elementKey(m map[string]any, i int) string {
	if name, ok := m["name"].(string); ok && name != "" {
		return "name=" + name
	}
	return strconv.Itoa(i)
}

// isZero tells whether v is a value the apiserver leaves out: null, "", 0, false, or an object
// or list of such values.
func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case map[string]any:
		for _, e := range x {
			if !isZero(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	n, ok := number(v)
	return ok && n == 0
}

// scalarEqual compares two scalars of decoded JSON or YAML: numbers by value, and a string or
// number with a string by meaning when both are quantities.
func scalarEqual(a, b any) bool {
	if na, ok := number(a); ok {
		if nb, ok := number(b); ok {
			return na == nb
		}
	}
	if a == b {
		return true
	}
	qa, ok := quantity(a)
	if !ok {
		return false
	}
	qb, ok := quantity(b)
	return ok && qa.Cmp(qb) == 0
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func quantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	default:
		n, ok := number(v)
		if !ok {
			return resource.Quantity{}, false
		}
		s = strconv.FormatFloat(n, 'f', -1, 64)
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}
