package crd

import (
	"testing"
)

func TestCRDs(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range crds {
		if got[c.Name] {
			t.Errorf("%s is embedded twice", c.Name)
		}
		got[c.Name] = true
		if len(c.Spec.Versions) == 0 {
			t.Errorf("%s has no versions", c.Name)
		}
	}
	for _, name := range []string{
		"managedclusters.cluster.open-cluster-management.io",
		"managedclustersets.cluster.open-cluster-management.io",
		"managedclustersetbindings.cluster.open-cluster-management.io",
		"placements.cluster.open-cluster-management.io",
		"placementdecisions.cluster.open-cluster-management.io",
		"manifestworks.work.open-cluster-management.io",
	} {
		if !got[name] {
			t.Errorf("missing %s; embedded: %v", name, got)
		}
	}
	if crds[0].Spec.Group != "cluster.open-cluster-management.io" {
		t.Errorf("first CRD is %s, want OCM's first", crds[0].Name)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "leading separator", in: "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: as.x.io\n", want: []string{"as.x.io"}},
		{name: "two documents", in: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: as.x.io\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: bs.x.io\n", want: []string{"as.x.io", "bs.x.io"}},
		{name: "other kind", in: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", wantErr: true},
		{name: "bad yaml", in: "metadata: [", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crds, err := parse([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			var names []string
			for _, c := range crds {
				names = append(names, c.Name)
			}
			if len(names) != len(tc.want) {
				t.Fatalf("names = %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Errorf("names = %v, want %v", names, tc.want)
				}
			}
		})
	}
}
