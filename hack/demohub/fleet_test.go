package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/umkim/terraform-provider-fleet/hack/internal/localrun"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// The commands of make demo's signed step, on two real registries: keygen's key pair, push's
// created annotation (the pushed-at of the replication lag), sign's cosign signature, which
// replicate leaves behind, as the agent's puller verifies them: the mirror is Unverified and the
// artifact comes from the source, signed by keygen's public key; another key trusts neither.
func TestKeygenSignReplicateVerify(t *testing.T) {
	ctx := context.Background()
	regs := map[string]localrun.Registry{}
	running := map[string]*testbed.Registry{}
	for _, name := range []string{"source", "mirror"} {
		r := testbed.StartRegistryT(t, testbed.RegistryOptions{Username: "pusher", Password: "push-" + name})
		running[name] = r
		regs[name] = localrun.Registry{Addr: r.Addr, Username: "pusher", Password: "push-" + name}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "registries.json")
	data, _ := json.Marshal(regs)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := keygen(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, cosignPrivateFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cosign.key: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	pub, err := os.ReadFile(filepath.Join(dir, cosignPublicFile))
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Truncate(time.Second)
	if err := push(ctx, path, "source", "fleet/apps/web:1.2"); err != nil {
		t.Fatal(err)
	}
	if err := sign(ctx, path, "source", "fleet/apps/web:1.2", filepath.Join(dir, cosignPrivateFile)); err != nil {
		t.Fatal(err)
	}
	if err := replicate(ctx, path, "source", "mirror", "fleet/apps/web:1.2"); err != nil {
		t.Fatal(err)
	}

	// The created annotation is the time of the push.
	_, rc, err := running["mirror"].Repository("fleet/apps/web").FetchReference(ctx, "1.2")
	if err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.NewDecoder(rc).Decode(&m); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	created, err := time.Parse(time.RFC3339, m.Annotations[ocispec.AnnotationCreated])
	if err != nil || created.Before(before) || created.After(time.Now()) {
		t.Fatalf("created annotation %q (%v): want the time of the push, after %v", m.Annotations[ocispec.AnnotationCreated], err, before)
	}

	var tried []string
	pullWith := func(key string) (puller.Status, error) {
		tried = nil
		mirror, source := running["mirror"].Entry("mirror"), running["source"].Entry("source")
		mirror.Role, source.Role = puller.RoleMirror, puller.RoleSource
		p, err := puller.New([]puller.Registry{mirror, source}, t.TempDir(), puller.Options{
			Verify:    &puller.Verify{Provider: puller.VerifyCosign, PublicKeys: []string{key}},
			OnAttempt: func(a puller.Attempt) { tried = append(tried, a.Registry+":"+string(a.Class)) },
		})
		if err != nil {
			t.Fatal(err)
		}
		return p.Pull(ctx, puller.Artifact{Repository: "fleet/apps/web", Tag: "1.2"})
	}
	k, err := testbed.ParseCosignKey(mustRead(t, filepath.Join(dir, cosignPrivateFile)))
	if err != nil {
		t.Fatal(err)
	}
	if k.PublicPEM != string(pub) {
		t.Fatalf("cosign.key's public key differs from cosign.pub:\n%s\n%s", k.PublicPEM, pub)
	}
	st, err := pullWith(string(pub))
	if err != nil {
		t.Fatalf("pull with cosign.pub: %v", err)
	}
	if want := "cosign key " + puller.Fingerprint(&k.Private.PublicKey); st.State != puller.Pulled || st.Registry != "source" || st.Verified != want {
		t.Fatalf("pull with cosign.pub: %+v; want Pulled from source, verified %q", st, want)
	}
	if want := []string{"mirror:Unverified", "source:"}; !slices.Equal(tried, want) {
		t.Fatalf("pull with cosign.pub tried %v, want %v", tried, want)
	}

	other := testbed.NewCosignKey(t)
	_, err = pullWith(other.PublicPEM)
	var perr *puller.Error
	if !errors.As(err, &perr) || len(perr.Failures) != 2 {
		t.Fatalf("pull with another key: %v; want a failure at both registries", err)
	}
	for _, f := range perr.Failures {
		if f.Class != puller.Unverified {
			t.Errorf("pull with another key: %s failed %s, want %s", f.Registry, f.Class, puller.Unverified)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
