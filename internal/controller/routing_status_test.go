package controller

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

func TestRouteStatus(t *testing.T) {
	conflict := routing.Conflict{Field: "priority", Priority: 10, Routes: []string{"a", "b"}}
	extraDefault := routing.Conflict{Field: "default", Routes: []string{"a", "z"}}
	shadow := routing.Shadow{Route: "late", Claims: []routing.Claim{{Cluster: "c1", Route: "early"}, {Cluster: "c2", Route: "early"}}}
	many := make([]string, 25)
	for i := range many {
		many[i] = string(rune('a'+i)) + "-cluster"
	}
	for _, tc := range []struct {
		name  string
		facts routeFacts
		want  map[string]string // condition type → "Status/Reason"
		inMsg map[string]string // condition type → text its message contains
	}{
		{
			name:  "ready",
			facts: routeFacts{Matched: []string{"c1", "c2"}},
			want: map[string]string{"Ready": "True/Ready", "SpecValid": "True/Valid", "RegistriesResolved": "True/RegistriesResolved",
				"PriorityConflict": "False/NoConflict", "Shadowed": "False/NotShadowed", "AgentCredentials": "True/AgentCredentialsOnly",
				"Written": "True/Written", "Delivered": "True/WorkApplied"},
			inMsg: map[string]string{"Ready": "2 clusters resolve", "Written": "ManifestWork of each of its 2 clusters", "Delivered": "applied on 2 clusters"},
		},
		{
			name:  "written but not applied yet is Ready, not Delivered",
			facts: routeFacts{Matched: []string{"c1", "c2"}, Pending: []string{"c2"}, PendingWhy: "the work agent last reported generation 1, not 2"},
			want:  map[string]string{"Ready": "True/Ready", "Written": "True/Written", "Delivered": "False/WorkPending"},
			inMsg: map[string]string{"Delivered": `1 of 2 clusters have not applied the route's chain yet, e.g. "c2": the work agent last reported generation 1, not 2`},
		},
		{
			name: "a cluster not reporting",
			facts: routeFacts{Matched: []string{"c1", "c2"}, Pending: []string{"c1"}, Silent: []*notReporting{{Cluster: "c1", Status: metav1.ConditionUnknown,
				Reason: "ManagedClusterLeaseUpdateStopped", Since: metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))}}},
			want: map[string]string{"Ready": "True/Ready", "Written": "True/Written", "Delivered": "False/ClusterNotReporting"},
			inMsg: map[string]string{"Delivered": `1 of 2 clusters do not report, so the route's chain is not known to be applied there: cluster "c1" has not reported since 2026-12-01T10:00:00Z: ` +
				`its ManagedCluster's ManagedClusterConditionAvailable is Unknown (ManagedClusterLeaseUpdateStopped)`},
		},
		{
			name:  "invalid spec shows CRD paths and nothing else",
			facts: routeFacts{Problems: []string{"spec.clusterSelectors[0].matchLabels[\"bad key\"]: not a label key"}},
			want:  map[string]string{"Ready": "False/InvalidSpec", "SpecValid": "False/InvalidSpec", "Delivered": "", "Written": "", "Shadowed": ""},
			inMsg: map[string]string{"Ready": "spec.clusterSelectors[0]"},
		},
		{
			name:  "missing registry",
			facts: routeFacts{Missing: []string{"mirror"}, Matched: []string{"c1"}, Kept: 1, Pending: []string{"c1"}, PendingWhy: "its chain is not written (see Written)"},
			want: map[string]string{"Ready": "False/RegistryNotFound", "RegistriesResolved": "False/RegistryNotFound", "Written": "False/LastGoodChainKept",
				"Delivered": "False/WorkPending"},
			inMsg: map[string]string{"RegistriesResolved": `"mirror", which is not a registry Secret`, "Written": "1 of 1 clusters keep", "Delivered": "see Written"},
		},
		{
			name:  "unreadable registry",
			facts: routeFacts{Unreadable: []string{"broken"}},
			want:  map[string]string{"Ready": "False/RegistryInvalid", "RegistriesResolved": "False/RegistryInvalid", "Written": "True/NoClusters", "Delivered": "True/NoClusters"},
		},
		{
			name:  "shared priority",
			facts: routeFacts{Conflict: &conflict, Matched: []string{"c1"}},
			want:  map[string]string{"Ready": "False/SharedPriority", "PriorityConflict": "True/SharedPriority"},
			inMsg: map[string]string{"PriorityConflict": "share priority 10"},
		},
		{
			name:  "extra default",
			facts: routeFacts{Conflict: &extraDefault},
			want:  map[string]string{"Ready": "False/ExtraDefault", "PriorityConflict": "True/ExtraDefault"},
		},
		{
			name:  "shadowed is informational",
			facts: routeFacts{Shadow: &shadow},
			want:  map[string]string{"Ready": "True/Ready", "Shadowed": "True/ShadowedByEarlierRoutes"},
			inMsg: map[string]string{"Shadowed": `selects 2 clusters, but earlier route "early" matches all`},
		},
		{
			name:  "push credentials delivered is informational",
			facts: routeFacts{Push: []string{"legacy", "old"}, Matched: []string{"c1"}},
			want:  map[string]string{"Ready": "True/Ready", "AgentCredentials": "False/PushCredentialsDelivered"},
			inMsg: map[string]string{"AgentCredentials": `registries "legacy", "old" have no agent credentials and opt in`},
		},
		{
			name:  "push credentials withheld is informational",
			facts: routeFacts{Withheld: []string{"legacy"}, Matched: []string{"c1"}},
			want:  map[string]string{"Ready": "True/Ready", "AgentCredentials": "False/NoAgentCredentials"},
			inMsg: map[string]string{"AgentCredentials": `registry "legacy" has push credentials only, which stay on the hub`},
		},
		{
			name:  "failed delivery",
			facts: routeFacts{Matched: []string{"c1", "c2"}, Failed: []string{"c2"}, Pending: []string{"c2"}},
			want:  map[string]string{"Ready": "False/DeliveryFailed", "Written": "False/DeliveryFailed", "Delivered": "False/WorkPending"},
			inMsg: map[string]string{"Written": `1 of 2 clusters, e.g. "c2"`},
		},
		{
			name:  "sample is bounded",
			facts: routeFacts{Matched: many},
			want:  map[string]string{"Ready": "True/Ready"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &v1alpha1.OCIStorageRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Generation: 3}}
			// A previous status: a stale condition, and a Ready whose transition time must move only
			// when its status changes.
			then := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
			r.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Ready", LastTransitionTime: then}, {Type: "Shadowed", Status: "True", Reason: "x", LastTransitionTime: then}}
			st := routeStatus(r, tc.facts)
			if st.ObservedGeneration != 3 || st.MatchedClusters != int32(len(tc.facts.Matched)) || len(st.MatchedClusterSample) != min(len(tc.facts.Matched), sampleSize) {
				t.Errorf("observedGeneration %d matched %d sample %v", st.ObservedGeneration, st.MatchedClusters, st.MatchedClusterSample)
			}
			for typ, want := range tc.want {
				c := meta.FindStatusCondition(st.Conditions, typ)
				got := ""
				if c != nil {
					got = string(c.Status) + "/" + c.Reason
					if c.ObservedGeneration != 3 {
						t.Errorf("%s: observedGeneration %d", typ, c.ObservedGeneration)
					}
				}
				if got != want {
					t.Errorf("%s = %q, want %q", typ, got, want)
				}
			}
			for typ, want := range tc.inMsg {
				if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || !strings.Contains(c.Message, want) {
					t.Errorf("%s message %+v does not contain %q", typ, c, want)
				}
			}
			ready := meta.FindStatusCondition(st.Conditions, "Ready")
			if unchanged := ready.Status == metav1.ConditionTrue; unchanged != ready.LastTransitionTime.Equal(&then) {
				t.Errorf("Ready %s: transition time %v (was %v)", ready.Status, ready.LastTransitionTime, then)
			}
		})
	}
}

