package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

// TestSetFailovers: the count is every failover; the list is the last ones that fit OCM's 1,024
// bytes for a feedback value.
func TestSetFailovers(t *testing.T) {
	var fs []v1alpha1.Failover
	for i := range 16 {
		fs = append(fs, v1alpha1.Failover{Registry: fmt.Sprintf("%s-%02d", strings.Repeat("r", 200), i), Reason: "Unreachable"})
	}
	for _, tc := range []struct {
		name     string
		in       []v1alpha1.Failover
		wantLast int // how many of the last are kept
	}{
		{"none", nil, 0},
		{"two short", []v1alpha1.Failover{{Registry: "a", Reason: "TLS"}, {Registry: "b", Reason: "Unauthorized"}}, 2},
		{"sixteen long", fs, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st v1alpha1.OCIPullStatus
			st.SetFailovers(tc.in)
			raw, _ := json.Marshal(st.Failovers)
			if int(st.FailoverCount) != len(tc.in) || len(st.Failovers) != tc.wantLast || len(raw) > v1alpha1.MaxFeedbackJSON {
				t.Fatalf("count %d, %d kept (%d bytes); want %d, %d", st.FailoverCount, len(st.Failovers), len(raw), len(tc.in), tc.wantLast)
			}
			if tc.wantLast > 0 && st.Failovers[tc.wantLast-1] != tc.in[len(tc.in)-1] {
				t.Errorf("the last failover is not kept: %+v", st.Failovers)
			}
		})
	}
}
