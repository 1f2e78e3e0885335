package crd_test

import (
	"os"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	storagev1alpha2 "github.com/umkim/terraform-provider-fleet/api/storage/v1alpha2"
	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/config/crd"
	sitev1alpha2 "github.com/umkim/terraform-provider-fleet/internal/testbed/sitesim/v1alpha2"
)

// TestSchemesKnowEveryCRD: each API package's AddToScheme registers every kind controller-gen
// generated a definition for, and its list kind, so a kind left out of addKnownTypes fails here.
func TestSchemesKnowEveryCRD(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, storagev1alpha2.AddToScheme, sitev1alpha2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	hub, err := crd.ParseFS(crd.FS, "bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	site, err := crd.ParseFS(os.DirFS("../../internal/testbed/sitesim/crd"), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(hub, site)
	if len(all) != 16 {
		t.Fatalf("%d definitions, want 16 (12 of ours, 4 site)", len(all))
	}
	for _, c := range all {
		for _, v := range c.Spec.Versions {
			for _, kind := range []string{c.Spec.Names.Kind, c.Spec.Names.ListKind} {
				gvk := schema.GroupVersionKind{Group: c.Spec.Group, Version: v.Name, Kind: kind}
				if !s.Recognizes(gvk) {
					t.Errorf("%s: the scheme does not know %s", c.Name, gvk)
				}
			}
		}
	}
}
