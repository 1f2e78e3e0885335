package controller

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/umkim/terraform-provider-fleet/internal/appwork"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
	"github.com/umkim/terraform-provider-fleet/internal/pullwork"
)

// A work's manifests are the bulk of it (a chain document, a release's values), and the cache
// holds every work the controller wrote: one per cluster and workspace. So the cache keeps of a
// work its metadata, the rest of its spec and its status, and not its manifests (slimManifestWork);
// whether a work carries what the controller wants is read from ManifestsDigestAnnotation, the
// digest of its manifests the controller writes with them.
//
// The digest is taken over each manifest's canonical JSON (decoded and encoded again: sorted
// keys, one spelling per value), since the apiserver re-encodes what it stores. The cache
// transform, which still sees the manifests, checks the annotation against them: a work whose
// manifests were changed by hand (the digest left as it was) shows in the cache without the
// annotation, as does a work an older controller wrote, and each is rewritten once.

// ManifestsDigestAnnotation is the digest of a work's manifests, written by the controller with
// them.
const ManifestsDigestAnnotation = "fleet.umkim.io/manifests-digest"

// manifestsDigest is the digest of manifests: SHA-256 over each one's canonical JSON, each
// preceded by its length.
func manifestsDigest(manifests []workv1.Manifest) string {
	h := sha256.New()
	var n [8]byte
	for _, m := range manifests {
		c := canonicalJSON(m.Raw)
		binary.BigEndian.PutUint64(n[:], uint64(len(c)))
		h.Write(n[:])
		h.Write(c)
	}
	return "sha256:" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// canonicalJSON is raw decoded and encoded again; what does not decode is itself.
func canonicalJSON(raw []byte) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	c, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return c
}

// stampDigest writes the digest of w's manifests into its ManifestsDigestAnnotation; the writers
// call it on every desired work.
func stampDigest(w *workv1.ManifestWork) {
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, ManifestsDigestAnnotation, manifestsDigest(w.Spec.Workload.Manifests))
}

// manifestsUpToDate reports whether observed (as the cache holds it) carries desired's manifests:
// its digest annotation, checked by the cache against its manifests, is desired's. A desired work
// not stamped is digested here.
func manifestsUpToDate(observed, desired *workv1.ManifestWork) bool {
	want, ok := desired.Annotations[ManifestsDigestAnnotation]
	if !ok {
		want = manifestsDigest(desired.Spec.Workload.Manifests)
	}
	got, ok := observed.Annotations[ManifestsDigestAnnotation]
	return ok && got == want
}

// keepsManifests says which works the cache keeps whole: those whose manifests a reconciler
// reads (pull-status reads the pulls a work asks for from them).
func keepsManifests(w *workv1.ManifestWork) bool {
	c := w.Labels[hub.ComponentLabel]
	return c == pullwork.Component || c == appwork.Component
}

// slimManifestWork drops managedFields and, unless a reconciler reads them (keepsManifests), the
// manifests of a cached work, after checking its digest annotation against them: an annotation
// that does not match (manifests changed by hand) is dropped too, so that the work looks
// unstamped and is rewritten. (A hand edit that leaves a work no manifest at all is not told
// from a work transformed before, and goes unrepaired until the next change.)
func slimManifestWork(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	w, ok := obj.(*workv1.ManifestWork)
	if !ok || err != nil {
		return obj, err
	}
	// The informer may pass an object it has transformed through again (client-go's Replace):
	// without manifests, there is nothing to check, and what was checked stays.
	if d, ok := w.Annotations[ManifestsDigestAnnotation]; ok && len(w.Spec.Workload.Manifests) > 0 && d != manifestsDigest(w.Spec.Workload.Manifests) {
		delete(w.Annotations, ManifestsDigestAnnotation)
	}
	if !keepsManifests(w) {
		w.Spec.Workload.Manifests = nil
	}
	return w, nil
}
