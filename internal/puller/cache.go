package puller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
)

// The cache is an OCI image layout (index.json, oci-layout, blobs/<algorithm>/<encoded>) that
// cannot corrupt itself:
//
//   - a blob is downloaded to ingest/, verified against its digest and size, fsynced, and only
//     then renamed into blobs/ (and the folder fsynced); ingest/ is emptied when the cache opens,
//     so a download cut short by a kill is never used and never kept;
//   - index.json is written to a temporary file, fsynced and renamed over the old one (and the
//     folder fsynced), so a kill or a full disk leaves the old index or the new one, never half;
//   - an index that cannot be read anyway (truncated by hand, say) is rebuilt when the cache opens
//     from the manifests in blobs/ whose digest verifies and whose content is all there; tags come
//     back with the next pull of each artifact. Should even that fail, the cache starts empty;
//   - blobs that no manifest of the index reaches (the parts of a pull that never finished) are
//     removed when the cache opens.
//
// Its index lives in memory once opened: a pull reads and writes only its own artifact, never
// every manifest ever pulled. Each artifact of the index records when it was last used, for
// Collect, which removes the least recently used artifacts nobody references once the cache
// passes a size bound.

// lastUsedAnnotation records, on each manifest of index.json, when the artifact was last pulled or read.
const lastUsedAnnotation = "fleet.umkim.io/last-used"

// touchEvery is how stale a last use may get in index.json before Touch writes it again.
const touchEvery = time.Minute

// maxManifestSize bounds what is read as a manifest when an index is rebuilt, as registries do (4 MiB).
const maxManifestSize = 4 << 20

const (
	ingestDir = "ingest"
	lockName  = "fleet-cache.lock"
)

// Cache is an OCI image layout in a directory, safe for concurrent pulls; see OpenCache.
type Cache struct {
	dir  string
	lock *os.File
	// Opened says what opening the cache found and repaired.
	Opened Recovery

	mu      sync.Mutex
	opens   int
	blobs   map[digest.Digest]int64           // committed blobs and their sizes
	graph   map[digest.Digest][]digest.Digest // successors of each manifest blob
	roots   map[digest.Digest]*artifact       // the manifests of the index
	tags    map[string]digest.Digest          // references of the index, to a root
	pins    map[digest.Digest]int             // blobs a running pull has found or written
	size    int64
	changed chan struct{}
	now     func() time.Time

	// partials are the downloads that broke off, kept to resume (resume.go).
	partials map[digest.Digest]*partial
}

// artifact is a manifest of the index.
type artifact struct {
	desc     ocispec.Descriptor // plain: media type, artifact type, digest, size
	lastUsed time.Time
	saved    time.Time // lastUsed as index.json has it
}

// ErrCacheLocked is OpenCache's error for a directory another process holds.
var ErrCacheLocked = errors.New("another process uses this cache: give each agent a cache directory of its own, or let it wait for the leader to go")

// Recovery is what opening a cache found and did about it.
type Recovery struct {
	// PartialFiles and PartialBytes are the downloads cut short (in ingest/) that were removed.
	PartialFiles int
	PartialBytes int64
	// IndexRebuilt is set when index.json could not be read and was rebuilt from the blobs;
	// IndexError says why.
	IndexRebuilt bool
	IndexError   string
	// Reset is set when the cache could not be rebuilt either and was emptied.
	Reset bool
	// DroppedManifests are manifests of the index whose content is missing, dropped from it.
	DroppedManifests int
	// OrphanBlobs and OrphanBytes are the blobs no manifest of the index reaches, removed.
	OrphanBlobs int
	OrphanBytes int64
}

// Clean says whether opening found nothing to repair.
func (r Recovery) Clean() bool { return r == Recovery{} }

// openCaches are the caches open in this process, by absolute directory: opening a directory
// twice shares one Cache, so that two pullers of one process never clean up after each other.
var openCaches = struct {
	sync.Mutex
	m map[string]*Cache
}{m: map[string]*Cache{}}

