package agent

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// pulledMetadata reads the size and pushed-at time of an artifact that a pull's cursor c says
// is pulled, from the agent's cache (puller.Metadata asks no registry); nothing for a pull that
// is not. A cache that cannot tell leaves them unset: they are for people and the hub's
// replication figures, not for the pull.
func pulledMetadata(ctx context.Context, p *puller.Puller, a puller.Artifact, c puller.Cursor) puller.Metadata {
	if !c.Done || c.Status.State != puller.Pulled {
		return puller.Metadata{}
	}
	m, err := p.Metadata(ctx, a)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "reading the pulled artifact's size and pushed-at", "artifact", a.String())
	}
	return m
}

// setMetadata puts m, the metadata of a pull in state Pulled, in its status, and clears it in
// any other state.
func setMetadata(status *v1alpha1.OCIPullStatus, m puller.Metadata) {
	if status.State != v1alpha1.OCIPullPulled {
		m = puller.Metadata{}
	}
	status.Size, status.PushedAt = m.Size, metaTime(m.Created)
}
