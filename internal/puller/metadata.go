package puller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// Metadata is what a pulled artifact's manifests tell about it.
type Metadata struct {
	// Size is the artifact's size in bytes: its manifests, configs and layers, each counted once.
	Size int64
	// Created is the root manifest's org.opencontainers.image.created annotation; nil when it
	// has none or it is not RFC 3339.
	Created *time.Time
}

// Metadata reads the metadata of a, which a successful pull put in the destination, from the
// destination alone: it asks no registry.
func (p *Puller) Metadata(ctx context.Context, a Artifact) (Metadata, error) {
	root, err := p.store.Resolve(ctx, layoutRef(a))
	if err != nil {
		return Metadata{}, fmt.Errorf("artifact %s is not in the cache: %w", a, err)
	}
	return ReadMetadata(ctx, p.store, root)
}

// ReadMetadata reads the metadata of the artifact whose root manifest is root from f.
func ReadMetadata(ctx context.Context, f content.Fetcher, root ocispec.Descriptor) (Metadata, error) {
	var m Metadata
	raw, err := content.FetchAll(ctx, f, root)
	if err != nil {
		return m, err
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if json.Unmarshal(raw, &doc) == nil {
		if t, err := time.Parse(time.RFC3339, doc.Annotations[ocispec.AnnotationCreated]); err == nil {
			t = t.UTC()
			m.Created = &t
		}
	}
	seen := map[digest.Digest]bool{}
	var walk func(ocispec.Descriptor) error
	walk = func(d ocispec.Descriptor) error {
		if seen[d.Digest] {
			return nil
		}
		seen[d.Digest] = true
		m.Size += d.Size
		successors, err := content.Successors(ctx, f, d)
		if err != nil {
			return err
		}
		for _, s := range successors {
			if err := walk(s); err != nil {
				return err
			}
		}
		return nil
	}
	return m, walk(root)
}