// OpenCache opens the OCI image layout in dir as a cache, creating it if needed. It removes
// downloads cut short, rebuilds an index that cannot be read (or, failing that, empties the
// cache) and removes blobs that no manifest of the index reaches; Opened says what it did. A
// directory open in another process is refused: each agent needs its own. Opening a directory
// this process has open returns the same Cache; each OpenCache needs its Close.
func OpenCache(dir string) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	openCaches.Lock()
	defer openCaches.Unlock()
	if c := openCaches.m[abs]; c != nil {
		c.mu.Lock()
		c.opens++
		c.mu.Unlock()
		return c, nil
	}
	c := &Cache{dir: abs, opens: 1, changed: make(chan struct{}, 1), now: time.Now}
	if err := c.open(); err != nil {
		if c.lock != nil {
			c.lock.Close()
		}
		return nil, fmt.Errorf("cache %s: %w", abs, err)
	}
	openCaches.m[abs] = c
	return c, nil
}

// Close releases the cache once every OpenCache of it is closed.
func (c *Cache) Close() error {
	openCaches.Lock()
	defer openCaches.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opens--; c.opens > 0 {
		return nil
	}
	delete(openCaches.m, c.dir)
	return c.lock.Close() // and with it the lock
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

func (c *Cache) open() error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	lock, err := lockDir(filepath.Join(c.dir, lockName))
	if err != nil {
		return err
	}
	c.lock = lock
	if err := c.clearIngest(); err != nil {
		return err
	}
	if err := c.ensureLayoutFile(); err != nil {
		return err
	}
	err = c.load()
	if err != nil {
		// Whatever could not be read, an empty cache is sound: pulls fill it again.
		c.Opened.Reset = true
		c.Opened.IndexError = err.Error()
		if err := os.RemoveAll(filepath.Join(c.dir, ocispec.ImageBlobsDir)); err != nil {
			return fmt.Errorf("reset after %v: %w", c.Opened.IndexError, err)
		}
		if err := os.MkdirAll(filepath.Join(c.dir, ocispec.ImageBlobsDir), 0o755); err != nil {
			return err
		}
		c.blobs, c.graph, c.roots, c.tags, c.size = map[digest.Digest]int64{}, map[digest.Digest][]digest.Digest{}, map[digest.Digest]*artifact{}, map[string]digest.Digest{}, 0
	}
	c.pins = map[digest.Digest]int{}
	c.sweep()
	return c.saveIndex()
}

// clearIngest removes every download left in ingest/ by a process that died mid-blob.
func (c *Cache) clearIngest() error {
	ingest := filepath.Join(c.dir, ingestDir)
	entries, err := os.ReadDir(ingest)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			c.Opened.PartialBytes += info.Size()
		}
		c.Opened.PartialFiles++
	}
	if err := os.RemoveAll(ingest); err != nil {
		return fmt.Errorf("remove partial downloads: %w", err)
	}
	return os.MkdirAll(ingest, 0o755)
}

// ensureLayoutFile writes oci-layout unless it holds the layout version.
func (c *Cache) ensureLayoutFile() error {
	path := filepath.Join(c.dir, ocispec.ImageLayoutFile)
	var l ocispec.ImageLayout
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &l) == nil && l.Version == ocispec.ImageLayoutVersion {
		return nil
	}
	data, _ := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	return writeAtomic(path, data)
}

