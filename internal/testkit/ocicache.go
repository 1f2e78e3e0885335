package testkit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// CacheFiles is what an agent's OCI cache folder holds: the files in ingest/ with their sizes,
// and the blobs with theirs.
type CacheFiles struct {
	Ingest, Blobs map[string]int64
}

// Bytes is the sum of the sizes of which (f.Ingest or f.Blobs).
func (f CacheFiles) Bytes(which map[string]int64) int64 {
	var n int64
	for _, s := range which {
		n += s
	}
	return n
}

// ListCache reads what the cache folder dir holds.
func ListCache(t testing.TB, dir string) CacheFiles {
	t.Helper()
	out := CacheFiles{Ingest: map[string]int64{}, Blobs: map[string]int64{}}
	for sub, m := range map[string]map[string]int64{"ingest": out.Ingest, filepath.Join("blobs", "sha256"): out.Blobs} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				m[e.Name()] = info.Size()
			}
		}
	}
	return out
}

// VerifyCache checks that every blob of the cache folder dir matches its digest and that every
// blob is reached from a manifest of index.json (no orphaned data); it returns the digests
// reached.
func VerifyCache(t testing.TB, dir string) map[digest.Digest]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var index ocispec.Index
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatalf("index.json does not parse: %v", err)
	}
	reached := map[digest.Digest]bool{}
	var walk func(d digest.Digest)
	walk = func(d digest.Digest) {
		if reached[d] {
			return
		}
		reached[d] = true
		data, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", d.Encoded()))
		if err != nil {
			t.Errorf("blob %s named by the index: %v", d, err)
			return
		}
		var m ocispec.Manifest
		if json.Unmarshal(data, &m) == nil && m.SchemaVersion == 2 {
			walk(m.Config.Digest)
			for _, l := range m.Layers {
				walk(l.Digest)
			}
		}
	}
	for _, m := range index.Manifests {
		walk(m.Digest)
	}
	for name := range ListCache(t, dir).Blobs {
		d := digest.NewDigestFromEncoded(digest.SHA256, name)
		if !reached[d] {
			t.Errorf("orphaned blob %s: no manifest of the index reaches it", d)
		}
		f, err := os.Open(filepath.Join(dir, "blobs", "sha256", name))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil || hex.EncodeToString(h.Sum(nil)) != name {
			t.Errorf("blob %s does not match its digest (%v)", name, err)
		}
	}
	return reached
}
