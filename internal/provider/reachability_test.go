package provider

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
)

func TestReachOfAndWording(t *testing.T) {
	now := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-ago)); return &t }
	statuses := map[string]v1alpha1.ClusterOCIStorageStatus{
		"apac-02": {Chain: []string{"harbor-apac", "harbor-central"}, Reachability: []v1alpha1.RegistryReachability{
			{Registry: "harbor-apac", State: "Unreachable", ProbedAt: at(2 * time.Minute)}, {Registry: "harbor-central", State: "Reachable", ProbedAt: at(time.Minute)}}},
		"apac-01": {Chain: []string{"harbor-apac", "harbor-central"}, Reachability: []v1alpha1.RegistryReachability{
			{Registry: "harbor-apac", State: "Unauthorized", ProbedAt: at(30 * time.Second)}}},
		"apac-03": {Chain: []string{"harbor-apac"}}, // not reported
		"eu-01":   {Chain: []string{"harbor-central"}},
	}
	reports, chained := reachOf(statuses, "harbor-apac")
	if len(reports) != 2 || reports[0].Cluster != "apac-01" || reports[1].Cluster != "apac-02" {
		t.Fatalf("reports %+v, want apac-01 then apac-02", reports)
	}
	if len(chained) != 3 || chained[0] != "apac-01" || chained[2] != "apac-03" {
		t.Fatalf("chained %v", chained)
	}
	if got := describeStates(reports); got != "Unauthorized from 1 and Unreachable from 1" {
		t.Errorf("describeStates: %q", got)
	}
	if got := probedAgo(reports, now); got != "probed 2m ago" {
		t.Errorf("probedAgo: %q, want the oldest, 2m", got)
	}
	if got := probedAgo([]clusterReach{{Cluster: "x", State: "TLS"}}, now); got != "probe time not reported" {
		t.Errorf("probedAgo without a time: %q", got)
	}
	for d, want := range map[time.Duration]string{40 * time.Second: "40s", 90 * time.Second: "1m", 3 * time.Hour: "3h"} {
		if got := ago(d); got != want {
			t.Errorf("ago(%s) = %q, want %q", d, got, want)
		}
	}
}
