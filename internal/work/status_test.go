package work

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestApplied(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, gen int64, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, ObservedGeneration: gen, Reason: "R", Message: msg}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		ok    bool
		why   string
	}{
		{name: "nothing reported", why: "has not reported it yet"},
		{name: "applied at the generation", conds: []metav1.Condition{cond(workv1.WorkApplied, "True", 3, ""), cond(workv1.WorkAvailable, "True", 3, "")}, ok: true},
		{name: "applied, availability not reported yet", conds: []metav1.Condition{cond(workv1.WorkApplied, "True", 3, "")}, ok: true},
		{name: "applied at an older generation", conds: []metav1.Condition{cond(workv1.WorkApplied, "True", 2, "")}, why: "last reported generation 2, not 3"},
		{name: "not applied", conds: []metav1.Condition{cond(workv1.WorkApplied, "False", 3, "namespaces \"x\" not found")}, why: `not applied: namespaces "x" not found`},
		{name: "applied and gone", conds: []metav1.Condition{cond(workv1.WorkApplied, "True", 3, ""), cond(workv1.WorkAvailable, "False", 3, "1 of 2 missing")},
			why: "applied but not available: 1 of 2 missing"},
		{name: "unavailable at an older generation does not count", conds: []metav1.Condition{cond(workv1.WorkApplied, "True", 3, ""), cond(workv1.WorkAvailable, "False", 2, "old")}, ok: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: workv1.ManifestWorkStatus{Conditions: tc.conds}}
			ok, why := Applied(w)
			if ok != tc.ok || !strings.Contains(why, tc.why) || ok && why != "" {
				t.Errorf("Applied = %v %q, want %v ~%q", ok, why, tc.ok, tc.why)
			}
		})
	}
}
