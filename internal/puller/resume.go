package puller

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// A blob whose download broke off (a registry that stalled, closed the connection or timed the
// attempt out mid-blob) is resumed at the next registry from the bytes already written:
//
//   - the cache keeps the download's ingest file with the running hash of exactly the bytes
//     written to it (a partial);
//   - the next attempt at that blob, at any registry of any chain, asks for the rest with an
//     HTTP Range request, appends it and goes on hashing; the whole digest and size are verified
//     at the end as for any download, so bytes that any registry got wrong, before or after the
//     break, fail the blob as IntegrityMismatch and are thrown away, never committed;
//   - a registry that ignores Range (200 with the whole blob) gets a full download, the partial
//     thrown away.
//
// Partials live in memory and in ingest/: opening the cache removes them, as any download cut
// short. At most maxPartials are kept, the oldest dropped first, and Collect drops them all.

// maxPartials bounds the broken-off downloads a cache keeps for resuming.
const maxPartials = 8

// copyBufferSize is the buffer a blob streams through from the registry to its ingest file:
// one per blob being downloaded, so a pull holds at most Concurrency of them.
const copyBufferSize = 256 << 10

// partial is a download in ingest/: n bytes written to path, and their hash so far.
type partial struct {
	path string
	n    int64
	h    hash.Hash
	at   time.Time
}

// takePartial removes the partial download of d from the cache and returns it, or nil.
func (c *Cache) takePartial(d digest.Digest) *partial {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.partials[d]
	delete(c.partials, d)
	return p
}

// keepPartial keeps p, the partial download of d, for the next attempt; of two partials of one
// blob the longer is kept, and past maxPartials the oldest goes.
func (c *Cache) keepPartial(d digest.Digest, p *partial) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.partials[d]; old != nil {
		if old.n >= p.n {
			os.Remove(p.path)
			return
		}
		os.Remove(old.path)
	}
	if c.partials == nil {
		c.partials = map[digest.Digest]*partial{}
	}
	p.at = c.now()
	c.partials[d] = p
	for len(c.partials) > maxPartials {
		var oldest digest.Digest
		for od, op := range c.partials {
			if oldest == "" || op.at.Before(c.partials[oldest].at) {
				oldest = od
			}
		}
		os.Remove(c.partials[oldest].path)
		delete(c.partials, oldest)
	}
}

// dropPartials removes every partial download kept; c.mu is held.
func (c *Cache) dropPartials() {
	for d, p := range c.partials {
		os.Remove(p.path)
		delete(c.partials, d)
	}
}

// Partial returns how many bytes of blob d a broken-off download holds for resuming (0: none).
func (c *Cache) Partial(d digest.Digest) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.partials[d]; p != nil {
		return p.n
	}
	return 0
}

// openIngest opens the ingest file of desc: p's to append to (its file holds exactly the bytes it
// hashed), or a new one when p is nil or its file is not as it left it.
func (c *Cache) openIngest(desc ocispec.Descriptor, p *partial) (*os.File, *partial, error) {
	if p != nil {
		f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			if info, err := f.Stat(); err == nil && info.Size() == p.n {
				return f, p, nil
			}
			f.Close()
		}
		os.Remove(p.path)
	}
	f, err := os.CreateTemp(filepath.Join(c.dir, ingestDir), desc.Digest.Encoded()+"_*")
	if err != nil {
		return nil, nil, err
	}
	return f, &partial{path: f.Name(), h: desc.Digest.Algorithm().Hash()}, nil
}

// ingest streams r into f, p's file, hashing what it writes, and checks the result against
// desc. It returns whether p is worth keeping for a resume: the registry broke off with the
// bytes so far possibly sound.
func (p *partial) ingest(f *os.File, r io.Reader, desc ocispec.Descriptor, resumedFrom int64) (keep bool, err error) {
	w := &hashingWriter{f: f, p: p, flushed: p.n}
	buf := make([]byte, copyBufferSize)
	if _, err := io.CopyBuffer(w, io.LimitReader(r, desc.Size-p.n+1), buf); err != nil {
		return !errors.As(err, new(storeError)) && p.n > 0 && p.n <= desc.Size, err
	}
	switch {
	case p.n > desc.Size:
		return false, content.ErrTrailingData
	case p.n < desc.Size:
		return p.n > 0, fmt.Errorf("the registry sent %d of %d bytes: %w", p.n, desc.Size, io.ErrUnexpectedEOF)
	}
	if got := digest.NewDigest(desc.Digest.Algorithm(), p.h); got != desc.Digest {
		note := ""
		if resumedFrom > 0 {
			note = fmt.Sprintf(" (resumed at byte %d of an earlier registry's download)", resumedFrom)
		}
		return false, fmt.Errorf("got %s%s: %w", got, note, content.ErrMismatchedDigest)
	}
	return false, nil
}

// writebackEvery is how many bytes a download writes before it starts their writeback to disk.
const writebackEvery = 8 << 20

