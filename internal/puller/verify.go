package puller

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/notaryproject/notation-go"
	notationregistry "github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"

	// The signature envelope formats notation signs with.
	_ "github.com/notaryproject/notation-core-go/signature/cose"
	_ "github.com/notaryproject/notation-core-go/signature/jws"
)

// Signature providers, as a route's verify.provider.
const (
	VerifyCosign   = "cosign"
	VerifyNotation = "notation"
)

// Unverified is the failure class of a registry that serves an artifact without a signature
// the chain's verify settings trust: none at all (a mirror that replicated the artifact but not
// its signature), or only signatures by other keys. It moves on to the next registry at once.
const Unverified Class = "Unverified"

// errUnverified marks an artifact whose signature could not be verified.
var errUnverified = errors.New("no trusted signature")

// Verify says which signatures an artifact must carry before it is used: a chain (a route)
// that has one verifies every artifact at every registry before any of its content is fetched.
type Verify struct {
	// Provider is VerifyCosign or VerifyNotation.
	Provider string `json:"provider"`
	// PublicKeys are cosign public keys, PEM (ECDSA, RSA or Ed25519); a signature by any of
	// them is enough.
	PublicKeys []string `json:"publicKeys,omitempty"`
	// Certificates are notation's trust store: root CA certificates, PEM, a signature's
	// certificate chain must lead to one of them.
	Certificates []string `json:"certificates,omitempty"`
	// TrustedIdentities are the trust policy's trustedIdentities for notation, such as
	// "x509.subject: CN=release,O=Example"; empty trusts any signer the certificates vouch for.
	TrustedIdentities []string `json:"trustedIdentities,omitempty"`
}

// Bounds of what verification reads from a registry.
const (
	maxSignatures        = 16
	maxSignatureManifest = 64 << 10
	maxSignaturePayload  = 64 << 10
)

// Media types and annotations of cosign's signatures.
const (
	cosignSimpleSigning   = "application/vnd.dev.cosign.simplesigning.v1+json"
	cosignArtifactType    = "application/vnd.dev.cosign.artifact.sig.v1+json"
	cosignSignatureAnnot  = "dev.cosignproject.cosign/signature"
	cosignPayloadType     = "cosign container image signature"
	notationArtifactType  = "application/vnd.cncf.notary.signature"
	notationTrustStore    = "fleet"
	notationPolicyName    = "fleet"
	notationPolicyVersion = "1.0"
)

// VerifyProblem is one problem of a Verify, on the attribute of the route's verify block Attr
// (provider, public_keys, certificates, trusted_identities) and, for a list, its element
// Index (-1 for the attribute as a whole).
type VerifyProblem struct {
	Attr    string
	Index   int
	Message string
}

// Field names the problem's attribute as in public_keys[1].
func (p VerifyProblem) Field() string {
	if p.Index < 0 {
		return p.Attr
	}
	return fmt.Sprintf("%s[%d]", p.Attr, p.Index)
}

// Problems checks v: the provider is known, and every key or certificate parses. Plan-time
// validation and the agent use it alike.
func (v *Verify) Problems() []VerifyProblem {
	var ps []VerifyProblem
	add := func(attr string, i int, format string, a ...any) {
		ps = append(ps, VerifyProblem{attr, i, fmt.Sprintf(format, a...)})
	}
	switch v.Provider {
	case VerifyCosign:
		if len(v.PublicKeys) == 0 {
			add("public_keys", -1, "cosign verification needs at least one public key (PEM, as `cosign generate-key-pair` writes cosign.pub)")
		}
		for i, k := range v.PublicKeys {
			if _, err := parsePublicKey(k); err != nil {
				add("public_keys", i, "%v", err)
			}
		}
		if len(v.Certificates) > 0 || len(v.TrustedIdentities) > 0 {
			add("provider", -1, "certificates and trusted_identities are notation's; cosign verifies with public_keys")
		}
	case VerifyNotation:
		if len(v.Certificates) == 0 {
			add("certificates", -1, "notation verification needs at least one trust store certificate (PEM, the root CA of the signing certificates)")
		}
		for i, c := range v.Certificates {
			if _, err := parseCertificates(c); err != nil {
				add("certificates", i, "%v", err)
			}
		}
		if len(v.PublicKeys) > 0 {
			add("provider", -1, "public_keys are cosign's; notation verifies with certificates")
		}
		if len(ps) == 0 {
			if _, err := v.notationVerifier(); err != nil {
				add("trusted_identities", -1, "%v", err)
			}
		}
	default:
		add("provider", -1, "must be %q or %q, got %q", VerifyCosign, VerifyNotation, v.Provider)
	}
	return ps
}

