// Package hub connects to the hub cluster: it turns provider settings into a client, applies
// objects with server-side apply, and caches lists so that plan-time checks read each kind once.
package hub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Settings are the connection settings of the provider block, modelled on the kubernetes
// provider's. Empty strings are unset.
type Settings struct {
	ConfigPath           string
	ConfigContext        string
	Host                 string
	Token                string
	ClusterCACertificate string
	ClientCertificate    string
	ClientKey            string
	Insecure             bool
	Exec                 *ExecSettings
	// UserAgent is sent with every request to the hub, "terraform-provider-fleet/<version>";
	// default "terraform-provider-fleet".
	UserAgent string
}

// ExecSettings run a credential plugin, as kubeconfig's users[].user.exec does.
type ExecSettings struct {
	APIVersion string
	Command    string
	Args       []string
	Env        map[string]string
}

// ErrNotConfigured means the settings name no hub at all.
var ErrNotConfigured = errors.New("no hub configured: neither a kubeconfig nor a host is given")

// RESTConfig builds the client configuration: a kubeconfig file (with an optional context) when
// ConfigPath is set, overridden field by field by the explicit settings.
func (s Settings) RESTConfig() (*rest.Config, error) {
	if s.ConfigPath == "" && s.Host == "" {
		return nil, ErrNotConfigured
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.ConfigContext}
	if s.Host != "" {
		overrides.ClusterInfo.Server = s.Host
	}
	if s.ClusterCACertificate != "" {
		overrides.ClusterInfo.CertificateAuthorityData = []byte(s.ClusterCACertificate)
	}
	if s.Insecure {
		overrides.ClusterInfo.InsecureSkipTLSVerify = true
	}
	overrides.AuthInfo = clientcmdapi.AuthInfo{
		Token:                 s.Token,
		ClientCertificateData: []byte(s.ClientCertificate),
		ClientKeyData:         []byte(s.ClientKey),
	}
	if s.Exec != nil {
		exec := &clientcmdapi.ExecConfig{
			APIVersion:      s.Exec.APIVersion,
			Command:         s.Exec.Command,
			Args:            s.Exec.Args,
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}
		for k, v := range s.Exec.Env {
			exec.Env = append(exec.Env, clientcmdapi.ExecEnvVar{Name: k, Value: v})
		}
		overrides.AuthInfo.Exec = exec
	}

	rules := &clientcmd.ClientConfigLoadingRules{}
	if s.ConfigPath != "" {
		path, err := expandHome(s.ConfigPath)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("kubeconfig %q: %w", s.ConfigPath, err)
		}
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("hub client configuration: %w", err)
	}
	cfg.UserAgent = s.UserAgent
	if cfg.UserAgent == "" {
		cfg.UserAgent = "terraform-provider-fleet"
	}
	cfg.QPS, cfg.Burst = QPS, Burst
	return cfg, nil
}

// QPS and Burst are the provider's request rate limits on the hub (the controller sets its own
// from its flags). A plan reads each resource once (a GET), with Terraform's parallelism (10) in
// flight: at client-go's usual 50 a second, 2,000 routes would wait 40 s for the limiter alone.
// The hub's API Priority and Fairness still shares the server between clients; its 429 answers
// are retried (Transient).
const (
	QPS   = 500
	Burst = 1000
)

func expandHome(path string) (string, error) {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("kubeconfig %q: %w", path, err)
	}
	return filepath.Join(home, strings.TrimPrefix(path, "~")), nil
}
