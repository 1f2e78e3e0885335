package provider

import (
	"testing"

	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
)

// TestAccOCIRegistryPushCredentials: a registry with push credentials only warns that its
// clusters pull without credentials, naming what to set; agent credentials or the opt-in to
// Fleet's fallback silence it, and the opt-in is the Secret's agentUsesPushCredentials key,
// which goes again when the configuration drops it.
func TestAccOCIRegistryPushCredentials(t *testing.T) {
	w := newCLIWorkdir(t)
	kube := testHub(t)
	ws := testWorkspace(t, kube)
	const summary = "Clusters pull without credentials"
	registry := func(extra string) string {
		return registryConfig(ws, "m", "  role = \"mirror\"\n  reference = \"m.example.com\"\n  username = \"pusher\"\n"+
			"  password_wo = \"push-s3cret\"\n  password_wo_version = 1\n"+extra)
	}
	d, failed := w.plan(registry(""))
	expectWarnings(t, "push credentials only", d, failed, []string{summary}, map[string][]string{summary: {
		`Registry "m" has push credentials`, "clusters pull from it without credentials", "agent_username and agent_password_wo", "agent_uses_push_credentials = true"}})
	d, failed = w.plan(registry("  agent_username = \"puller\"\n  agent_password_wo = \"pull\"\n  agent_password_wo_version = 1\n"))
	expectWarnings(t, "agent credentials", d, failed, []string{summary}, nil)

	d = w.apply(registry("  agent_uses_push_credentials = true\n"))
	expectWarnings(t, "opted in", d, false, []string{summary}, nil)
	if got := string(getSecret(t, kube, ws, "m").Data[registrysecret.KeyAgentUsesPushCredentials]); got != "true" {
		t.Errorf("opted in: %s = %q, want true", registrysecret.KeyAgentUsesPushCredentials, got)
	}
	w.apply(registry(""))
	if v, ok := getSecret(t, kube, ws, "m").Data[registrysecret.KeyAgentUsesPushCredentials]; ok {
		t.Errorf("opt-in removed from the configuration: the Secret still has %s = %q", registrysecret.KeyAgentUsesPushCredentials, v)
	}
	w.destroy()
}
