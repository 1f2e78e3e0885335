package puller

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
)

func TestReadMetadata(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        *time.Time
	}{
		{"created annotation", map[string]string{ocispec.AnnotationCreated: "2026-12-01T19:00:00+01:00"}, ptrTime(time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC))},
		{"no annotation", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memory.New()
			var layers []ocispec.Descriptor
			var size int64
			for _, data := range [][]byte{[]byte("layer one"), []byte("layer two, longer"), []byte("layer one")} {
				d := content.NewDescriptorFromBytes("application/vnd.test.layer", data)
				if exists, _ := store.Exists(ctx, d); !exists {
					if err := store.Push(ctx, d, bytes.NewReader(data)); err != nil {
						t.Fatal(err)
					}
					size += d.Size // a layer listed twice counts once
				}
				layers = append(layers, d)
			}
			// oras.PackManifest stamps a creation time when none is given: pack by hand.
			config := content.NewDescriptorFromBytes(ocispec.MediaTypeEmptyJSON, []byte("{}"))
			if err := store.Push(ctx, config, bytes.NewReader([]byte("{}"))); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
				ArtifactType: "application/vnd.test", Config: config, Layers: layers, Annotations: tc.annotations})
			if err != nil {
				t.Fatal(err)
			}
			root := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
			if err := store.Push(ctx, root, bytes.NewReader(raw)); err != nil {
				t.Fatal(err)
			}
			m, err := ReadMetadata(ctx, store, root)
			if err != nil {
				t.Fatal(err)
			}
			// the manifest, its empty config (2 bytes, "{}") and the two distinct layers
			if want := root.Size + 2 + size; m.Size != want {
				t.Errorf("size %d, want %d", m.Size, want)
			}
			if (m.Created == nil) != (tc.want == nil) || m.Created != nil && !m.Created.Equal(*tc.want) {
				t.Errorf("created %v, want %v", m.Created, tc.want)
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
