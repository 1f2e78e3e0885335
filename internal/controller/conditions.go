package controller

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setCondition sets one condition stamped with the object's generation; its transition time
// changes only when its status does.
func setCondition(conds *[]metav1.Condition, gen int64, typ string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: message, ObservedGeneration: gen})
}

// keepConditions removes every condition whose type is not listed.
func keepConditions(conds *[]metav1.Condition, types ...string) {
	out := (*conds)[:0]
	for _, c := range *conds {
		for _, t := range types {
			if c.Type == t {
				out = append(out, c)
				break
			}
		}
	}
	*conds = out
}
