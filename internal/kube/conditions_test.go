package kube

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	corev1 "k8s.io/api/core/v1"
)

func TestSummaryReady(t *testing.T) {
	s := Summary{{Type: "Valid"}, {Type: "Conflict", Polarity: AbnormalTrue}, {Type: "Delivered"}}
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: typ + " says " + reason}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  string // Status/Reason: message
	}{
		{name: "all normal", conds: []metav1.Condition{cond("Valid", "True", "Ok"), cond("Conflict", "False", "None"), cond("Delivered", "True", "Applied")}, want: "True/Fine: all good"},
		{name: "absent ones do not count", conds: []metav1.Condition{cond("Valid", "True", "Ok")}, want: "True/Fine: all good"},
		{name: "abnormal-true", conds: []metav1.Condition{cond("Valid", "True", "Ok"), cond("Conflict", "True", "Shared"), cond("Delivered", "False", "Pending")},
			want: "False/Shared: Conflict says Shared"},
		{name: "first in declared order, not in slice order", conds: []metav1.Condition{cond("Delivered", "False", "Pending"), cond("Valid", "False", "Invalid")},
			want: "False/Invalid: Valid says Invalid"},
		{name: "unknown stays unknown", conds: []metav1.Condition{cond("Valid", "True", "Ok"), cond("Delivered", "Unknown", "NotReporting")},
			want: "Unknown/NotReporting: Delivered says NotReporting"},
		{name: "undeclared conditions do not count", conds: []metav1.Condition{cond("Shadowed", "True", "Shadowed"), cond("Info", "False", "X")}, want: "True/Fine: all good"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tc.conds...)
			got := s.Ready(&conds, 4, "Fine", "all good")
			if s := string(got.Status) + "/" + got.Reason + ": " + got.Message; s != tc.want || got.ObservedGeneration != 4 {
				t.Errorf("Ready %s (generation %d), want %s", s, got.ObservedGeneration, tc.want)
			}
			if c := meta.FindStatusCondition(conds, ReadyCondition); c == nil || c.Reason != got.Reason {
				t.Errorf("Ready not set in the conditions: %v", conds)
			}
		})
	}
}

func TestSetKeepsTransitionTime(t *testing.T) {
	then := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	conds := []metav1.Condition{{Type: "Delivered", Status: "True", Reason: "Applied", LastTransitionTime: then}}
	SetBool(&conds, 2, "Delivered", true, "Applied", "again")
	if c := conds[0]; !c.LastTransitionTime.Equal(&then) || c.Message != "again" || c.ObservedGeneration != 2 {
		t.Errorf("unchanged status: %+v", c)
	}
	Set(&conds, 3, "Delivered", metav1.ConditionUnknown, "NotReporting", "silent")
	if c := conds[0]; c.LastTransitionTime.Equal(&then) || c.Status != metav1.ConditionUnknown {
		t.Errorf("changed status kept its transition time: %+v", c)
	}
	Keep(&conds, "Ready")
	if len(conds) != 0 {
		t.Errorf("Keep left %v", conds)
	}
}

func TestTransitions(t *testing.T) {
	watched := []Declared{{Type: "Ready"}, {Type: "Stalled", Polarity: AbnormalTrue}}
	before := []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Ok"}, {Type: "Stalled", Status: "False", Reason: "No"}}
	for _, tc := range []struct {
		name  string
		after []metav1.Condition
		want  []string
	}{
		{name: "nothing changed", after: before},
		{name: "message only", after: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Ok", Message: "other"}, before[1]}},
		{name: "Ready went false, Stalled true", after: []metav1.Condition{{Type: "Ready", Status: "False", Reason: "Broken", Message: "it broke"}, {Type: "Stalled", Status: "True", Reason: "Bad", Message: "stuck"}},
			want: []string{"Warning Broken it broke", "Warning Bad stuck"}},
		{name: "reason changed, still normal", after: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Better", Message: "fine"}, before[1]},
			want: []string{"Normal Better fine"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			Transitions(rec, &corev1.ConfigMap{}, before, tc.after, watched...)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("events %q, want %q", got, tc.want)
			}
		})
	}
	Transitions(nil, &corev1.ConfigMap{}, nil, before, watched...) // no recorder: no panic
}

func TestSetStalled(t *testing.T) {
	conds := []metav1.Condition{{Type: ReadyCondition, Status: metav1.ConditionTrue, Reason: "Online", Message: "fine"}}
	stall := Stall("WorkTooLarge", errors.New("the work is 600 KiB"))
	SetStalled(&conds, 3, stall)
	s, r := meta.FindStatusCondition(conds, StalledCondition), meta.FindStatusCondition(conds, ReadyCondition)
	if s == nil || s.Status != metav1.ConditionTrue || s.Reason != "WorkTooLarge" || s.Message != "the work is 600 KiB" || s.ObservedGeneration != 3 {
		t.Fatalf("Stalled = %+v, want True/WorkTooLarge at generation 3", s)
	}
	if r.Status != metav1.ConditionFalse || r.Reason != "WorkTooLarge" || r.Message != "the work is 600 KiB" {
		t.Errorf("Ready = %+v, want it to follow Stalled", r)
	}
	// A stall joined with a wait or a failure is retried, not stalled: Stalled goes.
	for name, err := range map[string]error{
		"no error":          nil,
		"a wait":            Wait(0, "Waiting", errors.New("w")),
		"stall and failure": errors.Join(stall, errors.New("write failed")),
	} {
		c := append([]metav1.Condition(nil), conds...)
		SetStalled(&c, 4, err)
		if meta.FindStatusCondition(c, StalledCondition) != nil {
			t.Errorf("%s: Stalled stays: %+v", name, c)
		}
	}
}
