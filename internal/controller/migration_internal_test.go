package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/storagework"
)

// TestLegacyNames pins the names works had before issue 19, which migration looks up.
func TestLegacyNames(t *testing.T) {
	app := &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
	if got := legacyAppNames(app); got != (appwork.Names{Work: "app-team-a-web", ValuesSecret: "app-team-a-web-values"}) {
		t.Errorf("legacy app names %+v", got)
	}
	if got := legacyStorageWorkName("storage", "site-a"); got != "sbsd-storage-site-a" {
		t.Errorf("legacy storage work %q", got)
	}
	long := &v1alpha1.FleetApp{ObjectMeta: metav1.ObjectMeta{Namespace: "ws", Name: strings.Repeat("n", 253)}}
	got := legacyAppNames(long)
	if len(got.Work) != 253 || !strings.HasPrefix(got.Work, "app-ws-nnn") || got.Work[242] != '-' ||
		len(got.ValuesSecret) != 253 || !strings.HasSuffix(got.ValuesSecret, "-values") {
		t.Errorf("long legacy names %q (%d), %q (%d)", got.Work, len(got.Work), got.ValuesSecret, len(got.ValuesSecret))
	}
}

// TestCheckOwner: a work is its owner annotation's; a storage work without one its labels'; any
// other work without one nobody's; the error names the holder's kind and name.
func TestCheckOwner(t *testing.T) {
	work := func(component string, annotations, labels map[string]string) *workv1.ManifestWork {
		l := map[string]string{hub.ComponentLabel: component}
		for k, v := range labels {
			l[k] = v
		}
		return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "eu-01", Name: "w", UID: types.UID("u"), Labels: l, Annotations: annotations}}
	}
	owned := map[string]string{hub.OwnerAnnotation: "team/a-web"}
	storageLabels := map[string]string{storagework.DeploymentNamespaceLabel: "storage", storagework.DeploymentNameLabel: "site-a"}
	for _, tc := range []struct {
		name   string
		w      *workv1.ManifestWork
		owner  string
		holder string // "" when owner's
	}{
		{"absent", &workv1.ManifestWork{}, "team-a/web", ""},
		{"owner's", work(appwork.Component, owned, nil), "team/a-web", ""},
		{"another app's", work(appwork.Component, owned, nil), "team-a/web", "FleetApp team/a-web"},
		{"another route's", work(RouteComponent, owned, nil), "team-a/web", "FleetAppRoute team/a-web"},
		{"no annotation", work(appwork.Component, nil, nil), "team-a/web", "no fleet.umkim.io/owner annotation"},
		{"legacy storage work by labels", work(storagework.Component, nil, storageLabels), "storage/site-a", ""},
		{"legacy storage work of another", work(storagework.Component, nil, storageLabels), "storage/site-b", "StorageSiteDeployment storage/site-a"},
		{"annotation over labels", work(storagework.Component, map[string]string{hub.OwnerAnnotation: "x/y"}, storageLabels), "storage/site-a", "StorageSiteDeployment x/y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkOwner(tc.w, tc.owner)
			if tc.holder == "" {
				if err != nil {
					t.Fatalf("checkOwner: %v", err)
				}
				return
			}
			taken, ok := nameTaken(err)
			if !ok || !strings.Contains(taken.Error(), tc.holder) || !strings.Contains(taken.Error(), "ManifestWork eu-01/w") {
				t.Fatalf("checkOwner = %v, want NameTaken naming %q", err, tc.holder)
			}
		})
	}
}
