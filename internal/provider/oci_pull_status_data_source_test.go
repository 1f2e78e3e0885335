package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
)

func TestPullStatusRows(t *testing.T) {
	at := func(s string) *metav1.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Time{Time: tm}
	}
	pull := func(cluster, name, repo, tag, digest string, st *v1alpha1.OCIPullStatus) pullwork.Pull {
		p := pullwork.Pull{Cluster: cluster, Work: "pulls", Request: pullwork.Request{Name: name,
			Spec: v1alpha1.OCIPullSpec{Workspace: "ws", Repository: repo, Tag: tag, Digest: digest}}}
		if st != nil {
			p.Fresh, p.Status = true, *st
		}
		return p
	}
	pulls := []pullwork.Pull{
		pull("us", "web", "apps/web", "v1", "", &v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullFailed, Reason: "Unauthorized", Registry: "source",
			Attempts: 3, Message: "every registry failed", Failovers: []v1alpha1.Failover{{Registry: "source", Reason: "Unauthorized"}}}),
		pull("eu", "web-v2", "apps/web", "v2", "", &v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullWaitingForArtifact, Reason: "NotFound", Registry: "mirror",
			Attempts: 1, NextRetry: at("2026-11-30T10:05:00+01:00")}),
		pull("eu", "web", "apps/web", "v1", "", &v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Registry: "mirror", Digest: "sha256:aaa",
			Attempts: 1, LastSuccess: at("2026-11-30T09:00:00Z"), Verified: "cosign key SHA256:00ff"}),
		pull("eu", "db", "apps/db", "", "sha256:bbb", nil), // no status yet
		// A status that does not answer the spec asked for now: Unknown, its old values hidden.
		{Cluster: "eu", Work: "more", Request: pullwork.Request{Name: "cfg", Spec: v1alpha1.OCIPullSpec{Repository: "apps/cfg", Tag: "v3"}},
			Status: v1alpha1.OCIPullStatus{State: v1alpha1.OCIPullPulled, Registry: "mirror", Digest: "sha256:old"}},
	}
	storages := map[string]v1alpha1.ClusterOCIStorageStatus{
		"eu":   {Route: "eu", Chain: []string{"mirror", "source"}},
		"us":   {Route: "fallback", Chain: []string{"source"}},
		"lab":  {}, // no route matches it
		"idle": {Route: "fallback", Chain: []string{"source"}},
	}
	keys := func(rows []pullStatusRow) string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Cluster.ValueString()+" "+r.Artifact.ValueString()+" "+r.State.ValueString())
		}
		return strings.Join(out, ", ")
	}
	countsOf := func(c pullCounts) string {
		return fmt.Sprintf("%d/%d/%d/%d", c.Pulled.ValueInt64(), c.WaitingForArtifact.ValueInt64(), c.Failed.ValueInt64(), c.Unknown.ValueInt64())
	}
	for _, tc := range []struct {
		name, cluster, artifact string
		rows, counts            string
		clusters                int
		idle                    string
	}{
		{"all, sorted by cluster then artifact", "", "",
			"eu apps/cfg:v3 Unknown, eu apps/db@sha256:bbb Unknown, eu apps/web:v1 Pulled, eu apps/web:v2 WaitingForArtifact, us apps/web:v1 Failed",
			"1/1/1/2", 2, "idle,lab"},
		{"one cluster", "us", "", "us apps/web:v1 Failed", "0/0/1/0", 1, ""},
		{"a repository matches every tag", "", "apps/web",
			"eu apps/web:v1 Pulled, eu apps/web:v2 WaitingForArtifact, us apps/web:v1 Failed", "1/1/1/0", 2, "idle,lab"},
		{"repository:tag exactly", "", "apps/web:v1", "eu apps/web:v1 Pulled, us apps/web:v1 Failed", "1/0/1/0", 2, "idle,lab"},
		{"repository@digest exactly", "", "apps/db@sha256:bbb", "eu apps/db@sha256:bbb Unknown", "0/0/0/1", 1, "idle,lab,us"},
		{"a prefix is not a repository", "", "apps", "", "0/0/0/0", 0, "eu,idle,lab,us"},
		{"a tag nobody asks for", "eu", "apps/web:v9", "", "0/0/0/0", 0, "eu"},
		{"a cluster with a storage and no pull", "idle", "", "", "0/0/0/0", 0, "idle"},
		{"a cluster unknown to the workspace", "nowhere", "", "", "0/0/0/0", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, counts, clusters, idle := pullStatusRows(pulls, storages, tc.cluster, tc.artifact)
			if got := keys(rows); got != tc.rows {
				t.Errorf("rows %q, want %q", got, tc.rows)
			}
			if got := countsOf(counts); got != tc.counts {
				t.Errorf("counts %s, want %s", got, tc.counts)
			}
			if clusters != tc.clusters || strings.Join(idle, ",") != tc.idle {
				t.Errorf("clusters %d, idle %v; want %d, %q", clusters, idle, tc.clusters, tc.idle)
			}
			if rows == nil || idle == nil {
				t.Errorf("rows %v, idle %v: want empty lists, not null", rows, idle)
			}
		})
	}

	rows, _, _, _ := pullStatusRows(pulls, storages, "", "")
	byKey := map[string]pullStatusRow{}
	for _, r := range rows {
		byKey[r.Cluster.ValueString()+" "+r.Artifact.ValueString()] = r
	}
	str := types.StringValue
	null := types.StringNull()
	for _, tc := range []struct {
		key                                                                 string
		name, work, route, reason, registry, digest, next, last, msg, chain string
		attempts                                                            types.Int64
		failovers                                                           string
	}{
		{"eu apps/web:v1", "web", "eu/pulls", "eu", "", "mirror", "sha256:aaa", "", "2026-11-30T09:00:00Z", "", "mirror,source", types.Int64Value(1), "[]"},
		{"us apps/web:v1", "web", "us/pulls", "fallback", "Unauthorized", "source", "", "", "", "every registry failed", "source", types.Int64Value(3), "[{source Unauthorized}]"},
		{"eu apps/web:v2", "web-v2", "eu/pulls", "eu", "NotFound", "mirror", "", "2026-11-30T09:05:00Z", "", "", "mirror,source", types.Int64Value(1), "[]"},
		{"eu apps/cfg:v3", "cfg", "eu/more", "eu", "", "", "", "", "", "", "mirror,source", types.Int64Null(), "[]"},
	} {
		r, ok := byKey[tc.key]
		if !ok {
			t.Errorf("no row %q", tc.key)
			continue
		}
		opt := func(s string) types.String {
			if s == "" {
				return null
			}
			return str(s)
		}
		want := pullStatusRow{Name: str(tc.name), Work: str(tc.work), Route: opt(tc.route), Reason: opt(tc.reason), Registry: opt(tc.registry),
			Digest: opt(tc.digest), NextRetry: opt(tc.next), LastSuccess: opt(tc.last), Message: opt(tc.msg), Attempts: tc.attempts}
		got := pullStatusRow{Name: r.Name, Work: r.Work, Route: r.Route, Reason: r.Reason, Registry: r.Registry, Digest: r.Digest,
			NextRetry: r.NextRetry, LastSuccess: r.LastSuccess, Message: r.Message, Attempts: r.Attempts}
		if fmt.Sprint(got) != fmt.Sprint(want) || strings.Join(r.Chain, ",") != tc.chain || fmt.Sprint(r.Failovers) != tc.failovers {
			t.Errorf("%s:\n got %v chain %v failovers %v\nwant %v chain %s failovers %s", tc.key, got, r.Chain, r.Failovers, want, tc.chain, tc.failovers)
		}
	}

	if got := byKey["eu apps/web:v1"].Verified; got != types.StringValue("cosign key SHA256:00ff") {
		t.Errorf("eu apps/web:v1 verified = %v, want the agent's cosign key", got)
	}
	if got := byKey["us apps/web:v1"].Verified; !got.IsNull() {
		t.Errorf("us apps/web:v1 verified = %v, want null (nothing verified)", got)
	}
	// A pull on a cluster the controller has not reported on: no route, an empty chain.
	rows, _, _, idle := pullStatusRows(pulls, nil, "us", "")
	if len(rows) != 1 || !rows[0].Route.IsNull() || rows[0].Chain == nil || len(rows[0].Chain) != 0 || len(idle) != 0 {
		t.Errorf("without storages: %+v, idle %v", rows, idle)
	}
}

