package puller_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	. "github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/testbed"
)

// verifyCase is a source registry holding a signed artifact and a mirror it was replicated to
// without its signature, as a mirror that copies tags but not referrers does.
type verifyCase struct {
	source, mirror *testbed.Registry
	art            *testbed.Artifact
	a              Artifact
}

func newVerifyCase(t *testing.T) *verifyCase {
	t.Helper()
	vc := &verifyCase{
		source: testbed.StartRegistryT(t, testbed.RegistryOptions{}),
		mirror: testbed.StartRegistryT(t, testbed.RegistryOptions{}),
		art:    newArtifact(t, []byte("signed chart"), []byte("values")),
	}
	push(t, vc.source, "apps/web", "1.0", vc.art)
	push(t, vc.mirror, "apps/web", "1.0", vc.art)
	vc.a = Artifact{Repository: "apps/web", Tag: "1.0"}
	return vc
}

// pull pulls vc's artifact through mirror then source with verify, checking that a registry
// that fails verification commits nothing.
func (vc *verifyCase) pull(t *testing.T, v *Verify) (*pullCase, Status, error) {
	t.Helper()
	mirror, source := vc.mirror.Entry("mirror"), vc.source.Entry("source")
	mirror.Role, source.Role = RoleMirror, RoleSource
	pc := newPullCaseWith(t, time.Minute, func(o *Options) { o.Verify = v }, mirror, source)
	pc.p.SetOnAttempt(func(at Attempt) {
		pc.attempts = append(pc.attempts, at)
		if at.Class == Unverified {
			assertNothingCommitted(t, pc.dest, vc.art)
		}
	})
	st, err := pc.p.Pull(context.Background(), vc.a)
	return pc, st, err
}

func fingerprintOf(t *testing.T, pubPEM string) string {
	t.Helper()
	block, _ := pem.Decode([]byte(pubPEM))
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return Fingerprint(pub)
}

// TestVerifyCosignFailsOverToSignedRegistry: the mirror replicated the artifact but not its
// signature, so it is Unverified and the pull takes the artifact from the source, which has it
// signed; status names the key.
func TestVerifyCosignFailsOverToSignedRegistry(t *testing.T) {
	for _, referrers := range []bool{false, true} {
		name := map[bool]string{false: "tag-schema", true: "referrers"}[referrers]
		t.Run(name, func(t *testing.T) {
			vc := newVerifyCase(t)
			key := testbed.NewCosignKey(t)
			key.CosignSignT(t, vc.source, "apps/web", vc.art.Manifest, referrers)
			v := &Verify{Provider: VerifyCosign, PublicKeys: []string{testbed.NewCosignKey(t).PublicPEM, key.PublicPEM}}

			pc, st, err := vc.pull(t, v)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"mirror:Unverified", "source:"}; !reflect.DeepEqual(pc.tried(), want) {
				t.Errorf("tried %v, want %v", pc.tried(), want)
			}
			if !strings.Contains(pc.attempts[0].Err.Error(), "has no cosign signature") {
				t.Errorf("mirror's error = %v, want it to say the signature is missing", pc.attempts[0].Err)
			}
			want := pulled("source", 1, pc.clock.Now())
			want.Verified = "cosign key " + fingerprintOf(t, key.PublicPEM)
			if !reflect.DeepEqual(st, want) {
				t.Errorf("status = %+v, want %+v", st, want)
			}
			assertPulled(t, pc, vc.a, vc.art)

			// Once the mirror has the signature too, it serves the pull.
			key.CosignSignT(t, vc.mirror, "apps/web", vc.art.Manifest, referrers)
			pc, st, err = vc.pull(t, v)
			if want := []string{"mirror:"}; err != nil || !reflect.DeepEqual(pc.tried(), want) || st.Verified == "" {
				t.Errorf("tried %v, status %+v, %v; want the mirror, verified", pc.tried(), st, err)
			}
		})
	}
}

// TestVerifyCosignRejectsOtherSignatures: a signature by another key, and a trusted key's
// signature of another artifact put under this one's signature tag, verify nowhere: the pull
// fails Unverified on every registry and nothing reaches the cache.
func TestVerifyCosignRejectsOtherSignatures(t *testing.T) {
	trusted, other := testbed.NewCosignKey(t), testbed.NewCosignKey(t)
	v := &Verify{Provider: VerifyCosign, PublicKeys: []string{trusted.PublicPEM}}

	t.Run("wrong-key", func(t *testing.T) {
		vc := newVerifyCase(t)
		other.CosignSignT(t, vc.source, "apps/web", vc.art.Manifest, false)
		other.CosignSignT(t, vc.mirror, "apps/web", vc.art.Manifest, true)
		pc, st, err := vc.pull(t, v)
		assertUnverifiedEverywhere(t, pc, st, err, "signed by none of the 1 trusted keys")
	})

	t.Run("signature-of-another-artifact", func(t *testing.T) {
		vc := newVerifyCase(t)
		decoy := newArtifact(t, []byte("harmless"))
		for _, r := range []*testbed.Registry{vc.source, vc.mirror} {
			push(t, r, "apps/web", "decoy", decoy)
			trusted.CosignSignT(t, r, "apps/web", decoy.Manifest, false)
			repo := r.Repository("apps/web")
			sig, err := repo.Resolve(t.Context(), "sha256-"+decoy.Manifest.Digest.Encoded()+".sig")
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.Tag(t.Context(), sig, "sha256-"+vc.art.Manifest.Digest.Encoded()+".sig"); err != nil {
				t.Fatal(err)
			}
		}
		pc, st, err := vc.pull(t, v)
		assertUnverifiedEverywhere(t, pc, st, err, "signs "+decoy.Manifest.Digest.String())
	})
}