// load reads the blobs and the index, rebuilding the index from the blobs if it cannot be read.
func (c *Cache) load() error {
	c.blobs, c.graph, c.roots, c.tags, c.size = map[digest.Digest]int64{}, map[digest.Digest][]digest.Digest{}, map[digest.Digest]*artifact{}, map[string]digest.Digest{}, 0
	if err := os.MkdirAll(filepath.Join(c.dir, ocispec.ImageBlobsDir), 0o755); err != nil {
		return err
	}
	if err := c.scanBlobs(); err != nil {
		return err
	}
	index, err := c.readIndex()
	if err != nil {
		c.Opened.IndexRebuilt, c.Opened.IndexError = true, err.Error()
		return c.rebuild()
	}
	for _, desc := range index.Manifests {
		if err := c.addRoot(desc, lastUsedOf(desc)); err != nil {
			c.Opened.DroppedManifests++
			continue
		}
		if ref := desc.Annotations[ocispec.AnnotationRefName]; ref != "" {
			c.tags[ref] = desc.Digest
		}
	}
	return nil
}

// scanBlobs records the committed blobs; files under blobs/ that are not named by a digest are
// removed.
func (c *Cache) scanBlobs() error {
	root := filepath.Join(c.dir, ocispec.ImageBlobsDir)
	algs, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, alg := range algs {
		if !alg.IsDir() || !digest.Algorithm(alg.Name()).Available() {
			continue
		}
		dir := filepath.Join(root, alg.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			d := digest.NewDigestFromEncoded(digest.Algorithm(alg.Name()), e.Name())
			info, err := e.Info()
			if err != nil {
				return err
			}
			if !e.Type().IsRegular() || d.Validate() != nil {
				c.Opened.OrphanBlobs++
				c.Opened.OrphanBytes += info.Size()
				if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
					return err
				}
				continue
			}
			c.blobs[d] = info.Size()
			c.size += info.Size()
		}
	}
	return nil
}

// readIndex reads index.json; a missing one is an empty index unless blobs are there to rebuild
// one from.
func (c *Cache) readIndex() (ocispec.Index, error) {
	var index ocispec.Index
	data, err := os.ReadFile(filepath.Join(c.dir, ocispec.ImageIndexFile))
	if errors.Is(err, fs.ErrNotExist) && len(c.blobs) == 0 {
		return index, nil
	}
	if err != nil {
		return index, err
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return index, fmt.Errorf("index.json: %w", err)
	}
	if index.SchemaVersion != 2 {
		return index, fmt.Errorf("index.json: schemaVersion %d, want 2", index.SchemaVersion)
	}
	return index, nil
}

// rebuild makes the index from the manifests among the blobs: those whose digest verifies, whose
// content is all there and that no other manifest refers to.
func (c *Cache) rebuild() error {
	type found struct {
		desc  ocispec.Descriptor
		mtime time.Time
	}
	var manifests []found
	referred := map[digest.Digest]bool{}
	for d, size := range c.blobs {
		if size > maxManifestSize {
			continue
		}
		path := c.blobPath(d)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		mediaType, ok := sniffManifest(data)
		if !ok || d.Algorithm().FromBytes(data) != d {
			continue
		}
		desc := ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: size}
		succ, err := content.Successors(context.Background(), c, desc)
		if err != nil {
			continue
		}
		for _, s := range succ {
			referred[s.Digest] = true
		}
		mtime := time.Time{}
		if info, err := os.Stat(path); err == nil {
			mtime = info.ModTime()
		}
		manifests = append(manifests, found{desc, mtime})
	}
	for _, m := range manifests {
		if referred[m.desc.Digest] {
			continue
		}
		if err := c.addRoot(m.desc, m.mtime); err != nil {
			c.Opened.DroppedManifests++
		}
	}
	return nil
}

// sniffManifest returns the media type of data if it is an image manifest or index.
func sniffManifest(data []byte) (string, bool) {
	var m struct {
		SchemaVersion int                  `json:"schemaVersion"`
		MediaType     string               `json:"mediaType"`
		Config        *ocispec.Descriptor  `json:"config"`
		Layers        []ocispec.Descriptor `json:"layers"`
		Manifests     []ocispec.Descriptor `json:"manifests"`
	}
	if json.Unmarshal(data, &m) != nil || m.SchemaVersion != 2 {
		return "", false
	}
	switch {
	case m.MediaType != "":
		return m.MediaType, isManifest(m.MediaType)
	case m.Config != nil:
		return ocispec.MediaTypeImageManifest, true
	case m.Manifests != nil:
		return ocispec.MediaTypeImageIndex, true
	}
	return "", false
}

