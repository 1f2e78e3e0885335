// Package ocichain is the pull chain of one cluster as the hub controller delivers it: a JSON
// document in a Secret on the cluster, which `fleet-controller pull --chain` and the agent read.
// It holds the route, its replication wait and, for each registry in order, what an agent needs
// to pull: reference, TLS settings, CA bundle and read-only credentials.
package ocichain

import (
	"encoding/json"
	"fmt"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
)

// Where a chain lands on a cluster.
const (
	// Namespace on the workload cluster that holds the chain Secrets and the agent.
	Namespace = "fleet-system"
	// Key is the Secret key holding the chain document.
	Key = "chain.json"
)

// SecretName is the name of a workspace's chain Secret on a cluster.
func SecretName(workspace string) string { return "oci-chain-" + workspace }

// Chain is the document: where a cluster pulls from, in order.
type Chain struct {
	Workspace       string            `json:"workspace,omitempty"`
	Route           string            `json:"route,omitempty"`
	ReplicationWait string            `json:"replicationWait,omitempty"`
	Registries      []puller.Registry `json:"registries"`
	// Verify, when set, is the signature every artifact must carry (the route's verify).
	Verify *puller.Verify `json:"verify,omitempty"`
}

// Credentials says which credentials a chain entry carries to the clusters.
type Credentials int

const (
	// AgentCredentials: the registry's agent (read-only) credentials, or none when it has none at all.
	AgentCredentials Credentials = iota
	// PushCredentials: the push credentials, delivered because the registry opted in to Fleet's
	// fallback (agentUsesPushCredentials) and has no agent credentials.
	PushCredentials
	// NoCredentials: the registry has push credentials only and did not opt in, so they stay on
	// the hub and the clusters pull without credentials.
	NoCredentials
)

// Registry turns a registry Secret of the hub into a chain entry for an agent. Push credentials
// never leave the hub unless the registry opts in and has no agent credentials; the second result
// says what the entry carries, which the caller must report.
func Registry(name string, r registrysecret.Registry) (entry puller.Registry, creds Credentials) {
	entry = puller.Registry{
		Name: name, Reference: r.Reference, Role: r.Role, CACerts: r.CACerts,
		InsecureSkipTLS: r.InsecureSkipTLS, BasicHTTP: r.BasicHTTP,
		AgentUsername: r.AgentUsername, AgentPassword: puller.Secret(r.AgentPassword),
	}
	switch {
	case r.AgentUsername != "" || r.AgentPassword != "" || r.Username == "" && r.Password == "":
		return entry, AgentCredentials
	case r.AgentUsesPushCredentials:
		entry.Username, entry.Password = r.Username, puller.Secret(r.Password)
		return entry, PushCredentials
	default:
		return entry, NoCredentials
	}
}

// Marshal encodes the chain document.
func (c Chain) Marshal() ([]byte, error) { return json.Marshal(c) }

// Parse reads a chain document, JSON or YAML; unknown fields are errors, so that a misspelt key
// does not silently drop a credential.
func Parse(data []byte) (Chain, error) {
	var c Chain
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Chain{}, err
	}
	if len(c.Registries) == 0 {
		return Chain{}, fmt.Errorf("the chain lists no registries; add them under `registries:`")
	}
	if i := slices.IndexFunc(c.Registries, func(r puller.Registry) bool { return r.Reference == "" }); i >= 0 {
		return Chain{}, fmt.Errorf("registries[%d] (%q) has no reference", i, c.Registries[i].Name)
	}
	if c.Verify != nil {
		if err := c.Verify.Err(); err != nil {
			return Chain{}, err
		}
	}
	return c, nil
}
