package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// TestAccOwnerConflicts: two configurations share a workspace, each with its own provider owner
// setting. The engine writes the owner on what it creates; a conflict with an object of the other
// owner is then a plan error naming that owner, with nothing written: the same priority as its
// route, a second source registry, a name it holds. Without the setting the same conflicts are
// today's warnings. Importing the other owner's object warns, naming it.
func TestAccOwnerConflicts(t *testing.T) {
	ws := testWorkspace(t, testHub(t))
	f := newHubFixtures(t, ws)
	provider := func(owner string) string {
		if owner == "" {
			return "provider \"fleet\" {}\n"
		}
		return fmt.Sprintf("provider \"fleet\" {\n  owner = %q\n}\n", owner)
	}
	registry := func(label, name string) string {
		return fmt.Sprintf("resource \"fleet_oci_registry\" %q {\n  name = %q\n  workspace = %q\n  role = \"source\"\n  reference = \"%s.example.com/fleet\"\n}\n", label, name, ws, name)
	}
	route := func(label, name, registry string) string {
		return fmt.Sprintf("resource \"fleet_oci_route\" %q {\n  name = %q\n  workspace = %q\n  priority = 10\n  cluster_selectors = [{ match_labels = { team = %q } }]\n  registries = [%s]\n}\n",
			label, name, ws, name, registry)
	}

	a := newCLIWorkdir(t)
	// An owner that is no owner: a plan error naming the setting, nothing written.
	d, failed := a.plan(provider("team a!") + route("r", "route-a", `"src-a"`))
	if bad := only(d, "Invalid Attribute Value Match"); !failed || len(bad) != 1 || !strings.Contains(bad[0].Detail, "owner") || !strings.Contains(bad[0].Detail, "team-a/infra") {
		t.Errorf("plan with owner \"team a!\": want the error on owner, got %v", d)
	}

	a.apply(provider("team-a/infra") + registry("src", "src-a") + route("r", "route-a", "fleet_oci_registry.src.name"))
	t.Cleanup(a.destroy)
	obj, err := f.GetRoute("route-a")
	if err != nil || obj == nil {
		t.Fatalf("route-a on the hub: %v, %v", obj, err)
	}
	if got := obj.GetAnnotations()[hub.ConfigurationOwnerAnnotation]; got != "team-a/infra" {
		t.Errorf("route-a's owner annotation = %q, want team-a/infra", got)
	}
	if got, want := obj.GetLabels()[hub.ConfigurationOwnerLabel], hub.ConfigurationOwnerLabelValue("team-a/infra"); got != want || !strings.HasPrefix(got, "team-a-infra-") {
		t.Errorf("route-a's owner label = %q, want %q (team-a-infra-<hash>)", got, want)
	}

	b := newCLIWorkdir(t)
	conflicting := registry("src", "src-b") + route("r", "route-b", `"src-a"`) // the route is planned whatever the registry's plan says
	d, failed = b.plan(provider("team-b") + conflicting)
	if !failed {
		t.Fatalf("team-b's plan of a conflicting route and source did not fail: %v", d)
	}
	wantErrors := map[string][]string{
		"Priority already taken": {`route "route-a"`, `The configuration with owner "team-a/infra" manages route "route-a"`, "Nothing was written"},
		"Second source registry": {`"src-a"`, `the configuration with owner "team-a/infra" manages it`, "Nothing was written"},
	}
	for summary, parts := range wantErrors {
		var found *cliDiag
		for i := range d {
			if d[i].Summary == summary && d[i].Severity == "error" {
				found = &d[i]
			}
		}
		if found == nil {
			t.Errorf("team-b's plan: no error %q in %v", summary, d)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(found.Detail, p) {
				t.Errorf("error %q does not say %q:\n%s", summary, p, found.Detail)
			}
		}
	}
	if obj, err := f.GetRoute("route-b"); err != nil || obj != nil {
		t.Errorf("route-b on the hub after a failed plan: %v, %v", obj, err)
	}

	// Without the setting, the other configuration's objects may be this plan's: warnings.
	d, failed = b.plan(provider("") + conflicting)
	expectWarnings(t, "without owner", d, failed, []string{"Priority already taken", "Second source registry"}, map[string][]string{
		"Priority already taken": {`Route "route-a" is managed by Terraform`},
		"Second source registry": {`"src-a" on the hub, managed by Terraform`},
	})

	// A name the other owner holds is an error naming it.
	d, failed = b.plan(provider("team-b") + route("r", "route-a", `"src-a"`))
	if !failed || len(only(d, "OCIStorageRoute already exists")) != 1 || !strings.Contains(only(d, "OCIStorageRoute already exists")[0].Detail, `owner "team-a/infra"`) {
		t.Errorf("team-b's plan of route-a: want the error that owner team-a/infra holds it, got %v", d)
	}

	// Importing the other owner's route warns, naming it.
	d, failed = b.plan(provider("team-b") + route("r", "route-a", `"src-a"`) + fmt.Sprintf("import {\n  to = fleet_oci_route.r\n  id = \"%s/route-a\"\n}\n", ws))
	expectWarnings(t, "import", d, failed, []string{`Importing an object of owner "team-a/infra"`}, map[string][]string{
		`Importing an object of owner "team-a/infra"`: {"OCIStorageRoute " + ws + "/route-a", "terraform state rm"},
	})
}
