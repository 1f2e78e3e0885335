package puller_test

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	. "github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// resumeCase is a pull of a 3-layer artifact of 16 MiB layers through two registries holding the
// same content: "a", behind a proxy that freezes it once 6 MiB of blobs went through (mid-blob),
// and "b", behind a proxy of the case's options.
type resumeCase struct {
	a, b     *testbed.Proxy
	cache    *Cache
	p        *Puller
	manifest ocispec.Descriptor
	layers   []ocispec.Descriptor
	attempts []Attempt
	// read is the bytes read from registries per blob, across attempts.
	mu   sync.Mutex
	read map[digest.Digest]int64
}

const (
	resumeLayers    = 3
	freezeAfter     = 6 << 20
	resumeLayerSize = 16 << 20
)

func newResumeCase(t *testing.T, b testbed.ProxyOptions) *resumeCase {
	t.Helper()
	regA, regB := testbed.StartRegistryT(t, testbed.RegistryOptions{}), testbed.StartRegistryT(t, testbed.RegistryOptions{})
	rc := &resumeCase{read: map[digest.Digest]int64{}}
	for _, r := range []*testbed.Registry{regA, regB} {
		m, err := r.PushRandom(t.Context(), "apps/big", "1.0", resumeLayers, resumeLayerSize, 11)
		if err != nil {
			t.Fatal(err)
		}
		if rc.manifest.Digest != "" && m.Digest != rc.manifest.Digest {
			t.Fatalf("the two registries hold %s and %s; want one artifact", rc.manifest.Digest, m.Digest)
		}
		rc.manifest = m
	}
	rc.layers = fetchManifest(t, regA, "apps/big", rc.manifest).Layers
	// Throttled so that every layer is mid-way when the registry freezes.
	rc.a = testbed.StartProxyT(t, regA, testbed.ProxyOptions{FreezeAfter: freezeAfter, BytesPerSecond: 16 << 20})
	t.Cleanup(func() { _ = regA.Thaw() })
	rc.b = testbed.StartProxyT(t, regB, b)
	cache, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cache.Close() })
	rc.cache = cache
	rc.p, err = NewWithCache([]Registry{rc.a.Entry("a"), rc.b.Entry("b")}, cache, Options{
		IdleTimeout: 2 * time.Second, // a loaded machine may pause a healthy registry for a second
		OnAttempt:   func(a Attempt) { rc.attempts = append(rc.attempts, a) },
		OnRead: func(desc ocispec.Descriptor, n int) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.read[desc.Digest] += int64(n)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *resumeCase) pull(t *testing.T) (Status, error) {
	t.Helper()
	return rc.p.Pull(t.Context(), Artifact{Repository: "apps/big", Tag: "1.0"})
}

// redownloaded is the bytes of layers read more than once, across attempts.
func (rc *resumeCase) redownloaded() int64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var n int64
	for _, l := range rc.layers {
		n += rc.read[l.Digest] - l.Size
	}
	return n
}

func (rc *resumeCase) tried() []string {
	var out []string
	for _, a := range rc.attempts {
		out = append(out, a.Registry+":"+string(a.Class))
	}
	return out
}

// TestPullResumesBrokenBlobAtNextRegistry: registry a freezes mid-blob; the pull fails over to b,
// which is asked only for the bytes a did not send (Range), and the artifact verifies: nothing is
// downloaded twice.
func TestPullResumesBrokenBlobAtNextRegistry(t *testing.T) {
	rc := newResumeCase(t, testbed.ProxyOptions{})
	st, err := rc.pull(t)
	if err != nil {
		t.Fatalf("Pull = %v; want the artifact from b", err)
	}
	if got := strings.Join(rc.tried(), " "); got != "a:Unreachable b:" {
		t.Fatalf("tried %s; want a:Unreachable b:", got)
	}
	if st.State != Pulled || st.Registry != "b" {
		t.Fatalf("status %+v; want pulled from b", st)
	}
	fromA := rc.a.BlobBytes.Load()
	if fromA < freezeAfter || fromA >= resumeLayers*resumeLayerSize {
		t.Fatalf("a sent %d bytes of blobs; want the pull to break mid-way, past %d", fromA, freezeAfter)
	}
	// Each layer a had started is resumed (on a loaded machine one may not have started).
	if got := rc.b.PartialGets.Load(); got < 1 || got > resumeLayers {
		t.Errorf("b answered %d range requests with 206; want one per layer broken mid-blob (1 to %d)", got, resumeLayers)
	}
	if got := rc.redownloaded(); got != 0 {
		t.Errorf("%d bytes were downloaded twice; want 0", got)
	}
	// What a's proxy passed but the puller never read (in flight when it gave up) comes from b.
	if got, want := rc.b.BlobBytes.Load(), int64(resumeLayers*resumeLayerSize)-fromA; got > want+resumeLayers<<16 {
		t.Errorf("b sent %d bytes of blobs; want about the %d a did not send", got, want)
	}
	assertLayersHeld(t, rc)
	t.Logf("a sent %d MiB before it froze, b the remaining %d MiB in %d range requests", fromA>>20, rc.b.BlobBytes.Load()>>20, rc.b.PartialGets.Load())
}

