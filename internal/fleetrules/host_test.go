package fleetrules_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/fleetrules"
)

// RoutePathCase is one case of testdata/route-paths.json, which the CRD test on the hub
// (api/v1alpha1) reads too.
type routePathCase struct {
	Path string `json:"path"`
	OK   bool   `json:"ok"`
	Case string `json:"case"`
}

func routePathCases(t *testing.T) []routePathCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/route-paths.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []routePathCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestRoutePath pins CheckRoutePath, RoutePathPattern and the CRD's rule on spec.path to the
// same cases: the CRD's rule is self.matches() of RoutePathPattern, and the function and the
// pattern agree on every case.
func TestRoutePath(t *testing.T) {
	re := regexp.MustCompile(fleetrules.RoutePathPattern)
	for _, c := range routePathCases(t) {
		err := fleetrules.CheckRoutePath(c.Path)
		if (err == nil) != c.OK {
			t.Errorf("%s: CheckRoutePath(%q) = %v, want ok=%v", c.Case, c.Path, err, c.OK)
		}
		if err != nil && !strings.Contains(err.Error(), "path") {
			t.Errorf("%s: error %q does not name the path", c.Case, err)
		}
		if re.MatchString(c.Path) != c.OK {
			t.Errorf("%s: RoutePathPattern matches %q = %v, want %v", c.Case, c.Path, !c.OK, c.OK)
		}
	}

	raw, err := os.ReadFile("../../config/crd/bases/fleet.umkim.io_fleetapproutes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Spec struct {
								Properties struct {
									Path struct {
										Pattern     string                           `json:"pattern"`
										Validations []struct{ Rule, Message string } `json:"x-kubernetes-validations"`
									} `json:"path"`
								} `json:"properties"`
							} `json:"spec"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%d versions", len(crd.Spec.Versions))
	}
	p := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties.Path
	want := "self.matches('" + fleetrules.RoutePathPattern + "')"
	if len(p.Validations) != 1 || p.Validations[0].Rule != want || !strings.Contains(p.Validations[0].Message, "path") {
		t.Errorf("CRD spec.path validations %+v, want one rule %s with a message naming the path (edit the marker in api/v1alpha1/fleetapproute_types.go, then make generate)", p.Validations, want)
	}
}

func FuzzCheckRoutePath(f *testing.F) {
	re := regexp.MustCompile(fleetrules.RoutePathPattern)
	for _, s := range []string{"/", "/a/b", "/a//b", "/%41", "/./", "/x`)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if (fleetrules.CheckRoutePath(s) == nil) != re.MatchString(s) {
			t.Errorf("CheckRoutePath(%q) = %v, pattern matches %v", s, fleetrules.CheckRoutePath(s), re.MatchString(s))
		}
	})
}

func TestCheckHubHost(t *testing.T) {
	for _, c := range []struct {
		host, domain string
		want         string // in the error; "" for none
	}{
		{"apps.example.com", "apps.example.com", ""},
		{"shop.apps.example.com", "apps.example.com", ""},
		{"a.b.apps.example.com", "apps.example.com", ""},
		{"*.apps.example.com", "apps.example.com", "wildcard"},
		{"example.com", "apps.example.com", "not the site's hub gateway domain"},
		{"evilapps.example.com", "apps.example.com", "not the site's hub gateway domain"},
		{"apps.example.com.evil.io", "apps.example.com", "not the site's hub gateway domain"},
		{"shop.b.example.com", "apps.example.com", "not the site's hub gateway domain"},
		{"shop.apps.example.com", "", "no domain"},
	} {
		err := fleetrules.CheckHubHost(c.host, c.domain)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckHubHost(%q, %q) = %v, want %q", c.host, c.domain, err, c.want)
		}
	}
}

