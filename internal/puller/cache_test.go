package puller_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	. "github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// openCache opens the cache in dir for the test and a puller through chain into it.
func openCache(t *testing.T, dir string, chain ...Registry) (*Cache, *Puller) {
	t.Helper()
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := NewWithCache(chain, c, Options{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// randomLayer is n pseudo-random bytes, different for each seed.
func randomLayer(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 17))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func mustPull(t *testing.T, p *Puller, a Artifact) {
	t.Helper()
	if st, err := p.Pull(t.Context(), a); err != nil || st.State != Pulled {
		t.Fatalf("pull %s: %+v, %v", a, st, err)
	}
}

// blobsIn lists the digests of the blobs in a layout, sorted.
func blobsIn(t *testing.T, dir string) []digest.Digest {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var ds []digest.Digest
	for _, e := range entries {
		ds = append(ds, digest.NewDigestFromEncoded(digest.SHA256, e.Name()))
	}
	slices.Sort(ds)
	return ds
}

// allOf is every blob of artifacts: manifests, their config and layers, sorted and unique.
func allOf(arts ...*testbed.Artifact) []digest.Digest {
	ds := []digest.Digest{ocispec.DescriptorEmptyJSON.Digest}
	for _, a := range arts {
		ds = append(ds, a.Manifest.Digest)
		ds = append(ds, digestsOf(a)...)
	}
	slices.Sort(ds)
	return slices.Compact(ds)
}

func readIndex(t *testing.T, dir string) ocispec.Index {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index ocispec.Index
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatalf("index.json does not parse: %v\n%s", err, data)
	}
	return index
}

// TestCacheOpenRemovesWhatACrashLeft: a download cut short in ingest/, a blob no manifest
// reaches and a file that is no blob are removed when the cache opens; the artifact stays.
func TestCacheOpenRemovesWhatACrashLeft(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, randomLayer(1, 32<<10), randomLayer(2, 32<<10))
	push(t, reg, "apps/web", "1.0", art)
	dir := t.TempDir()
	c, p := openCache(t, dir, reg.Entry("reg"))
	a := Artifact{Repository: "apps/web", Tag: "1.0"}
	mustPull(t, p, a)
	if !c.Opened.Clean() {
		t.Errorf("a new cache reports repairs: %+v", c.Opened)
	}
	c.Close()

	// What a kill mid-pull leaves: half a blob in ingest/, a layer committed before the
	// manifest never came, and a stray file.
	partial := randomLayer(3, 1000)
	if err := os.WriteFile(filepath.Join(dir, "ingest", digest.FromBytes(randomLayer(3, 2000)).Encoded()+"_123"), partial, 0o644); err != nil {
		t.Fatal(err)
	}
	orphan := randomLayer(4, 500)
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", digest.FromBytes(orphan).Encoded()), orphan, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", "not-a-digest"), []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}

	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := Recovery{PartialFiles: 1, PartialBytes: 1000, OrphanBlobs: 2, OrphanBytes: 500 + 5}
	if c.Opened != want {
		t.Errorf("opening found %+v, want %+v", c.Opened, want)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "ingest")); len(left) > 0 {
		t.Errorf("ingest/ holds %d files after opening, want none", len(left))
	}
	if got, want := blobsIn(t, dir), allOf(art); !reflect.DeepEqual(got, want) {
		t.Errorf("blobs after opening: %v, want the artifact's %v", got, want)
	}
	if desc, err := c.Resolve(t.Context(), a.String()); err != nil || desc.Digest != art.Manifest.Digest {
		t.Errorf("resolve %s after opening: %v, %v; want %s", a, desc.Digest, err, art.Manifest.Digest)
	}
	if s := c.Stats(); s.Artifacts != 1 || s.Bytes != sizeOf(t, dir) {
		t.Errorf("stats %+v, want 1 artifact and the %d bytes of blobs/", s, sizeOf(t, dir))
	}
}

// sizeOf is the size of the blobs in a layout.
func sizeOf(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, d := range blobsIn(t, dir) {
		info, err := os.Stat(blobFile(dir, d))
		if err != nil {
			t.Fatal(err)
		}
		n += info.Size()
	}
	return n
}