// isManifest tells the media types whose blobs refer to others.
func isManifest(mediaType string) bool {
	switch mediaType {
	case ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageIndex,
		"application/vnd.docker.distribution.manifest.v2+json", "application/vnd.docker.distribution.manifest.list.v2+json",
		"application/vnd.oci.artifact.manifest.v1+json":
		return true
	}
	return false
}

// addRoot adds a manifest to the index once its whole graph is in the cache.
func (c *Cache) addRoot(desc ocispec.Descriptor, lastUsed time.Time) error {
	if err := desc.Digest.Validate(); err != nil {
		return err
	}
	if err := c.index(desc, map[digest.Digest]bool{}); err != nil {
		return err
	}
	plain := ocispec.Descriptor{MediaType: desc.MediaType, ArtifactType: desc.ArtifactType, Digest: desc.Digest, Size: desc.Size}
	c.roots[desc.Digest] = &artifact{desc: plain, lastUsed: lastUsed, saved: lastUsed}
	return nil
}

// index records the successors of desc and of every manifest below it, and fails unless all of
// its content is committed with the sizes it is described with.
func (c *Cache) index(desc ocispec.Descriptor, seen map[digest.Digest]bool) error {
	if seen[desc.Digest] {
		return nil
	}
	seen[desc.Digest] = true
	size, ok := c.blobs[desc.Digest]
	if !ok || size != desc.Size {
		return fmt.Errorf("%s: %w", desc.Digest, errdef.ErrNotFound)
	}
	if !isManifest(desc.MediaType) {
		return nil
	}
	succ, err := content.Successors(context.Background(), c, desc)
	if err != nil {
		return err
	}
	ds := make([]digest.Digest, 0, len(succ))
	for _, s := range succ {
		if err := c.index(s, seen); err != nil {
			return err
		}
		ds = append(ds, s.Digest)
	}
	c.graph[desc.Digest] = ds
	return nil
}

// lastUsedOf reads a manifest's last use from its annotation.
func lastUsedOf(desc ocispec.Descriptor) time.Time {
	t, _ := time.Parse(time.RFC3339, desc.Annotations[lastUsedAnnotation])
	return t
}

// reachable is every blob a manifest of the index reaches.
func (c *Cache) reachable() map[digest.Digest]bool {
	seen := map[digest.Digest]bool{}
	var walk func(digest.Digest)
	walk = func(d digest.Digest) {
		if seen[d] {
			return
		}
		seen[d] = true
		for _, s := range c.graph[d] {
			walk(s)
		}
	}
	for d := range c.roots {
		walk(d)
	}
	return seen
}

// sweep removes the committed blobs that no manifest of the index reaches and no pull holds.
func (c *Cache) sweep() {
	reach := c.reachable()
	for d, size := range c.blobs {
		if reach[d] || c.pins[d] > 0 {
			continue
		}
		if c.removeBlob(d) == nil {
			c.Opened.OrphanBlobs++
			c.Opened.OrphanBytes += size
		}
	}
}