// Err joins the problems of v into one error, nil when there are none.
func (v *Verify) Err() error {
	var msgs []string
	for _, p := range v.Problems() {
		msgs = append(msgs, p.Field()+": "+p.Message)
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("verify: %s", strings.Join(msgs, "; "))
}

// Fingerprint is how status names a public key: "SHA256:" and the hex digest of its DER
// SubjectPublicKeyInfo (what `cosign public-key` prints, hashed).
func Fingerprint(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return "SHA256:" + hex.EncodeToString(sum[:])
}

func parsePublicKey(s string) (crypto.PublicKey, error) {
	block, rest := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("holds no PEM block; give the public key in PEM (-----BEGIN PUBLIC KEY-----)")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("holds more than one PEM block; give one key per element")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("is a PEM %q block; give the public key (-----BEGIN PUBLIC KEY-----), never the private key", block.Type)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("is not a public key: %v", err)
	}
	switch pub.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
		return pub, nil
	}
	return nil, fmt.Errorf("is a %T key; cosign keys are ECDSA, RSA or Ed25519", pub)
}

func parseCertificates(s string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := []byte(s)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a PEM %q block; give certificates only (-----BEGIN CERTIFICATE-----)", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("is not a certificate: %v", err)
		}
		if !c.IsCA || !c.BasicConstraintsValid {
			return nil, fmt.Errorf("certificate %q is not a CA certificate; the trust store holds the root CA that issued the signing certificate", c.Subject)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("holds no PEM certificate; give the CA certificate in PEM")
	}
	return certs, nil
}

// verifier checks an artifact's signatures at one registry.
type signatureVerifier interface {
	// verify returns who signed root, for status, or an error wrapping errUnverified when no
	// trusted signature is found; a registry failure is returned as it is.
	verify(ctx context.Context, repo *remote.Repository, root ocispec.Descriptor) (string, error)
}

