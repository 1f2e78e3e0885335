package puller

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
)

// Registry is one entry of a chain, with the keys of Fleet's OCI storage secret.
type Registry struct {
	// Name identifies the registry in status and errors; unique within a chain.
	Name string `json:"name"`
	// Reference is host[:port][/namespace]; artifacts are looked up under the namespace.
	Reference string `json:"reference"`
	// Username and Password are the push credentials, used when no agent credentials are set.
	Username string `json:"username,omitempty"`
	Password Secret `json:"password,omitempty"`
	// AgentUsername and AgentPassword are the read-only credentials agents pull with.
	AgentUsername string `json:"agentUsername,omitempty"`
	AgentPassword Secret `json:"agentPassword,omitempty"`
	// CACerts is a PEM bundle trusted in addition to the system roots.
	CACerts string `json:"cacerts,omitempty"`
	// InsecureSkipTLS disables verification of the registry's certificate.
	InsecureSkipTLS bool `json:"insecureSkipTLS,omitempty"`
	// BasicHTTP talks plain HTTP instead of HTTPS.
	BasicHTTP bool `json:"basicHTTP,omitempty"`
	// Role is RoleSource for the registry Fleet pushes to, or RoleMirror for one that content is
	// replicated to. When no registry of the chain has a role, the last one is taken for the
	// source. It changes what errors advise, not how the registry is pulled from.
	Role string `json:"role,omitempty"`
}

// Registry roles, as fleet_oci_registry's role.
const (
	RoleSource = "source"
	RoleMirror = "mirror"
)

// credentials returns the agent credentials when set, else the push credentials, as Fleet's
// agent does.
func (r Registry) credentials() (string, string) {
	if r.AgentUsername != "" {
		return r.AgentUsername, string(r.AgentPassword)
	}
	return r.Username, string(r.Password)
}

// Secret is a credential; it formats as a placeholder so that it cannot leak through fmt or logs.
type Secret string

// String returns a placeholder, never the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "<redacted>"
}

// GoString returns a placeholder, never the secret.
func (s Secret) GoString() string { return s.String() }

// Artifact names what to pull: a repository below each registry's namespace and either a digest
// or a tag. A tag is resolved to a digest once; all content is then fetched by digest.
type Artifact struct {
	Repository string
	Tag        string
	Digest     digest.Digest
}

// ParseArtifact parses "<repository>@<digest>" or "<repository>:<tag>". With both, the digest wins.
func ParseArtifact(s string) (Artifact, error) {
	var a Artifact
	repo := s
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		d, err := digest.Parse(s[i+1:])
		if err != nil {
			return a, fmt.Errorf("artifact %q: invalid digest: %w", s, err)
		}
		a.Digest, repo = d, s[:i]
	}
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		if a.Digest == "" {
			a.Tag = repo[i+1:]
		}
		repo = repo[:i]
	}
	a.Repository = repo
	if a.Repository == "" || (a.Tag == "" && a.Digest == "") {
		return Artifact{}, fmt.Errorf("artifact %q: want <repository>@<digest> or <repository>:<tag>", s)
	}
	return a, nil
}

// String returns the artifact in the form ParseArtifact reads.
func (a Artifact) String() string {
	if a.Digest != "" {
		return a.Repository + "@" + a.Digest.String()
	}
	return a.Repository + ":" + a.Tag
}

// Class is the failure class of a pull from one registry.
type Class string

// Failure classes. NotFound makes the puller wait for replication; every other class moves it to
// the next registry at once.
const (
	Unauthorized      Class = "Unauthorized"
	TLS               Class = "TLS"
	Unreachable       Class = "Unreachable"
	NotFound          Class = "NotFound"
	IntegrityMismatch Class = "IntegrityMismatch"
)

// State is the state of a pull.
type State string

// Pull states. WaitingForArtifact is not an error: a registry lacks the artifact and the puller
// waits for replication.
const (
	Pulled             State = "Pulled"
	WaitingForArtifact State = "WaitingForArtifact"
	Failed             State = "Failed"
)

// Status is the pull status of one artifact, as reported in cluster and deployment status.
type Status struct {
	State State `json:"state,omitempty"`
	// Reason is the failure class of the last attempt; empty after a success.
	Reason Class `json:"reason,omitempty"`
	// Registry is the registry of the last attempt.
	Registry string `json:"registry,omitempty"`
	// Attempts counts the attempts at Registry in this pull.
	Attempts int `json:"attempts"`
	// NextRetry is when the puller asks Registry again while WaitingForArtifact.
	NextRetry *time.Time `json:"nextRetry,omitempty"`
	// LastSuccess is when the artifact was last pulled.
	LastSuccess *time.Time `json:"lastSuccess,omitempty"`
	// Message is the last attempt's error, for people; it never holds credentials.
	Message string `json:"message,omitempty"`
	// Verified names who signed the artifact pulled, when the chain verifies signatures: the
	// cosign key's fingerprint or notation's signing certificate.
	Verified string `json:"verified,omitempty"`
}

// Attempt describes one finished attempt at one registry, for logs and metrics.
type Attempt struct {
	Registry   string
	Class      Class // empty on success
	Err        error
	Start, End time.Time
}

// Error is a pull's final failure: every registry of the chain failed.
type Error struct {
	Artifact Artifact
	Failures []Failure
}

// Failure is why one registry of the chain was given up.
type Failure struct {
	Registry string `json:"registry"`
	Class    Class  `json:"class"`
	Message  string `json:"message,omitempty"`
	// Source is set when the registry is the chain's source, where content is pushed rather
	// than replicated to.
	Source bool `json:"source,omitempty"`
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pull %s: every registry in the chain failed", e.Artifact)
	for _, f := range e.Failures {
		fmt.Fprintf(&b, "; %s: %s (%s): %s", f.Registry, f.Class, f.hint(e.Artifact), f.Message)
	}
	return b.String()
}

// hint says what a person can do about a failure of the pull of a.
func (f Failure) hint(a Artifact) string {
	if f.Class == NotFound && f.Source {
		// Nothing replicates to a source: the artifact was never pushed there, or was deleted.
		return fmt.Sprintf("the artifact is not in the source registry: push it (%s)", a.pushHint())
	}
	return f.Class.hint()
}

// pushHint names what to push for a: its tag, or its digest.
func (a Artifact) pushHint() string {
	if a.Digest != "" {
		return "digest " + a.Digest.String() + " of " + a.Repository
	}
	return "tag " + a.Tag + " of " + a.Repository
}

// hint says what a person can do about a failure class.
func (c Class) hint() string {
	switch c {
	case Unauthorized:
		return "check agentUsername/agentPassword, or username/password when no agent credentials are set"
	case TLS:
		return "set cacerts to the CA that signed the registry's certificate, or basicHTTP for a plain-HTTP registry"
	case Unreachable:
		return "check the reference's host and port and that the registry is up"
	case NotFound:
		return "the artifact has not been replicated to this registry within the replication wait"
	case IntegrityMismatch:
		return "the registry served content that does not match its digest; it was discarded"
	case Unverified:
		return "the registry has no signature of the artifact by a trusted key: copy the signature with the artifact (oras cp -r, or replicate referrers and the sha256-<digest>.sig tag), or check the route's verify keys"
	}
	return ""
}

var errNoChain = errors.New("the chain has no registries; add at least one")