func assertUnverifiedEverywhere(t *testing.T, pc *pullCase, st Status, err error, why string) {
	t.Helper()
	var pullErr *Error
	if !errors.As(err, &pullErr) || len(pullErr.Failures) != 2 || pullErr.Failures[0].Class != Unverified || pullErr.Failures[1].Class != Unverified {
		t.Fatalf("error = %v, want an *Error with mirror and source Unverified", err)
	}
	if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "copy the signature with the artifact") {
		t.Errorf("error = %v, want it to say %q and what to do", err, why)
	}
	if want := (Status{State: Failed, Reason: Unverified, Registry: "source", Attempts: 1}); !reflect.DeepEqual(stripMessage(t, st), want) {
		t.Errorf("status = %+v, want %+v", st, want)
	}
	if _, err := pc.p.Resolve(context.Background(), Artifact{Repository: "apps/web", Tag: "1.0"}); err == nil {
		t.Error("the cache resolves an artifact that was never verified")
	}
}

// TestVerifyNotation: notation signatures (JWS, as referrers) verify against the trust store's
// root CA: the unsigned mirror is Unverified and the source serves the pull; a signature by a
// certificate of another CA, or by a signer the trusted identities do not name, verifies
// nowhere.
func TestVerifyNotation(t *testing.T) {
	ca := testbed.NewNotationCA(t, "release")
	vc := newVerifyCase(t)
	ca.NotationSignT(t, vc.source, "apps/web", vc.art.Manifest)

	v := &Verify{Provider: VerifyNotation, Certificates: []string{ca.RootPEM}, TrustedIdentities: []string{"x509.subject: " + ca.Subject}}
	pc, st, err := vc.pull(t, v)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"mirror:Unverified", "source:"}; !reflect.DeepEqual(pc.tried(), want) {
		t.Errorf("tried %v, want %v", pc.tried(), want)
	}
	if !strings.HasPrefix(st.Verified, "notation x509.subject "+ca.Subject+" (certificate SHA256:") {
		t.Errorf("verified = %q, want notation's signer %s", st.Verified, ca.Subject)
	}
	assertPulled(t, pc, vc.a, vc.art)

	other := testbed.NewNotationCA(t, "intruder")
	other.NotationSignT(t, vc.mirror, "apps/web", vc.art.Manifest)
	ca.NotationSignT(t, vc.mirror, "apps/web", vc.art.Manifest)
	for name, v := range map[string]*Verify{
		"other-ca":       {Provider: VerifyNotation, Certificates: []string{other.RootPEM}, TrustedIdentities: []string{"x509.subject: " + ca.Subject}},
		"other-identity": {Provider: VerifyNotation, Certificates: []string{ca.RootPEM}, TrustedIdentities: []string{"x509.subject: CN=someone else,O=Fleet Test,ST=WA,C=US"}},
	} {
		t.Run(name, func(t *testing.T) {
			pc, st, err := vc.pull(t, v)
			assertUnverifiedEverywhere(t, pc, st, err, "notation")
		})
	}
}

// TestVerifyProblems: keys and certificates that do not parse are problems naming the field,
// and a puller refuses them.
func TestVerifyProblems(t *testing.T) {
	ca := testbed.NewNotationCA(t, "release")
	key := testbed.NewCosignKey(t)
	priv, _ := x509.MarshalECPrivateKey(key.Private)
	privPEM := string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: priv}))
	leafPEM := strings.Join(strings.SplitAfter(ca.RootPEM, "-----END CERTIFICATE-----\n")[:1], "")
	for _, tc := range []struct {
		v     Verify
		field string
		msg   string
	}{
		{Verify{Provider: "gpg"}, "provider", `must be "cosign" or "notation"`},
		{Verify{Provider: VerifyCosign}, "public_keys", "at least one public key"},
		{Verify{Provider: VerifyCosign, PublicKeys: []string{key.PublicPEM, "not a key"}}, "public_keys[1]", "no PEM block"},
		{Verify{Provider: VerifyCosign, PublicKeys: []string{privPEM}}, "public_keys[0]", "never the private key"},
		{Verify{Provider: VerifyCosign, PublicKeys: []string{key.PublicPEM}, Certificates: []string{ca.RootPEM}}, "provider", "notation's"},
		{Verify{Provider: VerifyNotation}, "certificates", "at least one trust store certificate"},
		{Verify{Provider: VerifyNotation, Certificates: []string{key.PublicPEM}}, "certificates[0]", `PEM "PUBLIC KEY" block`},
		{Verify{Provider: VerifyNotation, Certificates: []string{leafPEM}, TrustedIdentities: []string{"nonsense"}}, "trusted_identities", ""},
	} {
		ps := tc.v.Problems()
		if len(ps) == 0 || ps[0].Field() != tc.field || !strings.Contains(ps[0].Message, tc.msg) {
			t.Errorf("%+v: problems %+v, want one on %s saying %q", tc.v, ps, tc.field, tc.msg)
		}
		v := tc.v
		if _, err := New([]Registry{{Name: "r", Reference: "localhost:1"}}, t.TempDir(), Options{Verify: &v}); err == nil {
			t.Errorf("%+v: New accepted it", tc.v)
		}
	}
	if ps := (&Verify{Provider: VerifyNotation, Certificates: []string{ca.RootPEM}}).Problems(); len(ps) != 0 {
		t.Errorf("a valid notation verify has problems %+v", ps)
	}
}
