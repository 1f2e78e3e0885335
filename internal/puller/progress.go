package puller

import (
	"context"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// Progress is how far one attempt at a registry has got.
type Progress struct {
	// Registry is the registry of the attempt.
	Registry string
	// Done is the bytes of the artifact received in this attempt, content the destination
	// already held counted as done.
	Done int64
	// Total is the size of the artifact's content as far as its manifests tell so far: the
	// whole of it for an image or artifact manifest; an index's manifests add theirs as they
	// are fetched.
	Total int64
}

// tracker counts an attempt's progress and reports it to fn.
type tracker struct {
	registry    string
	done, total atomic.Int64
	fn          func(Progress)
	held        content.Fetcher // the destination
}

func newTracker(registry string, rootSize int64, held content.Fetcher, fn func(Progress)) *tracker {
	tr := &tracker{registry: registry, fn: fn, held: held}
	tr.add(&tr.total, rootSize)
	return tr
}

// add adds n to one of the counters and reports.
func (tr *tracker) add(counter *atomic.Int64, n int64) {
	counter.Add(n)
	if tr.fn != nil {
		tr.fn(Progress{Registry: tr.registry, Done: tr.done.Load(), Total: tr.total.Load()})
	}
}

// findSuccessors is content.Successors, counting the successors' sizes into the total.
func (tr *tracker) findSuccessors(ctx context.Context, f content.Fetcher, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	successors, err := content.Successors(ctx, f, desc)
	var n int64
	for _, s := range successors {
		n += s.Size
	}
	tr.add(&tr.total, n)
	return successors, err
}

// skipped counts content the destination already holds as done, with what it refers to (read
// from the destination), which the copy does not visit.
func (tr *tracker) skipped(ctx context.Context, desc ocispec.Descriptor) error {
	n := desc.Size + tr.heldBelow(ctx, desc)
	tr.add(&tr.total, n-desc.Size)
	tr.add(&tr.done, n)
	return nil
}

// heldBelow is the size of the content below desc in the destination; what it cannot read counts
// as nothing.
func (tr *tracker) heldBelow(ctx context.Context, desc ocispec.Descriptor) int64 {
	successors, err := content.Successors(ctx, tr.held, desc)
	if err != nil {
		return 0
	}
	var n int64
	for _, s := range successors {
		n += s.Size + tr.heldBelow(ctx, s)
	}
	return n
}