// newSignatureVerifier compiles v; nil for no verification.
func newSignatureVerifier(v *Verify) (signatureVerifier, error) {
	if v == nil {
		return nil, nil
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if v.Provider == VerifyNotation {
		nv, err := v.notationVerifier()
		return notationVerifier{nv}, err
	}
	var cv cosignVerifier
	for _, k := range v.PublicKeys {
		pub, _ := parsePublicKey(k) // checked by Err
		cv.keys = append(cv.keys, pub)
	}
	return cv, nil
}

// cosignVerifier verifies cosign's key-based signatures: simple-signing payloads signed by one
// of keys, found as referrers of the artifact (OCI 1.1, cosign's
// --registry-referrers-mode=oci-1-1) or under the tag sha256-<hex>.sig.
type cosignVerifier struct{ keys []crypto.PublicKey }

func (v cosignVerifier) verify(ctx context.Context, repo *remote.Repository, root ocispec.Descriptor) (string, error) {
	var manifests []ocispec.Descriptor
	err := repo.Referrers(ctx, root, cosignArtifactType, func(refs []ocispec.Descriptor) error {
		manifests = append(manifests, refs...)
		return nil
	})
	if err != nil && !errors.Is(err, errdef.ErrNotFound) && !errors.Is(err, errdef.ErrUnsupported) {
		return "", err
	}
	tag := root.Digest.Algorithm().String() + "-" + root.Digest.Encoded() + ".sig"
	desc, err := repo.Resolve(ctx, tag)
	switch {
	case err == nil:
		manifests = append(manifests, desc)
	case !errors.Is(err, errdef.ErrNotFound):
		return "", err
	}
	if len(manifests) == 0 {
		return "", fmt.Errorf("%w: %s has no cosign signature (no referrer of type %s, no tag %s)", errUnverified, root.Digest, cosignArtifactType, tag)
	}
	var why []string
	for i, m := range manifests {
		if i == maxSignatures {
			why = append(why, fmt.Sprintf("%d more signature manifests not read", len(manifests)-i))
			break
		}
		id, reason, err := v.check(ctx, repo, m, root.Digest)
		if err != nil {
			return "", err
		}
		if id != "" {
			return id, nil
		}
		why = append(why, reason)
	}
	return "", fmt.Errorf("%w: no cosign signature of %s by a trusted key (%s)", errUnverified, root.Digest, strings.Join(why, "; "))
}

// check reads one signature manifest: the key's identity when a layer verifies, else why not.
func (v cosignVerifier) check(ctx context.Context, repo *remote.Repository, m ocispec.Descriptor, want digest.Digest) (id, reason string, err error) {
	if m.Size > maxSignatureManifest {
		return "", fmt.Sprintf("signature manifest %s is larger than %d bytes", m.Digest, maxSignatureManifest), nil
	}
	raw, err := fetchBounded(ctx, repo.Manifests(), m, maxSignatureManifest)
	if err != nil {
		return "", "", err
	}
	var manifest ocispec.Manifest
	if json.Unmarshal(raw, &manifest) != nil {
		return "", fmt.Sprintf("signature manifest %s is not an image manifest", m.Digest), nil //nolint:nilerr // a reason to look further, not a registry failure
	}
	reason = fmt.Sprintf("signature manifest %s has no simple-signing layer", m.Digest)
	for i, layer := range manifest.Layers {
		if i == maxSignatures {
			break
		}
		sig, ok := layer.Annotations[cosignSignatureAnnot]
		if layer.MediaType != cosignSimpleSigning || !ok {
			continue
		}
		if layer.Size > maxSignaturePayload {
			reason = fmt.Sprintf("payload %s is larger than %d bytes", layer.Digest, maxSignaturePayload)
			continue
		}
		sigBytes, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			reason = fmt.Sprintf("signature of payload %s is not base64", layer.Digest)
			continue
		}
		payload, err := fetchBounded(ctx, repo.Blobs(), layer, maxSignaturePayload)
		if err != nil {
			return "", "", err
		}
		key := v.signer(payload, sigBytes)
		if key == nil {
			reason = fmt.Sprintf("payload %s is signed by none of the %d trusted keys", layer.Digest, len(v.keys))
			continue
		}
		var claim struct {
			Critical struct {
				Image struct {
					Digest string `json:"docker-manifest-digest"`
				} `json:"image"`
				Type string `json:"type"`
			} `json:"critical"`
		}
		if err := json.Unmarshal(payload, &claim); err != nil || claim.Critical.Type != cosignPayloadType {
			reason = fmt.Sprintf("payload %s is not a cosign container image signature", layer.Digest)
			continue
		}
		if claim.Critical.Image.Digest != want.String() {
			// A trusted key signed another artifact: a signature copied onto this one.
			reason = fmt.Sprintf("payload %s signs %s, not %s", layer.Digest, claim.Critical.Image.Digest, want)
			continue
		}
		return "cosign key " + Fingerprint(key), "", nil
	}
	return "", reason, nil
}

// signer returns the trusted key that signed payload with sig, or nil.
func (v cosignVerifier) signer(payload, sig []byte) crypto.PublicKey {
	sum := sha256.Sum256(payload)
	for _, k := range v.keys {
		var ok bool
		switch k := k.(type) {
		case *ecdsa.PublicKey:
			ok = ecdsa.VerifyASN1(k, sum[:], sig)
		case *rsa.PublicKey:
			ok = rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) == nil || rsa.VerifyPSS(k, crypto.SHA256, sum[:], sig, nil) == nil
		case ed25519.PublicKey:
			ok = ed25519.Verify(k, payload, sig)
		}
		if ok {
			return k
		}
	}
	return nil
}