func TestClusterStatus(t *testing.T) {
	res := routing.Resolution{Cluster: "eu-01", Route: "eu", Registries: []string{"mirror", "source"}, MatchedBy: routing.MatchedBy{Criterion: routing.BySelector, Selector: 1}}
	delivered := v1alpha1.ClusterOCIStorageStatus{Route: "old", Chain: []string{"source"}, Work: "eu-01/oci-chain-ws", Active: "source", Waiting: 2}
	for _, tc := range []struct {
		name      string
		obs       v1alpha1.ClusterOCIStorageStatus
		res       routing.Resolution
		kept      string
		failed    error
		delivery  chainDelivery
		wantRoute string
		wantChain string
		wantReady string
		wantInMsg string
		wantBy    string
	}{
		{name: "delivered", obs: delivered, res: res, delivery: chainDelivery{Applied: true}, wantRoute: "eu", wantChain: "mirror,source", wantReady: "True/Delivered",
			wantInMsg: `the chain of route "eu" is delivered in ManifestWork eu-01/oci-chain-ws`, wantBy: "spec.clusterSelectors[1]"},
		{name: "written, not applied", obs: delivered, res: res, delivery: chainDelivery{Why: "the work agent last reported generation 1, not 2"},
			wantRoute: "eu", wantChain: "mirror,source", wantReady: "False/WorkPending",
			wantInMsg: "waiting for the cluster's work agent to apply ManifestWork eu-01/oci-chain-ws (the work agent last reported generation 1, not 2)"},
		{name: "not reporting", obs: delivered, res: res, delivery: chainDelivery{Applied: true, Silent: &notReporting{Cluster: "eu-01", Status: metav1.ConditionUnknown, Reason: "ManagedClusterLeaseUpdateStopped"}},
			wantRoute: "eu", wantChain: "mirror,source", wantReady: "Unknown/ClusterNotReporting", wantInMsg: `cluster "eu-01" has not reported since`},
		{name: "no route", obs: delivered, res: routing.Resolution{Cluster: "eu-01"}, wantReady: "False/NoRoute", wantInMsg: "create a default route"},
		{name: "last good chain kept", obs: delivered, res: res, kept: "mirror", delivery: chainDelivery{Applied: true}, wantRoute: "old", wantChain: "source", wantReady: "False/LastGoodChainKept",
			wantInMsg: `names registry "mirror", which cannot be used; the chain delivered before (source) stays`},
		{name: "nothing delivered before", res: res, kept: "mirror", wantReady: "False/LastGoodChainKept", wantInMsg: "has none"},
		{name: "write failed", obs: delivered, res: res, failed: errors.New("namespace eu-01 not found"), wantRoute: "old", wantChain: "source",
			wantReady: "False/DeliveryFailed", wantInMsg: "namespace eu-01 not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := clusterStatus(tc.obs, tc.res, "10m", "eu-01/oci-chain-ws", tc.kept, nil, tc.failed, tc.delivery, nil)
			c := meta.FindStatusCondition(st.Conditions, "Ready")
			if st.Route != tc.wantRoute || join(st.Chain) != tc.wantChain || c == nil || string(c.Status)+"/"+c.Reason != tc.wantReady || !strings.Contains(c.Message, tc.wantInMsg) {
				t.Errorf("route %q chain %v ready %+v; want %q %q %s ~%q", st.Route, st.Chain, c, tc.wantRoute, tc.wantChain, tc.wantReady, tc.wantInMsg)
			}
			if tc.wantBy != "" && st.MatchedBy != tc.wantBy {
				t.Errorf("matchedBy %q, want %q", st.MatchedBy, tc.wantBy)
			}
			if st.Active != tc.obs.Active || st.Waiting != tc.obs.Waiting {
				t.Errorf("the agent's fields were not kept: %+v", st)
			}
		})
	}
}

func join(s []string) string { return strings.Join(s, ",") }
