package agent

import (
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/client-go/rest"
)

// HelmConfig is a Helm configuration for releases of namespace acting with cfg's identity, as
// an administrator's helm CLI would: the tests install releases "by hand" with it.
func HelmConfig(cfg *rest.Config, namespace string) (*action.Configuration, error) {
	getter, err := newRESTGetter(cfg, namespace)
	if err != nil {
		return nil, err
	}
	c := new(action.Configuration)
	if err := c.Init(getter, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return c, nil
}