// hashingWriter writes to a partial's file and hashes exactly what was written, starting the
// writeback of every writebackEvery bytes as it goes.
type hashingWriter struct {
	f       *os.File
	p       *partial
	flushed int64 // the bytes whose writeback started
}

func (w *hashingWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	w.p.h.Write(b[:n])
	w.p.n += int64(n)
	if w.p.n-w.flushed >= writebackEvery {
		startWriteback(w.f, w.flushed, w.p.n-w.flushed)
		w.flushed = w.p.n
	}
	if err != nil {
		err = storeError{err}
	}
	return n, err
}

// resumingSource is an attempt's registry, fetching a blob the cache holds part of from where
// its download broke off.
type resumingSource struct {
	content.ReadOnlyStorage
	repo *remote.Repository
	sess *session
	// onResume, if set, is told of a blob resumed at offset.
	onResume func(desc ocispec.Descriptor, offset int64)
}

func (s resumingSource) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	if isManifest(desc.MediaType) {
		return s.ReadOnlyStorage.Fetch(ctx, desc)
	}
	p := s.sess.c.takePartial(desc.Digest)
	if p == nil {
		return s.ReadOnlyStorage.Fetch(ctx, desc)
	}
	rc, resumed, err := s.fetchFrom(ctx, desc, p.n)
	switch {
	case errors.Is(err, errRangeAnswer):
		// Keep the partial for another registry; a plain fetch reports this one's answer in
		// the terms Classify knows (NotFound, say), or downloads the whole blob.
		s.sess.c.keepPartial(desc.Digest, p)
		return s.ReadOnlyStorage.Fetch(ctx, desc)
	case err != nil:
		s.sess.c.keepPartial(desc.Digest, p)
		return nil, err
	case !resumed: // the registry ignored Range: a full download
		os.Remove(p.path)
		return rc, nil
	}
	s.sess.resume(desc.Digest, p)
	if s.onResume != nil {
		s.onResume(desc, p.n)
	}
	return rc, nil
}

// errRangeAnswer is a registry's answer to a Range request that is neither the range asked for
// nor the whole blob.
var errRangeAnswer = errors.New("the registry answered the range request with something else")

// fetchFrom asks the registry for desc's bytes from offset on. It returns the body and true when
// the registry sent that range, the body and false when it sent the whole blob instead.
func (s resumingSource) fetchFrom(ctx context.Context, desc ocispec.Descriptor, offset int64) (io.ReadCloser, bool, error) {
	ref := s.repo.Reference
	scheme := "https"
	if s.repo.PlainHTTP {
		scheme = "http"
	}
	ctx = auth.AppendRepositoryScope(ctx, ref, auth.ActionPull)
	u := fmt.Sprintf("%s://%s/v2/%s/blobs/%s", scheme, ref.Host(), ref.Repository, desc.Digest)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, desc.Size-1))
	resp, err := s.repo.Client.Do(req)
	if err != nil {
		return nil, false, err
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		want := fmt.Sprintf("bytes %d-%d/", offset, desc.Size-1)
		if cr := resp.Header.Get("Content-Range"); strings.HasPrefix(cr, want) {
			return resp.Body, true, nil
		}
	case http.StatusOK:
		if (resp.ContentLength < 0 || resp.ContentLength == desc.Size) &&
			(resp.Header.Get("Docker-Content-Digest") == "" || resp.Header.Get("Docker-Content-Digest") == desc.Digest.String()) {
			return resp.Body, false, nil
		}
	}
	resp.Body.Close()
	return nil, false, fmt.Errorf("%s %s: %s: %w", req.Method, u, resp.Status, errRangeAnswer)
}

// resume hands a partial to the session's Push of d.
func (s *session) resume(d digest.Digest, p *partial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resumed == nil {
		s.resumed = map[digest.Digest]*partial{}
	}
	s.resumed[d] = p
}

// takeResumed returns the partial Fetch resumed for d, or nil.
func (s *session) takeResumed(d digest.Digest) *partial {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.resumed[d]
	delete(s.resumed, d)
	return p
}

// leave keeps, until the session ends, a download this session's registry broke off.
func (s *session) leave(d digest.Digest, p *partial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left == nil {
		s.left = map[digest.Digest]*partial{}
	}
	s.left[d] = p
}

// checked notes a blob of this session that failed its digest or size: the registry sent wrong
// bytes, so no download it had a hand in is worth resuming.
func (s *session) checked(err error) error {
	if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) {
		s.mu.Lock()
		s.corrupt = true
		s.mu.Unlock()
	}
	return err
}

// returnResumed gives the cache the downloads this session's registry broke off, and the
// partials it fetched but never pushed; after a blob that failed its digest, it throws away
// those the registry wrote to instead.
func (s *session) returnResumed() {
	s.mu.Lock()
	unused, left, corrupt := s.resumed, s.left, s.corrupt
	s.resumed, s.left = nil, nil
	s.mu.Unlock()
	for d, p := range unused {
		s.c.keepPartial(d, p)
	}
	for d, p := range left {
		if corrupt {
			os.Remove(p.path)
			continue
		}
		s.c.keepPartial(d, p)
	}
}
