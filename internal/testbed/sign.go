package testbed

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
)

// Signatures made in tests, in the formats the tools write, so that the agent's verification
// is tested against what cosign and notation push, not against itself.

// CosignKey is a cosign key pair generated for a test, as `cosign generate-key-pair` makes
// one: ECDSA P-256.
type CosignKey struct {
	Private *ecdsa.PrivateKey
	// PublicPEM is the public key, PEM, as cosign.pub holds it.
	PublicPEM string
}

// NewCosignKey generates a cosign key pair.
func NewCosignKey(tb testing.TB) CosignKey {
	tb.Helper()
	k, err := GenerateCosignKey()
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// GenerateCosignKey generates a cosign key pair outside a test (make demo's `demohub keygen`).
func GenerateCosignKey() (CosignKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return CosignKey{}, err
	}
	return cosignKeyOf(k)
}

func cosignKeyOf(k *ecdsa.PrivateKey) (CosignKey, error) {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return CosignKey{}, err
	}
	return CosignKey{Private: k, PublicPEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}, nil
}

// PrivatePEM is the private key, PEM ("PRIVATE KEY", PKCS #8), unencrypted: unlike cosign.key,
// which cosign encrypts with a password. ParseCosignKey reads it back.
func (k CosignKey) PrivatePEM() (string, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.Private)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// ParseCosignKey reads a key pair from the private key PrivatePEM wrote.
func ParseCosignKey(privatePEM []byte) (CosignKey, error) {
	b, _ := pem.Decode(privatePEM)
	if b == nil || b.Type != "PRIVATE KEY" {
		return CosignKey{}, fmt.Errorf("want a PEM \"PRIVATE KEY\" block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return CosignKey{}, err
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return CosignKey{}, fmt.Errorf("a %T, not an ECDSA key", k)
	}
	return cosignKeyOf(ec)
}

// CosignSign signs subject, a manifest in repository of r, as `cosign sign --key` does
// (key-based, no transparency log): a simple-signing payload claiming subject's digest, its
// ECDSA signature in the layer's annotation, in an image manifest. With referrers false it is
// tagged sha256-<hex>.sig (cosign's default); with referrers true it is pushed with subject
// set and cosign's artifact type (cosign's --registry-referrers-mode=oci-1-1).
func (k CosignKey) CosignSign(ctx context.Context, r *Registry, repository string, subject ocispec.Descriptor, referrers bool) error {
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]any{"docker-reference": r.Addr + "/" + repository},
			"image":    map[string]any{"docker-manifest-digest": subject.Digest.String()},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, k.Private, sum[:])
	if err != nil {
		return err
	}
	store := memory.New()
	layer := content.NewDescriptorFromBytes("application/vnd.dev.cosign.simplesigning.v1+json", payload)
	layer.Annotations = map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}
	if err := store.Push(ctx, layer, bytes.NewReader(payload)); err != nil {
		return err
	}
	opts := oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}}
	if referrers {
		opts.Subject = &subject
	}
	m, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "application/vnd.dev.cosign.artifact.sig.v1+json", opts)
	if err != nil {
		return err
	}
	repo := r.Repository(repository)
	repo.SkipReferrersGC = true // the test registry deletes nothing; an old referrers index stays
	if err := oras.CopyGraph(ctx, store, repo, m, oras.DefaultCopyGraphOptions); err != nil {
		return fmt.Errorf("push the signature to %s: %w", repo.Reference, err)
	}
	if !referrers {
		return repo.Tag(ctx, m, subject.Digest.Algorithm().String()+"-"+subject.Digest.Encoded()+".sig")
	}
	return nil
}

// CosignSignT is CosignSign for a test, failing it on error.
func (k CosignKey) CosignSignT(tb testing.TB, r *Registry, repository string, subject ocispec.Descriptor, referrers bool) {
	tb.Helper()
	if err := k.CosignSign(tb.Context(), r, repository, subject, referrers); err != nil {
		tb.Fatal(err)
	}
}

// NotationCA is a root CA and a code-signing certificate it issued, generated for a test, as
// notation's trust store and signing key hold them.
type NotationCA struct {
	// RootPEM is the root CA certificate, PEM: what a trust store holds.
	RootPEM string
	// Subject is the signing certificate's subject, as a trusted identity names it.
	Subject string
	key     crypto.Signer
	chain   []*x509.Certificate
}

// NewNotationCA generates a root CA and a signing certificate with subject
// CN=cn,O=Fleet Test,ST=WA,C=US (notation's trusted identities need C, ST and O).
func NewNotationCA(tb testing.TB, cn string) NotationCA {
	tb.Helper()
	now := time.Now()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn + " root", Organization: []string{"Fleet Test"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		tb.Fatal(err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: []string{"Fleet Test"}, Province: []string{"WA"}, Country: []string{"US"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, root, &leafKey.PublicKey, rootKey)
	if err != nil {
		tb.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	return NotationCA{
		RootPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER})),
		Subject: leaf.Subject.String(), key: leafKey, chain: []*x509.Certificate{leaf, root},
	}
}

// NotationSign signs subject, a manifest in repository of r, with notation's library as
// `notation sign` does: a JWS envelope pushed as a referrer of subject.
func (ca NotationCA) NotationSign(ctx context.Context, r *Registry, repository string, subject ocispec.Descriptor) error {
	s, err := signer.NewGenericSigner(ca.key, ca.chain)
	if err != nil {
		return err
	}
	repo := r.Repository(repository)
	repo.SkipReferrersGC = true // the test registry deletes nothing; an old referrers index stays
	_, err = notation.Sign(ctx, s, notationregistry.NewRepository(repo), notation.SignOptions{
		ArtifactReference: r.Addr + "/" + repository + "@" + subject.Digest.String(),
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: "application/jose+json"},
	})
	return err
}

// NotationSignT is NotationSign for a test, failing it on error.
func (ca NotationCA) NotationSignT(tb testing.TB, r *Registry, repository string, subject ocispec.Descriptor) {
	tb.Helper()
	if err := ca.NotationSign(tb.Context(), r, repository, subject); err != nil {
		tb.Fatal(err)
	}
}