// TestPullResumeFallsBackWhenRangeIgnored: the next registry ignores Range (it answers 200 with
// the whole blob); the pull downloads the broken blobs in full from it, and the artifact verifies.
func TestPullResumeFallsBackWhenRangeIgnored(t *testing.T) {
	rc := newResumeCase(t, testbed.ProxyOptions{IgnoreRange: true})
	st, err := rc.pull(t)
	if err != nil || st.State != Pulled || st.Registry != "b" {
		t.Fatalf("Pull = %+v, %v; want the artifact from b", st, err)
	}
	if rc.b.RangeGets.Load() < 1 || rc.b.PartialGets.Load() != 0 {
		t.Errorf("b got %d range requests, answered %d with 206; want some, none (it ignores Range)", rc.b.RangeGets.Load(), rc.b.PartialGets.Load())
	}
	if got := rc.b.BlobBytes.Load(); got != resumeLayers*resumeLayerSize {
		t.Errorf("b sent %d bytes of blobs; want every layer whole, %d", got, resumeLayers*resumeLayerSize)
	}
	if got := rc.redownloaded(); got <= 0 {
		t.Errorf("%d bytes downloaded twice; want what a had sent, again", got)
	}
	assertLayersHeld(t, rc)
}

// TestPullResumeRejectsCorruptResumedBytes: the next registry flips the first byte it sends of
// each resumed range; the whole digest fails, b is IntegrityMismatch naming the resume, and
// nothing of it is committed or kept to resume again.
func TestPullResumeRejectsCorruptResumedBytes(t *testing.T) {
	rc := newResumeCase(t, testbed.ProxyOptions{Tamper: testbed.BlobPaths})
	st, err := rc.pull(t)
	if err == nil || st.State != Failed {
		t.Fatalf("Pull = %+v, %v; want it to fail: b's bytes are corrupt", st, err)
	}
	if got := strings.Join(rc.tried(), " "); got != "a:Unreachable b:IntegrityMismatch" {
		t.Fatalf("tried %s; want a:Unreachable b:IntegrityMismatch", got)
	}
	if rc.b.PartialGets.Load() == 0 {
		t.Fatalf("b answered no range request with 206; the case did not resume")
	}
	if msg := rc.attempts[1].Err.Error(); !strings.Contains(msg, "resumed at byte") {
		t.Errorf("b's failure %q does not say the download was resumed", msg)
	}
	for _, l := range rc.layers {
		if ok, _ := rc.cache.Exists(t.Context(), l); ok {
			t.Errorf("layer %s is committed; want nothing of a corrupt download", l.Digest)
		}
		if n := rc.cache.Partial(l.Digest); n != 0 {
			t.Errorf("layer %s keeps %d bytes to resume; want the corrupt download thrown away", l.Digest, n)
		}
	}
}

// assertLayersHeld checks that the cache holds every layer and the artifact under its tag.
func assertLayersHeld(t *testing.T, rc *resumeCase) {
	t.Helper()
	desc, err := rc.p.Resolve(t.Context(), Artifact{Repository: "apps/big", Tag: "1.0"})
	if err != nil || desc.Digest != rc.manifest.Digest {
		t.Fatalf("the cache resolves apps/big:1.0 to %s, %v; want %s", desc.Digest, err, rc.manifest.Digest)
	}
	for _, l := range rc.layers {
		checkBlob(t, rc.cache, l)
		if n := rc.cache.Partial(l.Digest); n != 0 {
			t.Errorf("layer %s: %d bytes still kept to resume; want none once committed", l.Digest, n)
		}
	}
}

// TestPullFetchesLayersInParallel: with the default concurrency, four layers are all being
// downloaded at once: each starts before any finishes (the registry is throttled so that each
// download lasts two seconds).
func TestPullFetchesLayersInParallel(t *testing.T) {
	const layers, size = 4, 2 << 20
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	if _, err := reg.PushRandom(t.Context(), "apps/four", "1.0", layers, size, 3); err != nil {
		t.Fatal(err)
	}
	slow := testbed.StartProxyT(t, reg, testbed.ProxyOptions{BytesPerSecond: 1 << 20})
	var (
		mu                  sync.Mutex
		read                = map[digest.Digest]int64{}
		startedBeforeFinish int
		finished            bool
	)
	p, err := New([]Registry{slow.Entry("slow")}, t.TempDir(), Options{OnRead: func(desc ocispec.Descriptor, n int) {
		if desc.MediaType != testbed.LayerMediaType {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, ok := read[desc.Digest]; !ok && !finished {
			startedBeforeFinish++
		}
		if read[desc.Digest] += int64(n); read[desc.Digest] == desc.Size {
			finished = true
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := p.Pull(t.Context(), Artifact{Repository: "apps/four", Tag: "1.0"}); err != nil {
		t.Fatal(err)
	}
	if startedBeforeFinish != layers {
		t.Errorf("%d layers started before the first finished; want all %d at once", startedBeforeFinish, layers)
	}
	t.Logf("%d layers of %d MiB at 1 MiB/s each: %s", layers, size>>20, time.Since(start).Round(time.Millisecond))
}

// fetchManifest returns the image manifest m of repository in reg.
func fetchManifest(t *testing.T, reg *testbed.Registry, repository string, m ocispec.Descriptor) ocispec.Manifest {
	t.Helper()
	rc, err := reg.Repository(repository).Fetch(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var manifest ocispec.Manifest
	if err := json.NewDecoder(rc).Decode(&manifest); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// checkBlob checks that the cache holds exactly the content of desc, hashing it as a stream.
func checkBlob(t *testing.T, c *Cache, desc ocispec.Descriptor) {
	t.Helper()
	rc, err := c.Fetch(t.Context(), desc)
	if err != nil {
		t.Fatalf("blob %s: %v", desc.Digest, err)
	}
	defer rc.Close()
	v := digest.SHA256.Digester()
	n, err := io.Copy(v.Hash(), rc)
	if err != nil {
		t.Fatal(err)
	}
	if n != desc.Size || v.Digest() != desc.Digest {
		t.Errorf("the cache holds %d bytes of %s for blob %s; want %d", n, v.Digest(), desc.Digest, desc.Size)
	}
}
