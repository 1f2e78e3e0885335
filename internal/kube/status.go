package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusPatch is a reconcile's one status write, made at its end (cluster-api's deferred patch
// shape): it remembers the status as read before the reconcile changes anything, and writes the
// object's status once, only when it differs. A reconciler takes it after its finalizer writes
// and defers Write:
//
//	patch := kube.BeginStatus(&app, &app.Status)
//	defer func() { err = errors.Join(err, patch.Write(ctx, c, report, count)) }()
type StatusPatch[S any] struct {
	obj    client.Object
	status *S
	before S
}

// BeginStatus remembers obj's status (status points into obj).
func BeginStatus[S any, P interface {
	*S
	DeepCopy() *S
}](obj client.Object, status P) *StatusPatch[S] {
	return &StatusPatch[S]{obj: obj, status: status, before: *status.DeepCopy()}
}

// Changed reports whether the status differs from what was read.
func (p *StatusPatch[S]) Changed() bool { return !equality.Semantic.DeepEqual(&p.before, p.status) }

// Write writes the status when report is set (the reconcile reached an account of the object:
// a reconcile that failed to read what it needs reports nothing and is retried) and the status
// changed, conditional on the resourceVersion read; count is called before the write (the writes
// metric).
func (p *StatusPatch[S]) Write(ctx context.Context, c client.Client, report bool, count func()) error {
	if !report || !p.Changed() {
		return nil
	}
	if count != nil {
		count()
	}
	return c.Status().Update(ctx, p.obj)
}