func TestHostBlocker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	route := func(ws, name string, age int, host, path string, mode v1alpha1.RouteMode) v1alpha1.FleetAppRoute {
		return v1alpha1.FleetAppRoute{
			ObjectMeta: metav1.ObjectMeta{Namespace: ws, Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(-age) * time.Minute))},
			Spec:       v1alpha1.FleetAppRouteSpec{Mode: mode, Host: host, Path: path}}
	}
	deleted := func(r v1alpha1.FleetAppRoute) v1alpha1.FleetAppRoute {
		now := metav1.NewTime(t0)
		r.DeletionTimestamp = &now
		return r
	}
	const h = "shop.b.example.com"
	bRoot := route("b", "shop", 10, h, "/", v1alpha1.RouteHub)
	for _, c := range []struct {
		name   string
		others []v1alpha1.FleetAppRoute
		route  v1alpha1.FleetAppRoute
		want   string // namespace/name of the blocker, "" for none
	}{
		{"alone", nil, bRoot, ""},
		{"another workspace, other path", []v1alpha1.FleetAppRoute{bRoot}, route("a", "admin", 1, h, "/admin", v1alpha1.RouteSite), "b/shop"},
		{"another workspace, same path", []v1alpha1.FleetAppRoute{bRoot}, route("a", "shop", 1, h, "/", v1alpha1.RouteHub), "b/shop"},
		{"another workspace, other host", []v1alpha1.FleetAppRoute{bRoot}, route("a", "shop", 1, "shop.a.example.com", "/", v1alpha1.RouteHub), ""},
		{"the holder itself, listed", []v1alpha1.FleetAppRoute{bRoot, route("a", "admin", 1, h, "/admin", v1alpha1.RouteSite)}, bRoot, ""},
		{"same workspace, other path", []v1alpha1.FleetAppRoute{bRoot}, route("b", "api", 1, h, "/api", v1alpha1.RouteHub), ""},
		{"same workspace, same path", []v1alpha1.FleetAppRoute{bRoot}, route("b", "copy", 1, h, "", v1alpha1.RouteSite), "b/shop"},
		{"older route of another workspace holds", []v1alpha1.FleetAppRoute{route("a", "old", 20, h, "/x", v1alpha1.RouteSite)}, bRoot, "a/old"},
		{"same age: by namespace", []v1alpha1.FleetAppRoute{route("a", "z", 10, h, "/x", v1alpha1.RouteSite)}, bRoot, "a/z"},
		{"same age, same workspace and path: by name", []v1alpha1.FleetAppRoute{route("b", "a", 10, h, "/", v1alpha1.RouteSite)}, bRoot, "b/a"},
		{"mode none claims nothing", []v1alpha1.FleetAppRoute{route("a", "old", 20, h, "/", v1alpha1.RouteNone)}, bRoot, ""},
		{"a route being deleted claims nothing", []v1alpha1.FleetAppRoute{deleted(route("a", "old", 20, h, "/", v1alpha1.RouteSite))}, bRoot, ""},
		{"an invalid path claims nothing", []v1alpha1.FleetAppRoute{route("a", "old", 20, h, "/x`)", v1alpha1.RouteSite)}, bRoot, ""},
		{"a route that claims nothing is blocked by nothing", []v1alpha1.FleetAppRoute{bRoot}, route("a", "off", 1, h, "/", v1alpha1.RouteNone), ""},
		{"the holder workspace's first route gone: the next oldest holds",
			[]v1alpha1.FleetAppRoute{deleted(bRoot), route("a", "next", 5, h, "/x", v1alpha1.RouteSite)}, route("b", "api", 1, h, "/api", v1alpha1.RouteHub), "a/next"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if b := fleetrules.HostBlocker(c.others, &c.route); b != nil {
				got = b.Namespace + "/" + b.Name
				if msg := fleetrules.HostTakenMessage(&c.route, b); !strings.Contains(msg, got) || !strings.Contains(msg, h) {
					t.Errorf("message %q names neither %s nor %s", msg, got, h)
				}
			}
			if got != c.want {
				t.Errorf("HostBlocker = %q, want %q", got, c.want)
			}
		})
	}
}