// TestCacheRebuildsAnUnreadableIndex: an index.json truncated, garbled or emptied is rebuilt from
// the blobs when the cache opens; the next pull of a cached artifact downloads no blob again and
// brings its tag back. A manifest of the index whose content is missing is dropped.
func TestCacheRebuildsAnUnreadableIndex(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, randomLayer(10, 64<<10), randomLayer(11, 16<<10))
	other := newArtifact(t, randomLayer(12, 8<<10))
	push(t, reg, "apps/web", "1.0", art)
	push(t, reg, "apps/other", "2.0", other)
	byTag := Artifact{Repository: "apps/web", Tag: "1.0"}
	byDigest := Artifact{Repository: "apps/other", Digest: other.Manifest.Digest}

	for name, corrupt := range map[string]func(data []byte) []byte{
		"truncated": func(data []byte) []byte { return data[:len(data)/2] },
		"garbled":   func([]byte) []byte { return []byte("\x00\x00not json") },
		"empty":     func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			c, p := openCache(t, dir, reg.Entry("reg"))
			mustPull(t, p, byTag)
			mustPull(t, p, byDigest)
			c.Close()
			path := filepath.Join(dir, "index.json")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, corrupt(data), 0o644); err != nil {
				t.Fatal(err)
			}

			proxy := testbed.StartProxyT(t, reg, testbed.ProxyOptions{})
			c, p = openCache(t, dir, proxy.Entry("reg"))
			if !c.Opened.IndexRebuilt || c.Opened.Reset || c.Opened.IndexError == "" {
				t.Errorf("opening a %s index: %+v, want it rebuilt, with its error", name, c.Opened)
			}
			if !c.Has(art.Manifest.Digest) || !c.Has(other.Manifest.Digest) {
				t.Errorf("after the rebuild the cache has %s: %v, %s: %v; want both", byTag, c.Has(art.Manifest.Digest), byDigest, c.Has(other.Manifest.Digest))
			}
			if _, err := c.Resolve(t.Context(), byTag.String()); !errors.Is(err, errdef.ErrNotFound) {
				t.Errorf("the tag %s survived the rebuild (%v): tags come back with the next pull", byTag, err)
			}
			mustPull(t, p, byTag)
			if n := proxy.BlobGets.Load(); n != 0 {
				t.Errorf("the pull after the rebuild downloaded %d blobs; want none, the content is cached", n)
			}
			if desc, err := c.Resolve(t.Context(), byTag.String()); err != nil || desc.Digest != art.Manifest.Digest {
				t.Errorf("resolve %s after the pull: %v, %v", byTag, desc.Digest, err)
			}
			index := readIndex(t, dir)
			if len(index.Manifests) != 2 || index.Manifests[0].Annotations[ocispec.AnnotationRefName] != byTag.String() {
				t.Errorf("index.json lists %+v; want %s tagged and %s", index.Manifests, byTag, other.Manifest.Digest)
			}
			if got, want := blobsIn(t, dir), allOf(art, other); !reflect.DeepEqual(got, want) {
				t.Errorf("blobs %v, want %v", got, want)
			}
		})
	}

	t.Run("truncated while open", func(t *testing.T) {
		// The index lives in memory: the next pull writes it whole again.
		dir := t.TempDir()
		_, p := openCache(t, dir, reg.Entry("reg"))
		mustPull(t, p, byTag)
		if err := os.Truncate(filepath.Join(dir, "index.json"), 10); err != nil {
			t.Fatal(err)
		}
		mustPull(t, p, byDigest)
		if index := readIndex(t, dir); len(index.Manifests) != 2 {
			t.Errorf("index.json after the next pull lists %d manifests, want 2", len(index.Manifests))
		}
	})

	t.Run("content missing", func(t *testing.T) {
		dir := t.TempDir()
		c, p := openCache(t, dir, reg.Entry("reg"))
		mustPull(t, p, byTag)
		mustPull(t, p, byDigest)
		c.Close()
		if err := os.Remove(blobFile(dir, art.Layers[1].Digest)); err != nil {
			t.Fatal(err)
		}
		c, p = openCache(t, dir, reg.Entry("reg"))
		if c.Opened.DroppedManifests != 1 || c.Opened.IndexRebuilt || c.Has(art.Manifest.Digest) || !c.Has(other.Manifest.Digest) {
			t.Errorf("opening with a layer of %s gone: %+v, has it: %v; want it dropped, %s kept", byTag, c.Opened, c.Has(art.Manifest.Digest), byDigest)
		}
		if got, want := blobsIn(t, dir), allOf(other); !reflect.DeepEqual(got, want) {
			t.Errorf("blobs %v, want only %s's %v: the rest of the dropped artifact is removed", got, byDigest, want)
		}
		mustPull(t, p, byTag)
		assertPulled(t, &pullCase{p: p, dest: dir}, byTag, art)
	})
}

