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
}

// Registry turns a registry Secret of the hub into a chain entry for an agent: the agent
// credentials only, or the push credentials when the registry has no agent credentials (push is
// then true, and the caller must say so).
func Registry(name string, r registrysecret.Registry) (entry puller.Registry, push bool) {
	entry = puller.Registry{
		Name: name, Reference: r.Reference, Role: r.Role, CACerts: r.CACerts,
		InsecureSkipTLS: r.InsecureSkipTLS, BasicHTTP: r.BasicHTTP,
		AgentUsername: r.AgentUsername, AgentPassword: puller.Secret(r.AgentPassword),
	}
	if r.AgentUsername == "" && r.AgentPassword == "" && (r.Username != "" || r.Password != "") {
		entry.Username, entry.Password = r.Username, puller.Secret(r.Password)
		push = true
	}
	return entry, push
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
	return c, nil
}