// pullWorkObject is a pull work as the hub holds it, applied, with each pull's status fed back
// for the spec it asks.
func pullWorkObject(t *testing.T, cluster, name, ws string, states map[string]v1alpha1.OCIPullState, reqs ...pullwork.Request) unstructured.Unstructured {
	t.Helper()
	w, err := pullwork.New(cluster, name, ws, reqs...)
	if err != nil {
		t.Fatal(err)
	}
	w.Generation = 1
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Applied", LastTransitionTime: metav1.Now()}}
	s := func(v string) workv1.FieldValue { return workv1.FieldValue{Type: workv1.String, String: &v} }
	n := func(v int64) workv1.FieldValue { return workv1.FieldValue{Type: workv1.Integer, Integer: &v} }
	for _, r := range reqs {
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Group: v1alpha1.GroupVersion.Group, Kind: "OCIPull", Name: r.Name, Namespace: ocichain.Namespace},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
				{Name: "workspace", Value: s(ws)}, {Name: "repository", Value: s(r.Spec.Repository)}, {Name: "tag", Value: s(r.Spec.Tag)},
				{Name: "generation", Value: n(1)}, {Name: "observedGeneration", Value: n(1)},
				{Name: "state", Value: s(string(states[r.Name]))}, {Name: "registry", Value: s("source")},
			}},
		})
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	if err != nil {
		t.Fatal(err)
	}
	return unstructured.Unstructured{Object: obj}
}

