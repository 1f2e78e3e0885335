package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/hack/internal/localrun"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

func registryNamed(path, name string) (*testbed.Registry, error) {
	regs, err := localrun.ReadRegistries(path)
	if err != nil {
		return nil, err
	}
	r, ok := regs[name]
	if !ok {
		return nil, fmt.Errorf("the local fleet has no registry %q", name)
	}
	return testbed.Connect(r.Addr, r.Username, r.Password), nil
}

// stopRegistry stops a registry of the fleet (SIGTERM to its process), so that it is unreachable.
func stopRegistry(path, name string) error {
	regs, err := localrun.ReadRegistries(path)
	if err != nil {
		return err
	}
	r, ok := regs[name]
	if !ok || r.PID == 0 {
		return fmt.Errorf("the local fleet has no registry %q", name)
	}
	p, err := os.FindProcess(r.PID)
	if err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("registry %s (pid %d): %w", name, r.PID, err)
	}
	for range 100 {
		if p.Signal(syscall.Signal(0)) != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("stopped registry %s (%s)\n", name, r.Addr)
	return nil //nolint:nilerr // a failing signal 0 means the registry has exited
}

// splitRef splits repository:tag.
func splitRef(ref string) (repository, tag string, err error) {
	i := strings.LastIndex(ref, ":")
	if i <= 0 || strings.Contains(ref[i:], "/") {
		return "", "", fmt.Errorf("%q: want <repository>:<tag>", ref)
	}
	return ref[:i], ref[i+1:], nil
}

// tfVars prints, for a shell to eval, the registries' addresses and credentials as the variables
// of examples/local-fleet.
func tfVars(path string) error {
	regs, err := localrun.ReadRegistries(path)
	if err != nil {
		return err
	}
	for name, r := range regs {
		for k, v := range map[string]string{"address": r.Addr, "push_password": r.Password, "pull_password": r.AgentPassword} {
			fmt.Printf("export TF_VAR_%s_%s=%q\n", name, k, v)
		}
	}
	return nil
}

// push puts a small artifact at repository:tag in a registry of the fleet, its manifest
// annotated with the time of the push as `oras push` does: the pushed-at from which the hub
// measures a mirror's replication lag.
func push(ctx context.Context, path, registry, ref string) error {
	r, err := registryNamed(path, registry)
	if err != nil {
		return err
	}
	repo, tag, err := splitRef(ref)
	if err != nil {
		return err
	}
	a, err := testbed.NewArtifactAt(time.Now(), []byte(strings.Repeat(fmt.Sprintf("%s:%s\n", repo, tag), 4096)))
	if err != nil {
		return err
	}
	if err := r.PushArtifact(ctx, repo, tag, a); err != nil {
		return err
	}
	fmt.Printf("pushed %s to %s: %s\n", ref, registry, a.Manifest.Digest)
	return nil
}

// Cosign key files keygen writes in its folder and sign reads.
const (
	cosignPrivateFile = "cosign.key"
	cosignPublicFile  = "cosign.pub"
)

// keygen writes a cosign key pair (ECDSA P-256, as `cosign generate-key-pair` makes) into dir:
// cosign.pub, the public key a route's verify block takes, and cosign.key, the private key in
// PEM, unencrypted (cosign's own is password-encrypted), mode 0600.
func keygen(dir string) error {
	if dir == "" {
		return fmt.Errorf("keygen wants a folder")
	}
	k, err := testbed.GenerateCosignKey()
	if err != nil {
		return err
	}
	private, err := k.PrivatePEM()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, cosignPrivateFile), []byte(private), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, cosignPublicFile), []byte(k.PublicPEM), 0o644); err != nil { //nolint:gosec // a public key
		return err
	}
	fmt.Printf("wrote a cosign key pair: %s (public key %s), %s\n", filepath.Join(dir, cosignPublicFile),
		puller.Fingerprint(&k.Private.PublicKey), filepath.Join(dir, cosignPrivateFile))
	return nil
}

// sign signs repository:tag in a registry of the fleet with the private key keygen wrote, as
// `cosign sign --key` does with its default tag schema: the signature is the artifact
// sha256-<digest>.sig in the same repository, which replicating the tag alone does not copy.
func sign(ctx context.Context, path, registry, ref, keyFile string) error {
	r, err := registryNamed(path, registry)
	if err != nil {
		return err
	}
	repo, tag, err := splitRef(ref)
	if err != nil {
		return err
	}
	pemData, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	k, err := testbed.ParseCosignKey(pemData)
	if err != nil {
		return fmt.Errorf("%s: %w", keyFile, err)
	}
	subject, err := r.Repository(repo).Resolve(ctx, tag)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", ref, registry, err)
	}
	if err := k.CosignSign(ctx, r, repo, subject, false); err != nil {
		return err
	}
	fmt.Printf("signed %s in %s (%s) with cosign key %s: tag %s-%s.sig\n", ref, registry, subject.Digest,
		puller.Fingerprint(&k.Private.PublicKey), subject.Digest.Algorithm(), subject.Digest.Encoded())
	return nil
}

// pushChart puts the test bed's hello chart at repository:version in a registry of the fleet, as
// `helm push` stores a chart; the chart is named after the repository's last element.
func pushChart(ctx context.Context, path, registry, ref string) error {
	r, err := registryNamed(path, registry)
	if err != nil {
		return err
	}
	repo, version, err := splitRef(ref)
	if err != nil {
		return err
	}
	d, err := r.PushChart(ctx, repo, testbed.HelloChart(repo[strings.LastIndex(repo, "/")+1:], version))
	if err != nil {
		return err
	}
	fmt.Printf("pushed chart %s to %s: %s\n", ref, registry, d.Digest)
	return nil
}

// replicate copies repository:tag from one registry of the fleet to another, as replication does.
func replicate(ctx context.Context, path, from, to, ref string) error {
	src, err := registryNamed(path, from)
	if err != nil {
		return err
	}
	dst, err := registryNamed(path, to)
	if err != nil {
		return err
	}
	repo, tag, err := splitRef(ref)
	if err != nil {
		return err
	}
	d, err := dst.Copy(ctx, src, repo, tag)
	if err != nil {
		return err
	}
	fmt.Printf("replicated %s from %s to %s: %s\n", ref, from, to, d.Digest)
	return nil
}

// requestPull asks a cluster to pull repository:tag: the ManifestWork pull-<name> in its
// namespace carries the OCIPull <name>; an existing request of that name is updated.
func requestPull(ctx context.Context, c client.Client, ws, cluster, name, ref string) error {
	repo, tag, err := splitRef(ref)
	if err != nil {
		return err
	}
	w, err := pullwork.New(cluster, "pull-"+name, ws, pullwork.Request{Name: name, Spec: v1alpha1.OCIPullSpec{Repository: repo, Tag: tag}})
	if err != nil {
		return err
	}
	err = c.Create(ctx, w)
	if apierrors.IsAlreadyExists(err) {
		obs := w.DeepCopy()
		if err = c.Get(ctx, client.ObjectKeyFromObject(w), obs); err == nil {
			obs.Spec = w.Spec
			err = c.Update(ctx, obs)
		}
	}
	if err != nil {
		return err
	}
	fmt.Printf("asked %s to pull %s (ManifestWork %s/%s carries OCIPull %s)\n", cluster, ref, cluster, w.Name, name)
	return nil
}
