package provider

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestAccOCIReplication_fleet measures a mirror that gets an artifact late, on the real parts:
// the suite's hub with the routing, pull-status and replication reconcilers, a workload cluster
// with OCM's work agent and `fleet-controller agent`, two real registries (source and mirror).
// The cluster's route tries the mirror first and waits 1 s for replication. An artifact whose
// manifest says when it was created is pushed to the source only: the first pull waits at the
// mirror, fails over and is served by the source, so the mirror's OCIReplication shows it
// waiting. It is replicated to the mirror 6 s after the push, and a second pull of it is served
// by the mirror: the lag measured must be the replication delay (6 s and the seconds the second
// pull took), and the hub must then write nothing while nothing changes. The lags are wall-clock
// figures (the manifest's annotation, the agents' pull times), so the bounds are wall-clock
// readings taken as the test goes: a clock the machine steps mid-test moves both alike.
//
// Then, through the CLI under test: fleet_oci_replication shows the figures; a route whose
// replication_wait (1 s) is below the mirror's p95 gets the "Clusters will fail over" warning
// naming the route, the registry, the lag, the wait, its cluster and the source it fails over
// to; a wait above the p95, or a first registry without figures, gets none.
func TestAccOCIReplication_fleet(t *testing.T) {
	fl := startAccFleet(t, []string{"routing", "pull-status", "replication"})
	ws, cluster, f, hc := fl.ws, fl.cluster, fl.fixtures, fl.hub
	mirror := testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: "push-s3cret", Users: map[string]string{"puller": "pull-s3cret"}})
	if err := hc.Create(t.Context(), testkit.RegistrySecret(ws, "mirror", registrysecret.RoleMirror, registrysecret.Registry{
		Reference: mirror.Reference("fleet"), BasicHTTP: true, Username: mirror.Username, Password: mirror.Password,
		AgentUsername: "puller", AgentPassword: "pull-s3cret",
	})); err != nil {
		t.Fatal(err)
	}
	f.PatchRoute("edge", `{"spec":{"registries":["mirror","source"],"replicationWait":"1s"}}`)
	storage := func() (v1alpha1.ClusterOCIStorage, error) {
		var s v1alpha1.ClusterOCIStorage
		return s, hc.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: cluster}, &s)
	}
	testkit.Eventually(t, time.Minute, "the chain mirror, source on the cluster's ClusterOCIStorage", func() error {
		s, err := storage()
		if err == nil && !slices.Equal(s.Status.Chain, []string{"mirror", "source"}) {
			err = fmt.Errorf("chain %v", s.Status.Chain)
		}
		return err
	}, fl.logs.String)

	now := time.Now()
	created := now.UTC().Truncate(time.Second)
	sinceCreated := func() time.Duration { return now.Sub(created) + time.Since(now) } // monotonic past now
	desc := pushCreated(t, fl.registry, "fleet/apps/web", "v1", created, []byte("the web app, v1, with its creation time"))
	requestPull(t, hc, cluster, ws, "pull-web-1", "web-1")
	replicationOf := func(reg string) (v1alpha1.OCIReplication, error) {
		var r v1alpha1.OCIReplication
		return r, hc.Get(t.Context(), client.ObjectKey{Namespace: ws, Name: reg}, &r)
	}
	testkit.Eventually(t, time.Minute, "the mirror's OCIReplication shows the artifact waiting", func() error {
		r, err := replicationOf("mirror")
		if err != nil {
			return err
		}
		if st := r.Status; st.Waiting != 1 || st.Measured != 0 || st.P95 != nil || len(st.Artifacts) != 1 || st.Artifacts[0].Digest != desc.Digest.String() {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}, fl.spoke.AgentLog, fl.logs.String)
	sawWaiting := time.Now().Round(0) // the wall clock alone, as the agents read it
	r, _ := replicationOf("mirror")
	if a := r.Status.Artifacts[0]; a.PushedAtFrom != v1alpha1.PushedAtAnnotation || !a.PushedAt.Time.Equal(created) || a.FirstPulled != nil {
		t.Fatalf("waiting artifact %+v, want pushed at %v from its annotation and no first pull", a, created)
	}

	const delay = 6 * time.Second
	time.Sleep(delay - sinceCreated())
	if _, err := mirror.Copy(t.Context(), fl.registry, "fleet/apps/web", "v1"); err != nil {
		t.Fatal(err)
	}
	replicated := time.Now().Round(0)
	requestPull(t, hc, cluster, ws, "pull-web-2", "web-2")
	testkit.Eventually(t, time.Minute, "the mirror's lag measured", func() error {
		r, err := replicationOf("mirror")
		if err != nil {
			return err
		}
		if st := r.Status; st.Waiting != 0 || st.Measured != 1 || st.P95 == nil || st.P50 == nil {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	}, fl.spoke.AgentLog, fl.logs.String)
	measured := time.Now().Round(0)
	r, _ = replicationOf("mirror")
	lag := r.Status.P95.Duration
	t.Logf("mirror: replicated %v after the push, lag measured %v (p50 %v), %v after the replication", replicated.Sub(created).Round(time.Millisecond), lag, r.Status.P50.Duration, measured.Sub(replicated).Round(time.Millisecond))
	// The mirror's first pull came after the replication and before its figures did (the API
	// server keeps times to the second).
	lo, hi := max(delay, replicated.Truncate(time.Second).Sub(created)), measured.Sub(created)
	if lag < lo || lag > hi || r.Status.P50.Duration != lag {
		t.Fatalf("mirror lag p50 %v p95 %v, want both between %v (the replication) and %v (the figures)", r.Status.P50.Duration, lag, lo, hi)
	}
	src, err := replicationOf("source")
	if err != nil || src.Status.Measured != 1 || src.Status.P95.Duration > sawWaiting.Sub(created) || src.Status.P95.Duration >= lo {
		t.Fatalf("source's OCIReplication %+v (%v): want its one artifact measured under %v (it served the first pull, before the mirror waited)", src.Status, err, min(lo, sawWaiting.Sub(created)))
	}

	// Steady state: nothing changes, nothing is written.
	versions := func() []string {
		var l v1alpha1.OCIReplicationList
		if err := hc.List(t.Context(), &l, client.InNamespace(ws)); err != nil {
			t.Fatal(err)
		}
		var v []string
		for _, o := range l.Items {
			v = append(v, o.Name+"@"+o.ResourceVersion)
		}
		return v
	}
	before := versions()
	time.Sleep(6 * time.Second)
	if after := versions(); !slices.Equal(before, after) {
		t.Fatalf("OCIReplications written in steady state: %v then %v", before, after)
	}

	w := newCLIWorkdir(t)
	w.apply(fmt.Sprintf(`
data "fleet_oci_replication" "mirror" {
  workspace = %[1]q
  registry  = "mirror"
}

data "fleet_oci_pull_status" "web" {
  workspace = %[1]q
  artifact  = "apps/web:v1"
}

output "mirror" { value = data.fleet_oci_replication.mirror }
output "pulls"  { value = data.fleet_oci_pull_status.web.pulls }
`, ws))
	out, err := w.run("output", "-json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Mirror struct {
			Value struct {
				Measured   int64  `json:"measured"`
				Waiting    int64  `json:"waiting"`
				P95        string `json:"p95"`
				P95Seconds int64  `json:"p95_seconds"`
				Window     string `json:"window"`
				Artifacts  []struct {
					Digest       string `json:"digest"`
					PushedAt     string `json:"pushed_at"`
					PushedAtFrom string `json:"pushed_at_from"`
					LagSeconds   int64  `json:"lag_seconds"`
				} `json:"artifacts"`
			} `json:"value"`
		} `json:"mirror"`
		Pulls struct {
			Value []struct {
				Name     string `json:"name"`
				Registry string `json:"registry"`
				Size     int64  `json:"size"`
				PushedAt string `json:"pushed_at"`
			} `json:"value"`
		} `json:"pulls"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := got.Mirror.Value
	if m.Measured != 1 || m.Waiting != 0 || m.P95Seconds != int64(lag/time.Second) || m.P95 != lag.String() || m.Window != "24h0m0s" || len(m.Artifacts) != 1 ||
		m.Artifacts[0].Digest != desc.Digest.String() || m.Artifacts[0].PushedAt != created.Format(time.RFC3339) || m.Artifacts[0].PushedAtFrom != "Annotation" || m.Artifacts[0].LagSeconds != m.P95Seconds {
		t.Fatalf("fleet_oci_replication: %+v, want 1 measured at %v, pushed %v", m, lag, created.Format(time.RFC3339))
	}
	registries := map[string]string{}
	for _, p := range got.Pulls.Value {
		if p.PushedAt != created.Format(time.RFC3339) || p.Size <= desc.Size {
			t.Errorf("pull %s: size %d, pushed_at %q; want more than the manifest's %d bytes and %s", p.Name, p.Size, p.PushedAt, desc.Size, created.Format(time.RFC3339))
		}
		registries[p.Name] = p.Registry
	}
	if registries["web-1"] != "source" || registries["web-2"] != "mirror" {
		t.Errorf("pulls served by %v, want web-1 by source, web-2 by mirror", registries)
	}

	f.Registry("nodata", "mirror", "nodata.example.com/fleet")
	route := func(wait string, registries ...string) string {
		rs, _ := json.Marshal(registries)
		return fmt.Sprintf(`
resource "fleet_oci_route" "late" {
  name             = "late"
  workspace        = %q
  priority         = 5
  cluster_names    = [%q]
  registries       = %s
  replication_wait = %q
}
`, ws, cluster, rs, wait)
	}
	d, failed := w.plan(route("1s", "mirror", "source"))
	expectWarnings(t, "wait below the mirror's p95", d, failed, []string{predictedFailoverSummary}, map[string][]string{predictedFailoverSummary: {
		`Route "late" waits 1s (replication_wait) for registry "mirror"`, "p95 " + lag.String(), "over 1 artifact(s) pushed in the last 24h0m0s",
		"1 cluster(s) it wins (" + cluster + ")", `pull from registry "source"`, "Raise replication_wait above " + lag.String()}})
	d, failed = w.plan(route("10m", "mirror", "source"))
	expectWarnings(t, "wait above the p95", d, failed, []string{predictedFailoverSummary}, nil)
	d, failed = w.plan(route("0s", "nodata", "source"))
	expectWarnings(t, "no figures for the first registry", d, failed, []string{predictedFailoverSummary}, nil)
}

// pushCreated pushes an artifact of one layer whose manifest says it was created at created.
func pushCreated(t *testing.T, r *testbed.Registry, repository, tag string, created time.Time, data []byte) ocispec.Descriptor {
	t.Helper()
	a, err := testbed.NewArtifactAt(created, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PushArtifact(t.Context(), repository, tag, a); err != nil {
		t.Fatal(err)
	}
	return a.Manifest
}

// requestPull asks cluster, through a pull work, to pull apps/web:v1 as the OCIPull name.
func requestPull(t *testing.T, hc client.Client, cluster, ws, work, name string) {
	t.Helper()
	w, err := pullwork.New(cluster, work, ws, pullwork.Request{Name: name, Spec: v1alpha1.OCIPullSpec{Repository: "apps/web", Tag: "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hc.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
}
