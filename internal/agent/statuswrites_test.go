package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/agent"
	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// releaseWrites watches one FleetRelease and records every write of it the API server makes:
// the phase of each status write, and the writes that changed neither status nor finalizers.
type releaseWrites struct {
	events <-chan watch.Event
	last   *v1alpha1.FleetRelease
	// phases are the phases of the status writes, in order.
	phases []v1alpha1.ReleasePhase
	// idle counts the writes that changed nothing a reconciler owns.
	idle int
}

func watchRelease(t *testing.T, name string) *releaseWrites {
	t.Helper()
	c, err := client.NewWithWatch(spoke.Config, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := c.Watch(ctx, &v1alpha1.FleetReleaseList{}, client.InNamespace(ocichain.Namespace), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &releaseWrites{events: w.ResultChan()}
}

// until records the writes until done accepts the release, or for the whole of d when done is
// nil; it fails the test when done never does.
func (rw *releaseWrites) until(t *testing.T, d time.Duration, done func(*v1alpha1.FleetRelease) bool) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case <-timeout:
			if done != nil {
				t.Fatalf("after %s: release %+v; status writes %v", d, rw.last, rw.phases)
			}
			return
		case ev, ok := <-rw.events:
			if !ok {
				t.Fatal("the watch ended")
			}
			rel, isRelease := ev.Object.(*v1alpha1.FleetRelease)
			if !isRelease || ev.Type == watch.Deleted {
				continue
			}
			if rw.last != nil {
				switch {
				case !equality.Semantic.DeepEqual(rw.last.Status, rel.Status):
					rw.phases = append(rw.phases, rel.Status.Phase)
				case slices.Equal(rw.last.Finalizers, rel.Finalizers) && rw.last.Generation == rel.Generation:
					rw.idle++
				}
			}
			rw.last = rel
			if done != nil && done(rel) {
				return
			}
		}
	}
}

// reconciles is how many times the agent's release controller reconciled so far.
func reconciles() float64 {
	return testkit.Counter("controller_runtime_reconcile_total", map[string]string{"controller": "fleetrelease"})
}