// fetchBounded reads desc from f, at most limit bytes, checking its digest.
func fetchBounded(ctx context.Context, f interface {
	Fetch(context.Context, ocispec.Descriptor) (io.ReadCloser, error)
}, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	rc, err := f.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != desc.Size || desc.Digest.Validate() != nil || digest.FromBytes(data) != desc.Digest {
		return nil, fmt.Errorf("signature content %s: %w", desc.Digest, errIntegrity)
	}
	return data, nil
}

// staticTrustStore is notation's trust store held in memory: the route's certificates, as the
// CA store named notationTrustStore.
type staticTrustStore []*x509.Certificate

func (s staticTrustStore) GetCertificates(_ context.Context, storeType truststore.Type, name string) ([]*x509.Certificate, error) {
	if storeType != truststore.TypeCA || name != notationTrustStore {
		return nil, fmt.Errorf("trust store %s:%s is not defined", storeType, name)
	}
	return s, nil
}

// notationVerifier builds notation's verifier for v: one trust policy, for every registry
// scope (the chain's registries are the route's choice), strict, trusting the CA store of v's
// certificates and v's trusted identities (any, when none).
func (v *Verify) notationVerifier() (notation.Verifier, error) {
	var store staticTrustStore
	for _, c := range v.Certificates {
		certs, err := parseCertificates(c)
		if err != nil {
			return nil, err
		}
		store = append(store, certs...)
	}
	identities := v.TrustedIdentities
	if len(identities) == 0 {
		identities = []string{"*"}
	}
	doc := &trustpolicy.Document{Version: notationPolicyVersion, TrustPolicies: []trustpolicy.TrustPolicy{{
		Name:                  notationPolicyName,
		RegistryScopes:        []string{"*"},
		SignatureVerification: trustpolicy.SignatureVerification{VerificationLevel: trustpolicy.LevelStrict.Name},
		TrustStores:           []string{string(truststore.TypeCA) + ":" + notationTrustStore},
		TrustedIdentities:     identities,
	}}}
	return verifier.New(doc, store, nil)
}

// notationVerifier verifies notation signatures, found as referrers of the artifact.
type notationVerifier struct{ v notation.Verifier }

func (n notationVerifier) verify(ctx context.Context, repo *remote.Repository, root ocispec.Descriptor) (string, error) {
	ref := repo.Reference
	ref.Reference = root.Digest.String()
	_, outcomes, err := notation.Verify(ctx, n.v, notationregistry.NewRepository(repo), notation.VerifyOptions{
		ArtifactReference: ref.String(), MaxSignatureAttempts: maxSignatures,
	})
	if err != nil {
		var retrieval notation.SignatureRetrievalFailedError
		var failed notation.VerificationFailedError
		var inconclusive notation.VerificationInconclusiveError
		if errors.As(err, &retrieval) || errors.As(err, &failed) || errors.As(err, &inconclusive) {
			return "", fmt.Errorf("%w: notation: %v", errUnverified, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		return "", err
	}
	if len(outcomes) == 0 || outcomes[0].EnvelopeContent == nil || len(outcomes[0].EnvelopeContent.SignerInfo.CertificateChain) == 0 {
		return "", fmt.Errorf("%w: notation verified %s without a signer", errUnverified, root.Digest)
	}
	leaf := outcomes[0].EnvelopeContent.SignerInfo.CertificateChain[0]
	sum := sha256.Sum256(leaf.Raw)
	return fmt.Sprintf("notation x509.subject %s (certificate SHA256:%s)", leaf.Subject, hex.EncodeToString(sum[:])), nil
}

// verify checks root's signature at repo when the chain verifies signatures, and records who
// signed it for the attempt's status.
func (p *Puller) verify(ctx context.Context, repo *remote.Repository, root ocispec.Descriptor) error {
	if p.verifier == nil {
		return nil
	}
	id, err := p.verifier.verify(ctx, repo, root)
	if err != nil {
		return err
	}
	if sink, ok := ctx.Value(verifiedKey{}).(*string); ok {
		*sink = id
	}
	return nil
}

type verifiedKey struct{}

// withVerified returns ctx carrying where the attempt records who signed the artifact.
func withVerified(ctx context.Context, sink *string) context.Context {
	return context.WithValue(ctx, verifiedKey{}, sink)
}