// TestCacheResetsWhatItCannotRead: a cache whose blobs cannot be read at all (here blobs/ is a
// file) is emptied and opens, and pulls fill it again.
func TestCacheResetsWhatItCannotRead(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	art := newArtifact(t, []byte("after the reset"))
	push(t, reg, "apps/reset", "1", art)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blobs"), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, p := openCache(t, dir, reg.Entry("reg"))
	if !c.Opened.Reset || c.Opened.IndexError == "" {
		t.Errorf("opening with blobs/ a file: %+v, want a reset with its error", c.Opened)
	}
	a := Artifact{Repository: "apps/reset", Tag: "1"}
	mustPull(t, p, a)
	assertPulled(t, &pullCase{p: p, dest: dir}, a, art)
}

// TestCacheReplacesItsIndexAtomically: every write of index.json is a new file renamed over the
// old one, never an overwrite in place, and leaves no temporary file.
func TestCacheReplacesItsIndexAtomically(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	push(t, reg, "apps/a", "1", newArtifact(t, []byte("a")))
	push(t, reg, "apps/b", "1", newArtifact(t, []byte("b")))
	dir := t.TempDir()
	_, p := openCache(t, dir, reg.Entry("reg"))
	mustPull(t, p, Artifact{Repository: "apps/a", Tag: "1"})
	path := filepath.Join(dir, "index.json")
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	before, _ := old.Stat()

	mustPull(t, p, Artifact{Repository: "apps/b", Tag: "1"})
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("index.json was written in place: a kill mid-write leaves it truncated")
	}
	var index ocispec.Index
	if err := json.NewDecoder(old).Decode(&index); err != nil || len(index.Manifests) != 1 {
		t.Errorf("the old index.json, read after the new one was written: %d manifests (%v); want it whole, with 1", len(index.Manifests), err)
	}
	if got := readIndex(t, dir); len(got.Manifests) != 2 {
		t.Errorf("index.json lists %d manifests, want 2", len(got.Manifests))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".index.json") {
			t.Errorf("temporary file %s left in the layout", e.Name())
		}
	}
}

