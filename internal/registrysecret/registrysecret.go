// Package registrysecret is the one codec of Fleet's OCI registry Secret: its type, the keys
// Fleet reads, and the role label. Fleet-compatible, so a Rancher Fleet can use a source
// registry's Secret as a GitRepo's ociRegistrySecret.
package registrysecret

import (
	"encoding/base64"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The Secret's type and the label carrying a registry's role.
const (
	Type      = "fleet.cattle.io/bundle-oci-storage/v1alpha1"
	RoleLabel = "fleet.umkim.io/oci-registry-role"

	RoleSource = "source"
	RoleMirror = "mirror"
)

// The Secret's keys.
const (
	KeyReference       = "reference"
	KeyUsername        = "username"
	KeyPassword        = "password"
	KeyAgentUsername   = "agentUsername"
	KeyAgentPassword   = "agentPassword"
	KeyBasicHTTP       = "basicHTTP"
	KeyInsecureSkipTLS = "insecureSkipTLS"
	KeyCACerts         = "cacerts"
	// KeyAgentUsesPushCredentials ("true") opts a registry without agent credentials in to
	// Fleet's fallback: its push credentials are delivered to the clusters it routes. Ours, not
	// Fleet's (Fleet always falls back, and ignores the key).
	KeyAgentUsesPushCredentials = "agentUsesPushCredentials"
)

// Registry is the content of one registry Secret. Empty strings are absent keys.
type Registry struct {
	Role            string
	Reference       string
	Username        string
	Password        string
	AgentUsername   string
	AgentPassword   string
	CACerts         string
	BasicHTTP       bool
	InsecureSkipTLS bool
	// AgentUsesPushCredentials: clusters may pull with Username and Password when there are no
	// agent credentials.
	AgentUsesPushCredentials bool
}

// Is reports whether obj is a registry Secret.
func Is(obj *unstructured.Unstructured) bool {
	t, _, _ := unstructured.NestedString(obj.Object, "type")
	return t == Type
}

// Data returns the Secret's keys decoded; a key that is not base64 is an error naming it.
func Data(obj *unstructured.Unstructured) (map[string]string, error) {
	raw, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	out := make(map[string]string, len(raw))
	for k, enc := range raw {
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("key %q of Secret %s/%s is not base64", k, obj.GetNamespace(), obj.GetName())
		}
		out[k] = string(b)
	}
	return out, nil
}

// Decode reads a registry Secret.
func Decode(obj *unstructured.Unstructured) (Registry, error) {
	data, err := Data(obj)
	if err != nil {
		return Registry{}, err
	}
	return FromData(obj.GetLabels()[RoleLabel], data), nil
}

// FromData reads a registry from decoded Secret keys.
func FromData(role string, data map[string]string) Registry {
	flag := func(k string) bool { b, _ := strconv.ParseBool(data[k]); return b }
	return Registry{
		Role:            role,
		Reference:       data[KeyReference],
		Username:        data[KeyUsername],
		Password:        data[KeyPassword],
		AgentUsername:   data[KeyAgentUsername],
		AgentPassword:   data[KeyAgentPassword],
		CACerts:         data[KeyCACerts],
		BasicHTTP:       flag(KeyBasicHTTP),
		InsecureSkipTLS: flag(KeyInsecureSkipTLS),

		AgentUsesPushCredentials: flag(KeyAgentUsesPushCredentials),
	}
}

// Data returns the registry's keys, undecoded; empty strings are left out, the TLS and HTTP flags
// are always written, the opt-in to push credentials only when set.
func (r Registry) Data() map[string]string {
	data := map[string]string{
		KeyBasicHTTP:       strconv.FormatBool(r.BasicHTTP),
		KeyInsecureSkipTLS: strconv.FormatBool(r.InsecureSkipTLS),
	}
	if r.AgentUsesPushCredentials {
		data[KeyAgentUsesPushCredentials] = "true"
	}
	for k, v := range map[string]string{
		KeyReference: r.Reference, KeyUsername: r.Username, KeyPassword: r.Password,
		KeyAgentUsername: r.AgentUsername, KeyAgentPassword: r.AgentPassword, KeyCACerts: r.CACerts,
	} {
		if v != "" {
			data[k] = v
		}
	}
	return data
}

// Encode returns data as a Secret's base64 data field.
func Encode(data map[string]string) map[string]any {
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	return out
}