// A release that goes Installing → Deployed writes its status once per state, whatever the
// number of reconciles: one write for Installing, one for Deployed, none in steady state, and
// one for a wait on a values Secret however often the wait looks again.
func TestReleaseWritesStatusOncePerChange(t *testing.T) {
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/writes", testbed.HelloChart("writes", "0.1.0"))
	putChain(t, c, ocichain.Chain{Workspace: "writes", Route: "edge", Registries: []puller.Registry{reg.entry("only")}})
	runAgent(t)
	pull := newPull(t, c, ocichain.Namespace, "writes", v1alpha1.OCIPullSpec{Workspace: "writes", Repository: "charts/writes", Tag: "0.1.0"})
	waitFor(t, c, pull, 30*time.Second, "pulled", pulled)

	rw := watchRelease(t, "writes")
	start := reconciles()
	rel := &v1alpha1.FleetRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: "writes"},
		Spec: v1alpha1.FleetReleaseSpec{Workspace: "writes", App: "writes", Pull: "writes", ReleaseName: "writes", Namespace: "app-writes",
			Values: &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"one"}`)}},
	}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRelease(t, c, rel) })
	isDeployed := func(gen int64) func(*v1alpha1.FleetRelease) bool {
		return func(r *v1alpha1.FleetRelease) bool {
			return r.Status.Phase == v1alpha1.ReleaseDeployed && r.Status.ObservedGeneration == gen
		}
	}
	rw.until(t, 30*time.Second, isDeployed(1))
	// Steady: the pull's labels change, which reconciles the release; it writes nothing.
	testkit.Update(t, c, pull, func(p *v1alpha1.OCIPull) { metav1.SetMetaDataLabel(&p.ObjectMeta, "touched", "yes") })
	rw.until(t, 2*time.Second, nil)
	installed := reconciles() - start
	t.Logf("install: %v reconciles, status writes %v, %d writes that changed nothing", installed, rw.phases, rw.idle)
	if want := []v1alpha1.ReleasePhase{v1alpha1.ReleaseInstalling, v1alpha1.ReleaseDeployed}; !slices.Equal(rw.phases, want) || rw.idle != 0 {
		t.Errorf("status writes of an install: %v and %d that changed nothing; want %v and none", rw.phases, rw.idle, want)
	}
	if installed < 2 {
		t.Errorf("%v reconciles; want at least 2 (the install, the pull's change)", installed)
	}

	// A values Secret not on the cluster: the release waits, looking again with back-off
	// (kube.Wait: after 0.25–0.5, 0.5–1, 1–2, 2–4 s), and writes Pending once.
	rw.phases, start = nil, reconciles()
	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) {
		r.Spec.ValuesSecretRef = &v1alpha1.SecretKeyRef{Name: "writes-values", Key: "values.yaml"}
	})
	rw.until(t, 5*time.Second, nil)
	waited := reconciles() - start
	t.Logf("wait for a values Secret, 5 s: %v reconciles, status writes %v, %d that changed nothing", waited, rw.phases, rw.idle)
	if !slices.Equal(rw.phases, []v1alpha1.ReleasePhase{v1alpha1.ReleasePending}) || rw.idle != 0 {
		t.Errorf("status writes of a release waiting 5 s: %v and %d that changed nothing; want [Pending] and none", rw.phases, rw.idle)
	}
	if waited < 4 || waited > 6 {
		t.Errorf("%v reconciles of a waiting release in 5 s; want 4–6 (the wait backs off from 0.5 s)", waited)
	}
	if rw.last.Status.Phase != v1alpha1.ReleasePending || rw.last.Status.ObservedGeneration != 2 {
		t.Errorf("waiting status %+v; want Pending for generation 2", rw.last.Status)
	}

	// Back to values from spec only: an upgrade, Installing → Deployed, two writes.
	rw.phases = nil
	testkit.Update(t, c, rel, func(r *v1alpha1.FleetRelease) { r.Spec.ValuesSecretRef = nil })
	rw.until(t, 30*time.Second, isDeployed(3))
	rw.until(t, time.Second, nil)
	if want := []v1alpha1.ReleasePhase{v1alpha1.ReleaseInstalling, v1alpha1.ReleaseDeployed}; !slices.Equal(rw.phases, want) || rw.idle != 0 {
		t.Errorf("status writes of an upgrade: %v and %d that changed nothing; want %v and none", rw.phases, rw.idle, want)
	}
	if got := rw.last.Status; got.Revision != 2 {
		t.Errorf("upgraded status %+v; want revision 2", got)
	}
}

// A pull that goes Pulling → Pulled writes its status twice: Pulling at once from the live
// writer (a new generation), Pulled from the reconcile's one deferred write; then nothing while
// chain events reconcile it.
func TestPullWritesStatusOncePerChange(t *testing.T) {
	c := startSpoke(t, ocichain.Namespace)
	reg := startRegistry(t)
	reg.PushChartT(t, "charts/pullwrites", testbed.HelloChart("pullwrites", "0.1.0"))
	chain := ocichain.Chain{Workspace: "pullwrites", Route: "edge", Registries: []puller.Registry{reg.entry("only")}}
	putChain(t, c, chain)
	runAgent(t)

	wc, err := client.NewWithWatch(spoke.Config, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := wc.Watch(ctx, &v1alpha1.OCIPullList{}, client.InNamespace(ocichain.Namespace), client.MatchingFields{"metadata.name": "pullwrites"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var states []v1alpha1.OCIPullState
	var last *v1alpha1.OCIPull
	record := func(d time.Duration) {
		for timeout := time.After(d); ; {
			select {
			case <-timeout:
				return
			case ev := <-w.ResultChan():
				p, ok := ev.Object.(*v1alpha1.OCIPull)
				if !ok || ev.Type == watch.Deleted {
					continue
				}
				if last != nil {
					states = append(states, p.Status.State) // every write after the create
				}
				last = p
			}
		}
	}
	newPull(t, c, ocichain.Namespace, "pullwrites", v1alpha1.OCIPullSpec{Workspace: "pullwrites", Repository: "charts/pullwrites", Tag: "0.1.0"})
	record(5 * time.Second)
	// A change of the chain Secret's labels reconciles the pull, which writes nothing.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ocichain.Namespace, Name: ocichain.SecretName(chain.Workspace)}}
	testkit.Update(t, c, secret, func(s *corev1.Secret) { metav1.SetMetaDataLabel(&s.ObjectMeta, "touched", "yes") })
	record(2 * time.Second)
	t.Logf("a pull to Pulled and a chain event: status writes %v", states)
	want := []v1alpha1.OCIPullState{v1alpha1.OCIPullPulling, v1alpha1.OCIPullPulled}
	if !slices.Equal(states, want) {
		t.Errorf("status writes of a pull: %v; want %v", states, want)
	}
	if last == nil || last.Status.State != v1alpha1.OCIPullPulled || last.Status.ObservedGeneration != 1 {
		t.Errorf("pull %+v; want Pulled for generation 1", last)
	}
}
