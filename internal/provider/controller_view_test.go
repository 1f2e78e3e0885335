package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/inventory"
)

func TestSameWait(t *testing.T) {
	for _, tc := range []struct{ delivered, spelled, want string }{
		{"10m0s", "10m", "10m"},
		{"1h30m0s", "90m", "90m"},
		{"0s", "0s", "0s"},
		{"10m0s", "15m", "10m0s"}, // the route changed since: what was delivered
		{"10m0s", "", "10m0s"},    // the route is gone
		{"", "10m", ""},
	} {
		if got := sameWait(tc.delivered, tc.spelled); got != tc.want {
			t.Errorf("sameWait(%q, %q) = %q, want %q", tc.delivered, tc.spelled, got, tc.want)
		}
	}
}

// fakeLister answers List from objects by resource, or with err.
type fakeLister struct {
	objects map[string][]unstructured.Unstructured
	err     error
}

func (f fakeLister) List(_ context.Context, k hub.Kind, _, _ string) ([]unstructured.Unstructured, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.objects[k.Resource], nil
}

func (f fakeLister) Memo(_ string, build func() (any, error)) (any, error) { return build() }

func statusObj(name string, generation int64, status map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name, "namespace": "ws", "generation": generation}}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func readyConds(status, reason, message string) []any {
	return []any{
		map[string]any{"type": "Delivered", "status": "True", "reason": "Delivered", "message": "x", "lastTransitionTime": "2025-01-01T00:00:00Z"},
		map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message, "lastTransitionTime": "2025-01-01T00:00:00Z"},
	}
}

func TestDeliveries(t *testing.T) {
	ctx := context.Background()
	gr := clusterStorageKind.GroupResource()
	t.Run("kind not served is no controller", func(t *testing.T) {
		for _, err := range []error{
			fmt.Errorf("%w: %s", hub.ErrKindNotServed, clusterStorageKind.GroupVersionResource),
			apierrors.NewNotFound(gr, ""),
			apierrors.NewGenericServerResponse(404, "list", gr, "", "404 page not found", 0, false),
		} {
			var diags diag.Diagnostics
			if got := deliveries(ctx, fakeLister{err: err}, "ws", &diags); len(got) != 0 || len(diags) != 0 {
				t.Errorf("%v: got %v, diagnostics %v; want none", err, got, diags)
			}
		}
	})
	t.Run("unreadable is a warning and the provider's view", func(t *testing.T) {
		var diags diag.Diagnostics
		got := deliveries(ctx, fakeLister{err: apierrors.NewForbidden(gr, "", fmt.Errorf("RBAC"))}, "ws", &diags)
		if len(got) != 0 || diags.HasError() || diags.WarningsCount() != 1 || !strings.Contains(diags[0].Detail(), `resolved_by = "provider"`) {
			t.Errorf("got %v, diagnostics %v; want a warning", got, diags)
		}
	})
	t.Run("only objects with a Ready condition", func(t *testing.T) {
		var diags diag.Diagnostics
		got := deliveries(ctx, fakeLister{objects: map[string][]unstructured.Unstructured{"clusterocistorages": {
			statusObj("delivered", 1, map[string]any{"route": "eu", "matchedBy": "spec.clusterSelectors[0]", "chain": []any{"a", "b"}, "replicationWait": "10m",
				"conditions": readyConds("True", "Delivered", "the chain of route \"eu\" is delivered")}),
			statusObj("kept", 1, map[string]any{"route": "lab", "chain": []any{"legacy"}, "conditions": readyConds("False", "LastGoodChainKept", "stays in place")}),
			statusObj("no-ready", 1, map[string]any{"route": "eu", "conditions": []any{}}),
			statusObj("no-status", 1, nil),
			statusObj("bad-status", 1, map[string]any{"chain": "not a list"}),
		}}}, "ws", &diags)
		if len(got) != 2 || got["delivered"].Route != "eu" || strings.Join(got["delivered"].Chain, ",") != "a,b" ||
			readyCondition(got["kept"].Conditions).Reason != "LastGoodChainKept" {
			t.Errorf("got %+v", got)
		}
		if diags.HasError() || diags.WarningsCount() != 1 || !strings.Contains(diags[0].Detail(), "bad-status") {
			t.Errorf("diagnostics %v, want one warning for bad-status", diags)
		}
	})
}

func TestRouteStatuses(t *testing.T) {
	ctx := context.Background()
	routes := func(items ...unstructured.Unstructured) fakeLister {
		return fakeLister{objects: map[string][]unstructured.Unstructured{inventory.RouteKind.Resource: items}}
	}
	current := func(name string, gen int64) unstructured.Unstructured {
		return statusObj(name, gen, map[string]any{"observedGeneration": gen, "matchedClusters": int64(3), "conditions": readyConds("True", "Ready", "3 clusters")})
	}
	for _, tc := range []struct {
		name    string
		l       fakeLister
		current []string
		all     bool
	}{
		{"no routes: nothing to go by", routes(), nil, false},
		{"every route current", routes(current("a", 1), current("b", 4)), []string{"a", "b"}, true},
		{"a spec changed since", routes(current("a", 1), statusObj("b", 5, map[string]any{"observedGeneration": int64(4), "conditions": readyConds("True", "Ready", "")})), []string{"a"}, false},
		{"no Ready condition", routes(current("a", 1), statusObj("b", 1, map[string]any{"observedGeneration": int64(1)})), []string{"a"}, false},
		{"no status: no controller", routes(statusObj("a", 1, nil), statusObj("b", 1, nil)), nil, false},
		{"kind not served", fakeLister{err: fmt.Errorf("%w", hub.ErrKindNotServed)}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			got, all := routeStatuses(ctx, tc.l, "ws", &diags)
			var names []string
			for _, n := range []string{"a", "b"} {
				if _, ok := got[n]; ok {
					names = append(names, n)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.current, ",") || len(got) != len(tc.current) || all != tc.all {
				t.Errorf("current %v all %v, want %v %v", names, all, tc.current, tc.all)
			}
			if tc.l.err == nil && len(diags) != 0 {
				t.Errorf("diagnostics %v", diags)
			}
		})
	}
	got, _ := routeStatuses(ctx, routes(current("a", 2)), "ws", &diag.Diagnostics{})
	if got["a"].MatchedClusters != 3 {
		t.Errorf("matchedClusters %d, want 3", got["a"].MatchedClusters)
	}
}