func TestLoadPulls(t *testing.T) {
	ctx := context.Background()
	web := pullwork.Request{Name: "web", Spec: v1alpha1.OCIPullSpec{Workspace: "ws", Repository: "apps/web", Tag: "v1"}}
	db := pullwork.Request{Name: "db", Spec: v1alpha1.OCIPullSpec{Workspace: "ws", Repository: "apps/db", Tag: "v2"}}

	t.Run("pulls listed by the storages", func(t *testing.T) {
		var diags diag.Diagnostics
		work := pullWorkObject(t, "eu", "pulls", "ws", map[string]v1alpha1.OCIPullState{"web": v1alpha1.OCIPullPulled, "db": v1alpha1.OCIPullFailed}, web, db)
		var w workv1.ManifestWork
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(work.Object, &w); err != nil {
			t.Fatal(err)
		}
		read, err := pullwork.Read(&w)
		if err != nil {
			t.Fatal(err)
		}
		listed, _ := pullwork.Listed(read, 100)
		pullsOf := func(name string, omitted int) unstructured.Unstructured {
			obj := statusObj(name, 1, map[string]any{"route": "eu", "chain": []any{"mirror", "source"}, "conditions": readyConds("True", "Delivered", "delivered")})
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.ClusterOCIStorageStatus{Pulls: listed, PullsOmitted: int32(omitted)})
			if err != nil {
				t.Fatal(err)
			}
			st := obj.Object["status"].(map[string]any)
			st["pulls"], st["pullsOmitted"] = raw["pulls"], raw["pullsOmitted"]
			return obj
		}
		l := fakeLister{objects: map[string][]unstructured.Unstructured{"clusterocistorages": {pullsOf("eu", 0), pullsOf("us", 3)}}}
		pulls, storages := loadPulls(ctx, l, "ws", "", &diags)
		if diags.HasError() || diags.WarningsCount() != 1 || !strings.Contains(diags[0].Detail(), "Cluster us has 3 more pulls") {
			t.Errorf("diagnostics %v; want one warning for the pulls us left out", diags)
		}
		// Listed sorts by artifact: apps/db before apps/web.
		if len(pulls) != 4 || pulls[0].State() != "Failed" || pulls[1].State() != "Pulled" || pulls[0].Cluster != "eu" || pulls[1].Status.Registry != "source" ||
			pulls[0].Work != "pulls" || pulls[0].Name != "db" || pulls[2].Cluster != "us" {
			t.Errorf("pulls %+v", pulls)
		}
		if storages["eu"].Route != "eu" || len(storages) != 2 {
			t.Errorf("storages %+v", storages)
		}
		pulls, _ = loadPulls(ctx, l, "ws", "eu", &diags)
		if len(pulls) != 2 {
			t.Errorf("cluster eu only: %d pulls", len(pulls))
		}
	})

	for _, tc := range []struct {
		name    string
		l       hub.Lister
		summary string
		detail  string
	}{
		{"controller CRDs not installed", fakeLister{err: fmt.Errorf("%w: x", hub.ErrKindNotServed)},
			"fleet-controller's CRDs are not installed", "charts/fleet-controller"},
		{"ClusterOCIStorages forbidden", fakeLister{err: apierrors.NewForbidden(clusterStorageKind.GroupResource(), "", fmt.Errorf("RBAC"))},
			"Cannot read the controller's view", "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			pulls, _ := loadPulls(ctx, tc.l, "ws", "", &diags)
			if pulls != nil || !diags.HasError() || diags[0].Summary() != tc.summary || !strings.Contains(diags[0].Detail(), tc.detail) {
				t.Errorf("pulls %v, diagnostics %v; want the error %q with %q", pulls, diags, tc.summary, tc.detail)
			}
		})
	}
}
