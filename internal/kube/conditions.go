// Package kube holds what the hub controller and the agent share about the objects they
// reconcile: conditions with a declared polarity, Ready derived from them in one place, and
// Events on their transitions.
package kube

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	corev1 "k8s.io/api/core/v1"
)

// ReadyCondition is the condition every reconciled kind summarises itself with.
const ReadyCondition = "Ready"

// Set sets one condition stamped with the object's generation; its transition time changes
// only when its status does (apimachinery's meta.SetStatusCondition).
func Set(conds *[]metav1.Condition, gen int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: gen})
}

// SetBool is Set with True for true and False for false.
func SetBool(conds *[]metav1.Condition, gen int64, typ string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	Set(conds, gen, typ, s, reason, message)
}

// Keep removes every condition whose type is not listed.
func Keep(conds *[]metav1.Condition, types ...string) {
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

// Polarity says when a condition is normal.
type Polarity int

const (
	// NormalTrue conditions (Ready, Delivered, Written, SpecValid) are normal when True; False or
	// Unknown is abnormal.
	NormalTrue Polarity = iota
	// AbnormalTrue conditions (PriorityConflict, Stalled, Degraded) are abnormal when True.
	AbnormalTrue
)

// Declared is one condition a kind owns, with its polarity.
type Declared struct {
	Type     string
	Polarity Polarity
}

// Summary declares the conditions a kind derives Ready from, in the order a person fixes them:
// the first abnormal one gives Ready its status (False, or Unknown when it is Unknown), reason
// and message. Conditions the kind sets but that do not count for Ready (informational ones,
// such as a route being shadowed) are simply not listed.
type Summary []Declared

// Abnormal reports whether c is abnormal under polarity p.
func Abnormal(c metav1.Condition, p Polarity) bool {
	if p == AbnormalTrue {
		return c.Status == metav1.ConditionTrue
	}
	return c.Status != metav1.ConditionTrue
}

// Ready sets the Ready condition of conds from the declared ones: the first abnormal one, or
// True with okReason and okMessage when none is. A declared condition that is absent does not
// count. It returns the Ready condition set.
func (s Summary) Ready(conds *[]metav1.Condition, gen int64, okReason, okMessage string) metav1.Condition {
	for _, d := range s {
		c := meta.FindStatusCondition(*conds, d.Type)
		if c == nil || !Abnormal(*c, d.Polarity) {
			continue
		}
		status := metav1.ConditionFalse
		if c.Status == metav1.ConditionUnknown {
			status = metav1.ConditionUnknown
		}
		Set(conds, gen, ReadyCondition, status, c.Reason, c.Message)
		return *meta.FindStatusCondition(*conds, ReadyCondition)
	}
	Set(conds, gen, ReadyCondition, metav1.ConditionTrue, okReason, okMessage)
	return *meta.FindStatusCondition(*conds, ReadyCondition)
}

// Transitions records an Event on obj for each listed condition whose status or reason differs
// between before and after (a condition that appears counts as a change): Normal when the
// condition is now normal, Warning when not. A nil recorder records none.
func Transitions(rec events.EventRecorder, obj runtime.Object, before, after []metav1.Condition, watched ...Declared) {
	if rec == nil {
		return
	}
	for _, d := range watched {
		now := meta.FindStatusCondition(after, d.Type)
		if now == nil {
			continue
		}
		if was := meta.FindStatusCondition(before, d.Type); was != nil && was.Status == now.Status && was.Reason == now.Reason {
			continue
		}
		kind := corev1.EventTypeNormal
		if Abnormal(*now, d.Polarity) {
			kind = corev1.EventTypeWarning
		}
		rec.Eventf(obj, nil, kind, now.Reason, "Reconcile", "%s", now.Message)
	}
}

// SetStalled sets the Stalled condition of conds from a reconcile's err (StalledBy), after the
// reconciler has set its other conditions: when err stalls, Stalled is True with the stall's
// reason and message and Ready follows it (Stalled is abnormal when True: Ready False, the same
// reason and message); when it does not, Stalled is removed, so that the first reconcile that
// no longer stalls clears it.
func SetStalled(conds *[]metav1.Condition, gen int64, err error) {
	reason, msg, ok := StalledBy(err)
	if !ok {
		meta.RemoveStatusCondition(conds, StalledCondition)
		return
	}
	Set(conds, gen, StalledCondition, metav1.ConditionTrue, reason, msg)
	Set(conds, gen, ReadyCondition, metav1.ConditionFalse, reason, msg)
}