func (c *Cache) removeBlob(d digest.Digest) error {
	if err := os.Remove(c.blobPath(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	c.size -= c.blobs[d]
	delete(c.blobs, d)
	delete(c.graph, d)
	return nil
}

func (c *Cache) blobPath(d digest.Digest) string {
	return filepath.Join(c.dir, ocispec.ImageBlobsDir, d.Algorithm().String(), d.Encoded())
}

// saveIndex writes index.json atomically: its tags, then the manifests no tag names, each with
// its last use, in a stable order.
func (c *Cache) saveIndex() error {
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	tagged := map[digest.Digest]bool{}
	refs := make([]string, 0, len(c.tags))
	for ref := range c.tags {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	entry := func(a *artifact, ref string) ocispec.Descriptor {
		desc := a.desc
		desc.Annotations = map[string]string{}
		if !a.lastUsed.IsZero() {
			desc.Annotations[lastUsedAnnotation] = a.lastUsed.UTC().Format(time.RFC3339)
		}
		if ref != "" {
			desc.Annotations[ocispec.AnnotationRefName] = ref
		}
		a.saved = a.lastUsed
		return desc
	}
	for _, ref := range refs {
		d := c.tags[ref]
		if a := c.roots[d]; a != nil {
			index.Manifests = append(index.Manifests, entry(a, ref))
			tagged[d] = true
		}
	}
	untagged := make([]digest.Digest, 0, len(c.roots))
	for d := range c.roots {
		if !tagged[d] {
			untagged = append(untagged, d)
		}
	}
	slices.Sort(untagged)
	for _, d := range untagged {
		index.Manifests = append(index.Manifests, entry(c.roots[d], ""))
	}
	data, err := json.Marshal(index)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(c.dir, ocispec.ImageIndexFile), data)
}

// writeAtomic replaces path with data: a temporary file beside it, fsynced, renamed over it, and
// the folder fsynced, so that path holds the old content or the new, whatever happens.
func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs a directory, so that a rename in it survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// Fetch reads a committed blob.
func (c *Cache) Fetch(_ context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", desc.Digest, errdef.ErrInvalidDigest)
	}
	f, err := os.Open(c.blobPath(desc.Digest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", desc.Digest, errdef.ErrNotFound)
	}
	return f, err
}

// Exists tells whether a blob is committed.
func (c *Cache) Exists(_ context.Context, desc ocispec.Descriptor) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.blobs[desc.Digest]
	return ok, nil
}

// push writes a blob to ingest/ (appending to resumed, a partial download r continues, if set),
// verifies it against desc (digest and size), fsyncs it and only then commits it to blobs/. A
// download the registry broke off goes to leave, to be resumed (resume.go).
func (c *Cache) push(desc ocispec.Descriptor, r io.Reader, resumed *partial, leave func(digest.Digest, *partial)) (err error) {
	if err := desc.Digest.Validate(); err != nil {
		return fmt.Errorf("%s: %w", desc.Digest, errdef.ErrInvalidDigest)
	}
	if ok, _ := c.Exists(context.Background(), desc); ok {
		if resumed != nil {
			os.Remove(resumed.path)
		}
		return fmt.Errorf("%s: %w", desc.Digest, errdef.ErrAlreadyExists)
	}
	var from int64
	if resumed != nil {
		from = resumed.n
	}
	f, p, err := c.openIngest(desc, resumed)
	if err != nil {
		return storeError{fmt.Errorf("ingest: %w", err)}
	}
	committed, keep := false, false
	defer func() {
		if !committed {
			f.Close()
			if keep {
				leave(desc.Digest, p)
			} else {
				os.Remove(f.Name())
			}
		}
	}()
	// Errors reading come from the registry; errors writing are the cache's (storeError).
	if keep, err = p.ingest(f, r, desc, from); err != nil {
		return fmt.Errorf("ingest %s: %w", desc.Digest, err)
	}
	if err := f.Sync(); err != nil {
		return storeError{fmt.Errorf("ingest %s: %w", desc.Digest, err)}
	}
	if err := f.Close(); err != nil {
		return storeError{fmt.Errorf("ingest %s: %w", desc.Digest, err)}
	}
	if err := os.Chmod(f.Name(), 0o444); err != nil {
		return storeError{err}
	}
	var succ []digest.Digest
	if isManifest(desc.MediaType) {
		descs, err := content.Successors(context.Background(), fileFetcher(f.Name()), desc)
		if err != nil {
			return fmt.Errorf("manifest %s: %w", desc.Digest, err)
		}
		for _, s := range descs {
			succ = append(succ, s.Digest)
		}
	}
	target := c.blobPath(desc.Digest)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return storeError{err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.blobs[desc.Digest]; ok { // another pull committed it meanwhile
		return fmt.Errorf("%s: %w", desc.Digest, errdef.ErrAlreadyExists)
	}
	if err := os.Rename(f.Name(), target); err != nil {
		return storeError{err}
	}
	committed = true
	c.blobs[desc.Digest] = desc.Size
	c.size += desc.Size
	if succ != nil {
		c.graph[desc.Digest] = succ
	}
	if err := syncDir(filepath.Dir(target)); err != nil {
		return storeError{err}
	}
	return nil
}

// storeError is a failure of the cache's own storage (a full disk, say), not the registry's:
// Classify leaves it to the caller instead of failing over.
type storeError struct{ error }

func (e storeError) Unwrap() error { return e.error }

// fileFetcher fetches one file, whatever the descriptor.
type fileFetcher string

func (f fileFetcher) Fetch(context.Context, ocispec.Descriptor) (io.ReadCloser, error) {
	return os.Open(string(f))
}

// Tag names a committed manifest ref in the index (ref may be its digest) and records its use.
func (c *Cache) Tag(_ context.Context, desc ocispec.Descriptor, ref string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.blobs[desc.Digest]; !ok {
		return fmt.Errorf("%s: %w", desc.Digest, errdef.ErrNotFound)
	}
	a := c.roots[desc.Digest]
	if a == nil {
		if err := c.index(desc, map[digest.Digest]bool{}); err != nil {
			return err
		}
		a = &artifact{desc: ocispec.Descriptor{MediaType: desc.MediaType, ArtifactType: desc.ArtifactType, Digest: desc.Digest, Size: desc.Size}}
		c.roots[desc.Digest] = a
	}
	a.lastUsed = c.now()
	if ref != desc.Digest.String() {
		c.tags[ref] = desc.Digest
	}
	err := c.saveIndex()
	c.signal()
	if err != nil {
		return storeError{err}
	}
	return nil
}

// Resolve returns the manifest a reference (or a manifest's digest) names in the index.
func (c *Cache) Resolve(_ context.Context, ref string) (ocispec.Descriptor, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.tags[ref]
	if !ok {
		d = digest.Digest(ref)
	}
	if a := c.roots[d]; a != nil {
		return a.desc, nil
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: %w", ref, errdef.ErrNotFound)
}

// Touch records a use of the manifest d (a chart read from the cache, say); index.json is
// written at most once a minute per artifact for it.
func (c *Cache) Touch(d digest.Digest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.roots[d]
	if a == nil {
		return nil
	}
	a.lastUsed = c.now()
	if a.lastUsed.Sub(a.saved) < touchEvery {
		return nil
	}
	return c.saveIndex()
}

// Has tells whether the manifest d is an artifact of the index, all its content there.
func (c *Cache) Has(d digest.Digest) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.roots[d] != nil
}

// Changed is signalled (without blocking, coalesced) whenever a pull tags an artifact.
func (c *Cache) Changed() <-chan struct{} { return c.changed }

func (c *Cache) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// CacheStats is the size of a cache.
type CacheStats struct {
	// Bytes is the size of every committed blob; Artifacts counts the manifests of the index.
	Bytes     int64
	Artifacts int
}

// Stats returns the cache's size.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Bytes: c.size, Artifacts: len(c.roots)}
}

// Collected is what one Collect removed.
type Collected struct {
	// Artifacts are the manifests removed from the index, least recently used first.
	Artifacts []digest.Digest
	// Bytes is the size of the blobs removed, artifacts' and those of unfinished pulls.
	Bytes int64
	// Over is set when the cache is still over its bound: what is left is referenced, in use
	// or used within the minimum age.
	Over bool
}

// Collect brings the cache under maxBytes, if it is over: first it removes blobs that no
// artifact reaches and no running pull holds (the parts of pulls that failed), then whole
// artifacts, least recently used first, except those keep names, those a running pull holds and
// those used within minAge (so that a pull just finished, whose reference the caller may not
// know yet, stays). A maxBytes of zero or less means no bound.
func (c *Cache) Collect(maxBytes int64, minAge time.Duration, keep func(digest.Digest) bool) (Collected, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out Collected
	if maxBytes <= 0 || c.size <= maxBytes {
		return out, nil
	}
	before := c.size
	c.dropPartials()
	if err := c.removeUnreachable(); err != nil {
		return out, err
	}
	type candidate struct {
		d        digest.Digest
		lastUsed time.Time
	}
	var candidates []candidate
	now := c.now()
	for d, a := range c.roots {
		if keep(d) || c.pins[d] > 0 || now.Sub(a.lastUsed) < minAge {
			continue
		}
		candidates = append(candidates, candidate{d, a.lastUsed})
	}
	slices.SortFunc(candidates, func(a, b candidate) int {
		if n := a.lastUsed.Compare(b.lastUsed); n != 0 {
			return n
		}
		return strings.Compare(string(a.d), string(b.d))
	})
	var err error
	for _, cand := range candidates {
		if c.size <= maxBytes {
			break
		}
		delete(c.roots, cand.d)
		for ref, d := range c.tags {
			if d == cand.d {
				delete(c.tags, ref)
			}
		}
		// The index first: a crash then leaves blobs that the next open removes, never an index
		// that names missing content.
		if err = c.saveIndex(); err != nil {
			break
		}
		out.Artifacts = append(out.Artifacts, cand.d)
		if err = c.removeUnreachable(); err != nil {
			break
		}
	}
	out.Bytes = before - c.size
	out.Over = c.size > maxBytes
	return out, err
}

// removeUnreachable removes the committed blobs no artifact reaches and no pull holds,
// manifests before what they refer to.
func (c *Cache) removeUnreachable() error {
	reach := c.reachable()
	var manifests, others []digest.Digest
	for d := range c.blobs {
		if reach[d] || c.pins[d] > 0 {
			continue
		}
		if _, ok := c.graph[d]; ok {
			manifests = append(manifests, d)
		} else {
			others = append(others, d)
		}
	}
	for _, d := range append(manifests, others...) {
		if err := c.removeBlob(d); err != nil {
			return err
		}
	}
	return nil
}

// session is one pull's view of the cache: every blob it finds or writes is held (pinned) until
// release, so that Collect never removes what the pull builds on.
type session struct {
	c      *Cache
	mu     sync.Mutex
	pinned []digest.Digest
	// resumed are the partial downloads Fetch continues, for Push; left those Push kept, and
	// corrupt is set once a blob failed its digest (resume.go).
	resumed, left map[digest.Digest]*partial
	corrupt       bool
}

func (c *Cache) session() *session { return &session{c: c} }

func (s *session) pin(d digest.Digest) {
	s.c.mu.Lock()
	s.c.pins[d]++
	s.c.mu.Unlock()
	s.mu.Lock()
	s.pinned = append(s.pinned, d)
	s.mu.Unlock()
}

func (s *session) release() {
	s.returnResumed()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	for _, d := range s.pinned {
		if s.c.pins[d]--; s.c.pins[d] <= 0 {
			delete(s.c.pins, d)
		}
	}
	s.pinned = nil
}

func (s *session) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	s.pin(desc.Digest)
	return s.c.Exists(ctx, desc)
}

func (s *session) Push(_ context.Context, desc ocispec.Descriptor, r io.Reader) error {
	s.pin(desc.Digest)
	return s.checked(s.c.push(desc, r, s.takeResumed(desc.Digest), s.leave))
}

func (s *session) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return s.c.Fetch(ctx, desc)
}
