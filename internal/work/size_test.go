package work_test

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/internal/work"
)

func workOf(payload int) *workv1.ManifestWork {
	raw := []byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"` + strings.Repeat("x", payload) + `"}}`)
	return &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "c"},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}}
}

func TestCheck(t *testing.T) {
	small := workOf(1000)
	if err := work.Check(small, work.Part{What: "x", Size: 1000}); err != nil {
		t.Errorf("a 1 KiB work: %v", err)
	}
	// Just under and just over the budget, measured by the same serialization.
	base, _ := work.Size(workOf(0))
	if err := work.Check(workOf(work.Budget - base)); err != nil {
		t.Errorf("a work of exactly the budget: %v", err)
	}
	err := work.Check(workOf(work.Budget-base+1),
		work.Part{What: `registry "a"'s CA bundle`, Size: 100 << 10}, work.Part{What: "none", Size: 0},
		work.Part{What: `registry "b"'s CA bundle`, Size: 350 << 10}, work.Part{What: "c", Size: 1}, work.Part{What: "d", Size: 2})
	var tl *work.TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("a work one byte over the budget: %v, want TooLargeError", err)
	}
	if tl.Size != work.Budget+1 || tl.Work != "c/w" || len(tl.Parts) != 3 || tl.Parts[0].What != `registry "b"'s CA bundle` || tl.Parts[2].What != "d" {
		t.Errorf("error %+v", tl)
	}
	for _, want := range []string{"c/w", "451 KiB", "450 KiB", "500 KiB", `registry "b"'s CA bundle (350 KiB), registry "a"'s CA bundle (100 KiB)`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}