// TestCachePullReadsOnlyItsArtifact: a pull (a puller made afresh, as a reconcile makes one)
// reads no manifest of the other artifacts in the cache: with theirs gone from under it, it
// still succeeds.
func TestCachePullReadsOnlyItsArtifact(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	dir := t.TempDir()
	var arts []*testbed.Artifact
	for i := range 6 {
		art := newArtifact(t, randomLayer(uint64(100+i), 1024))
		push(t, reg, "apps/many", string(rune('a'+i)), art)
		arts = append(arts, art)
	}
	pullFresh := func(i int) error {
		p, err := New([]Registry{reg.Entry("reg")}, dir, Options{})
		if err != nil {
			return err
		}
		_, err = p.Pull(t.Context(), Artifact{Repository: "apps/many", Tag: string(rune('a' + i))})
		return err
	}
	for i := range 5 {
		if err := pullFresh(i); err != nil {
			t.Fatal(err)
		}
	}
	for _, art := range arts[:4] {
		if err := os.Remove(blobFile(dir, art.Manifest.Digest)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pullFresh(5); err != nil {
		t.Errorf("pulling a sixth artifact with four others' manifests gone: %v; the pull read them", err)
	}
	if err := pullFresh(4); err != nil {
		t.Errorf("pulling the fifth again: %v", err)
	}
}

// TestCacheCollect: past its bound, the cache removes the artifacts not kept, least recently
// used first, and only as many as it needs; never one kept, held by a running pull or used
// within the minimum age.
func TestCacheCollect(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	dir := t.TempDir()
	c, p := openCache(t, dir, reg.Entry("reg"))
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	SetCacheClock(c, func() time.Time { return clock })
	arts := map[string]*testbed.Artifact{}
	for i, name := range []string{"a", "b", "c", "d"} {
		art := newArtifact(t, randomLayer(uint64(200+i), 100<<10))
		push(t, reg, "apps/gc", name, art)
		arts[name] = art
		mustPull(t, p, Artifact{Repository: "apps/gc", Tag: name})
		clock = clock.Add(time.Minute)
	}
	full := c.Stats()
	if full.Artifacts != 4 || full.Bytes != sizeOf(t, dir) {
		t.Fatalf("stats %+v, want 4 artifacts and the %d bytes on disk", full, sizeOf(t, dir))
	}
	keep := func(names ...string) func(digest.Digest) bool {
		return func(d digest.Digest) bool {
			return slices.ContainsFunc(names, func(n string) bool { return arts[n].Manifest.Digest == d })
		}
	}
	has := func() string {
		var out []string
		for _, n := range []string{"a", "b", "c", "d"} {
			if c.Has(arts[n].Manifest.Digest) {
				out = append(out, n)
			}
		}
		return strings.Join(out, ",")
	}

	// Under the bound: nothing to do.
	if out, err := c.Collect(full.Bytes, 0, keep()); err != nil || len(out.Artifacts) != 0 || out.Bytes != 0 {
		t.Errorf("collect at the bound: %+v, %v; want nothing removed", out, err)
	}
	// 150 KiB to free: two artifacts of 100 KiB, a kept one skipped.
	bound := full.Bytes - 150<<10
	out, err := c.Collect(bound, 0, keep("a"))
	if err != nil || !reflect.DeepEqual(out.Artifacts, []digest.Digest{arts["b"].Manifest.Digest, arts["c"].Manifest.Digest}) || out.Over {
		t.Errorf("collect to %d keeping a: %+v, %v; want b then c removed (least recently used), not over", bound, out, err)
	}
	if got := has(); got != "a,d" {
		t.Errorf("the cache has %s, want a,d", got)
	}
	if got, want := blobsIn(t, dir), allOf(arts["a"], arts["d"]); !reflect.DeepEqual(got, want) {
		t.Errorf("blobs %v, want a's and d's %v", got, want)
	}
	if s := c.Stats(); s.Bytes > bound || s.Bytes != sizeOf(t, dir) || s.Bytes != full.Bytes-out.Bytes {
		t.Errorf("stats %+v after collecting %d bytes, want at most %d, as on disk (%d)", s, out.Bytes, bound, sizeOf(t, dir))
	}
	if index := readIndex(t, dir); len(index.Manifests) != 2 {
		t.Errorf("index.json lists %d manifests, want 2", len(index.Manifests))
	}

	// Nothing can go: d is held by a pull, a is used within the minimum age.
	release := Hold(c, arts["d"].Manifest.Digest)
	if err := c.Touch(arts["a"].Manifest.Digest); err != nil {
		t.Fatal(err)
	}
	out, err = c.Collect(1, 30*time.Second, keep())
	if err != nil || len(out.Artifacts) != 0 || !out.Over || has() != "a,d" {
		t.Errorf("collect with a just used and d held: %+v, %v, cache has %s; want nothing removed, still over", out, err, has())
	}
	release()
	clock = clock.Add(time.Minute)
	out, err = c.Collect(1, 30*time.Second, keep())
	if err != nil || !reflect.DeepEqual(out.Artifacts, []digest.Digest{arts["d"].Manifest.Digest, arts["a"].Manifest.Digest}) || out.Over {
		t.Errorf("collect once released and aged: %+v, %v; want d (used before a's touch) then a", out, err)
	}
	if got := blobsIn(t, dir); len(got) != 0 {
		t.Errorf("blobs left in an emptied cache: %v", got)
	}
}

// TestCacheIsOneProcess: a cache directory another process holds is refused, naming the fix;
// this process opening it twice shares one cache.
func TestCacheIsOneProcess(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := OpenCache(dir)
	if err != nil || again != c {
		t.Errorf("opening twice in one process: %p, %v; want the same cache %p", again, err, c)
	}
	again.Close()
	c.Close()

	f, err := os.Open(filepath.Join(dir, "fleet-cache.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCache(dir); !errors.Is(err, ErrCacheLocked) || !strings.Contains(err.Error(), "another process") {
		t.Errorf("opening a cache another process holds: %v, want a refusal", err)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	c, err = OpenCache(dir)
	if err != nil {
		t.Fatalf("opening once the other process let go: %v", err)
	}
	c.Close()
}

// TestPullStopsWhenTheCacheCannotWrite: the cache failing to write (its ingest folder gone
// bad, as a full disk would) is the caller's error, not a registry's: no failover, no registry
// blamed.
func TestPullStopsWhenTheCacheCannotWrite(t *testing.T) {
	reg := testbed.StartRegistryT(t, testbed.RegistryOptions{})
	push(t, reg, "apps/web", "1.0", newArtifact(t, []byte("layer")))
	dir := t.TempDir()
	var tried []string
	c, err := OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := NewWithCache([]Registry{reg.Entry("first"), reg.Entry("second")}, c, Options{OnAttempt: func(a Attempt) { tried = append(tried, a.Registry+":"+string(a.Class)) }})
	if err != nil {
		t.Fatal(err)
	}
	ingest := filepath.Join(dir, "ingest")
	if err := os.RemoveAll(ingest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ingest, nil, 0o644); err != nil { // ENOTDIR for every download
		t.Fatal(err)
	}
	_, err = p.Pull(t.Context(), Artifact{Repository: "apps/web", Tag: "1.0"})
	if err == nil || errors.As(err, new(*Error)) || !reflect.DeepEqual(tried, []string{"first:"}) {
		t.Errorf("pull into a cache that cannot write: %v after attempts %v; want the cache's error after one attempt, no registry blamed", err, tried)
	}
}
