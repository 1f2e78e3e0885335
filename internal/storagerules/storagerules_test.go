package storagerules_test

import (
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/storagerules"
	"github.com/umkim/terraform-provider-fleet/internal/storagerules/storageruletest"
)

// TestCases: the checks refuse exactly the cases the site refuses, naming the field (the site
// simulator's CRDs are tested against the same table in internal/testbed/sitesim).
func TestCases(t *testing.T) {
	for _, c := range storageruletest.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got := storageruletest.Check(c)
			switch {
			case c.Refused == "" && len(got) > 0:
				t.Errorf("refused %v, want accepted", got)
			case c.Refused != "" && (len(got) != 1 || got[0].Field != c.Refused):
				t.Errorf("findings %v, want one on %s", got, c.Refused)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	eight := int64(8)
	got := storagerules.Stripe(&eight, nil)
	if len(got) != 1 || !strings.Contains(got[0].Reason, "8+1") || !strings.Contains(got[0].Reason, "1+0, 1+1, 2+1, 4+1, 1+2, 2+2, 4+2") {
		t.Errorf("Stripe(8, nil) = %v", got)
	}
	if got := storagerules.DeploymentName(strings.Repeat("a", 64)); len(got) != 1 || got[0].Field != "name" || !strings.Contains(got[0].Reason, "64 characters") {
		t.Errorf("DeploymentName(64) = %v", got)
	}
	if got := storagerules.DeploymentName(strings.Repeat("a", 63)); got != nil {
		t.Errorf("DeploymentName(63) = %v", got)
	}
}
