package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmregistry "helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/yaml"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/kube"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// The agent reads FleetReleases in its own namespace only; Helm acts as the release's
// workspace ServiceAccount (workspace.go), never with the agent's own rights.
// +kubebuilder:rbac:groups=fleet.umkim.io,namespace=fleet-system,resources=fleetreleases,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=fleet.umkim.io,namespace=fleet-system,resources=fleetreleases/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.umkim.io,namespace=fleet-system,resources=fleetreleases/finalizers,verbs=update

// Defaults of the release reconciler.
const (
	// DefaultHelmTimeout bounds one Helm install, upgrade or uninstall (hooks included; the
	// agent does not wait for the release's workloads to run).
	DefaultHelmTimeout = 5 * time.Minute
	// DefaultReleaseBackoffInitial and DefaultReleaseBackoffMax space the attempts at a release
	// that fails: the n-th retry waits between half and all of min(initial·2ⁿ⁻¹, max).
	DefaultReleaseBackoffInitial = 10 * time.Second
	DefaultReleaseBackoffMax     = 5 * time.Minute
	// baselineRetry is the fixed retry of a failed release before back-off, which
	// e2e.BenchmarkFaultsFailingReleases measures as its baseline (fixedRetry).
	baselineRetry = 30 * time.Second
	// releaseMaxHistory is how many revisions Helm keeps per release, as `helm upgrade` does.
	releaseMaxHistory = 10
)

// Field indexes of FleetReleases, so that an OCIPull or a values Secret maps to its releases.
const (
	pullIndex         = "spec.pull"
	valuesSecretIndex = "spec.valuesSecretRef.name"
)

// FleetReleaseReconciler installs the chart an OCIPull brought into the layout at CacheDir as the
// Helm release each FleetRelease describes, upgrades it when the spec, the chart or the values
// change, and uninstalls it when the FleetRelease goes (finalizer v1alpha1.UninstallFinalizer),
// then deletes the workspace's ServiceAccount and RoleBinding that no other release needs.
// Helm keeps the release's history in Secrets of the release's namespace, as the helm CLI does,
// and acts as the workspace's ServiceAccount (WorkspaceServiceAccount), bound to WorkspaceRole
// in the release namespace.
//
// A release records its owner in Helm's release labels (v1alpha1.ReleaseOwner): the agent
// upgrades and uninstalls only the releases it installed for the FleetRelease's workspace and
// app. Any other release of that name and namespace (installed by hand, or for another app) is
// left untouched and the FleetRelease is OwnedElsewhere, unless spec.adopt asks to take it over.
//
// A release Deployed for its generation and its pull's digest is left alone when its values
// are those last deployed: the reconciler remembers their hash, and after a restart reads it
// once from Helm's last release. Such a steady release is compared with the cluster every
// DriftInterval, and status.drift names its objects changed or deleted there (drift.go); a new
// generation (spec.repairs raised, or any other change) upgrades it, which restores them.
type FleetReleaseReconciler struct {
	client.Client
	// Reader reads what the cache does not hold (namespaces, RoleBindings, the ServiceAccounts).
	Reader client.Reader
	// Config is the agent's REST config, which Helm's clients are made from, impersonating the
	// workspace's ServiceAccount.
	Config *rest.Config
	// Namespace is the agent's namespace, which holds the workspaces' ServiceAccounts.
	Namespace string
	// WorkspaceRole is the ClusterRole each workspace's ServiceAccount is bound to in the
	// namespaces of its releases; empty means DefaultWorkspaceRole.
	WorkspaceRole string
	// Cache is the OCI cache the OCIPulls write, which charts are read from.
	Cache *LeaderCache
	// Timeout bounds one Helm operation; 0 means DefaultHelmTimeout.
	Timeout time.Duration
	// Backoff spaces the attempts at a release that keeps failing for the same generation,
	// chart and values, per release, with jitter; a zero field means DefaultReleaseBackoffInitial
	// or DefaultReleaseBackoffMax. A success, a new generation, chart or values start over.
	Backoff puller.Backoff
	// Identity is this process's holder identity in operation Leases (operation.go); empty
	// means NewProcessIdentity.
	Identity string
	// DriftInterval is how often a deployed release is compared with the cluster (drift.go), with
	// jitter; 0 turns the drift checks off.
	DriftInterval time.Duration

	// fixedRetry is the behaviour before back-off, the baseline of e2e.BenchmarkFaultsFailingReleases:
	// every attempt writes Installing, and a failure is retried after baselineRetry.
	fixedRetry bool

	identityOnce sync.Once
	mu           sync.Mutex
	deployed     map[types.NamespacedName]string     // hash of the values last deployed, by FleetRelease
	driftChecked map[types.NamespacedName]time.Time  // when the release's drift was last checked
	failures     map[types.NamespacedName]retryState // the back-off of failing releases
	// expect holds each release's own writes until the cache holds them (kube.Expectations).
	expect kube.Expectations[types.NamespacedName]
}

// retryState is the back-off of a failing release: how many attempts failed in a row for the
// same inputs (generation, chart digest, values), and when the next is due.
type retryState struct {
	inputs   string
	attempts int
	next     time.Time
}

// Reconcile brings one FleetRelease's Helm release to its spec, or uninstalls it.
func (r *FleetReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	log := ctrl.LoggerFrom(ctx)
	var rel v1alpha1.FleetRelease
	if err := r.Get(ctx, req.NamespacedName, &rel); err != nil {
		if apierrors.IsNotFound(err) {
			r.remember(req.NamespacedName, "")
			r.forgetDrift(req.NamespacedName)
			r.forgetFailures(req.NamespacedName)
			r.expect.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	// Nothing runs on a cache that does not hold the reconciler's last write of the release: the
	// write that ends a reconcile is its last step, so the next reconcile (an OCIPull or Secret
	// event queued meanwhile) can begin before the cache holds it, read the release Installing
	// after the deploy that made it Deployed, and run Helm again: an upgrade that blocked the
	// release's one worker for as long as a hook waits (up to the Helm timeout) and held up its
	// deletion behind it. No watch passes a status write (its generation does not change): the
	// wait's short requeue looks again.
	if err := r.expect.Behind(req.NamespacedName, kube.Read(&rel)); err != nil {
		return ctrl.Result{}, err
	}
	defer func() { r.expect.Wrote(req.NamespacedName, &rel) }() // the version its writes left, if any
	if !rel.DeletionTimestamp.IsZero() {
		if !controllerutil.ContainsFinalizer(&rel, v1alpha1.UninstallFinalizer) {
			return ctrl.Result{}, nil
		}
		if err := r.uninstall(ctx, &rel, log); err != nil {
			return ctrl.Result{}, err
		}
		var releases v1alpha1.FleetReleaseList
		if err := r.List(ctx, &releases, client.InNamespace(rel.Namespace)); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.access().collect(ctx, &rel, releases.Items); err != nil {
			return ctrl.Result{}, err
		}
		r.remember(req.NamespacedName, "")
		r.forgetDrift(req.NamespacedName)
		r.forgetFailures(req.NamespacedName)
		return ctrl.Result{}, manager.PatchFinalizers(ctx, r.Client, &rel, v1alpha1.UninstallFinalizer, controllerutil.RemoveFinalizer)
	}
	if !controllerutil.ContainsFinalizer(&rel, v1alpha1.UninstallFinalizer) {
		if err := manager.PatchFinalizers(ctx, r.Client, &rel, v1alpha1.UninstallFinalizer, controllerutil.AddFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}

	// One status write, at the end, when the reconcile reached an account of the release (and
	// one before, Installing, while Helm works): status is what it will say.
	patch := kube.BeginStatus(&rel, &rel.Status)
	status := rel.Status.DeepCopy()
	status.ObservedGeneration = rel.Generation
	report := false
	defer func() {
		if report {
			rel.Status = *status
		}
		err = errors.Join(err, patch.Write(ctx, r.Client, report, nil))
	}()
	var res ctrl.Result
	res, report, err = r.release(ctx, &rel, status, func() error {
		// The Installing write: what the next write compares with.
		rel.Status = *status
		if err := patch.Write(ctx, r.Client, true, nil); err != nil {
			return err
		}
		patch = kube.BeginStatus(&rel, &rel.Status)
		return nil
	}, log)
	return res, err
}

// release brings rel's Helm release to its spec and sets status from the outcome; report says
// whether status is an account of the release to write (false when what the reconcile needs
// could not be read: it is retried). installing writes status before Helm runs.
func (r *FleetReleaseReconciler) release(ctx context.Context, rel *v1alpha1.FleetRelease, status *v1alpha1.FleetReleaseStatus,
	installing func() error, log logr.Logger,
) (ctrl.Result, bool, error) {
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rel)}
	pullDigest, waiting, err := r.pulledDigest(ctx, rel)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	if waiting != nil {
		// The pull's status change re-queues the release; the wait looks again meanwhile.
		status.Phase, status.Message = v1alpha1.ReleasePending, waiting.Error()
		return ctrl.Result{}, true, waiting
	}
	values, err := r.values(ctx, rel)
	if err != nil {
		if kube.KindOf(err) != kube.Waits {
			return r.failed(ctx, rel, status, attemptInputs(rel, pullDigest, ""), err)
		}
		// The Secret's arrival re-queues the release; the wait looks again meanwhile.
		status.Phase, status.Message = v1alpha1.ReleasePending, err.Error()
		return ctrl.Result{}, true, err
	}
	sum := valuesHash(values)
	if rel.Status.Phase == v1alpha1.ReleaseDeployed && rel.Status.ObservedGeneration == rel.Generation && rel.Status.Digest == pullDigest &&
		r.valuesDeployed(rel, sum, log) {
		return r.checkDrift(rel, status, log)
	}

	// A release that failed for these inputs is tried again when its back-off is over, whatever
	// event comes first.
	inputs := attemptInputs(rel, pullDigest, sum)
	if wait := r.backingOff(req.NamespacedName, inputs); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, true, nil
	}
	oci, err := r.Cache.Get(ctx)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	chrt, err := loadChart(oci, pullDigest)
	if err != nil {
		return r.failed(ctx, rel, status, inputs, err)
	}
	if err := r.access().ensure(ctx, rel.Spec.Workspace, rel.Spec.Namespace); err != nil {
		return r.failed(ctx, rel, status, inputs, err)
	}
	cfg, err := r.helm(rel, log)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	last, err := lastRelease(cfg, rel.Spec.ReleaseName)
	if err != nil {
		return r.failed(ctx, rel, status, inputs, fmt.Errorf("helm release %s in %s: %w", rel.Spec.ReleaseName, rel.Spec.Namespace, err))
	}
	if last != nil && !ownedBy(last, rel) && !rel.Spec.Adopt {
		// Nothing to retry: a change of the FleetRelease (adopt) or a restart looks again.
		status.Phase, status.Message = v1alpha1.ReleaseOwnedElsewhere, ownedElsewhere(last, rel)
		return ctrl.Result{}, true, nil
	}
	// From here Helm writes: under this process's operation Lease, read again under it.
	op, err := r.acquire(ctx, rel, log)
	if err != nil {
		return r.waitForOperation(status, err)
	}
	defer op.release(log)
	if last, err = lastRelease(cfg, rel.Spec.ReleaseName); err == nil {
		last, err = r.recoverPending(cfg, rel, last, op, log)
	}
	if err != nil {
		if errors.As(err, new(busyError)) {
			return r.waitForOperation(status, err)
		}
		return r.failed(ctx, rel, status, inputs, fmt.Errorf("helm release %s in %s: %w", rel.Spec.ReleaseName, rel.Spec.Namespace, err))
	}
	// Installing while Helm works: its hooks may take a while even without waiting for readiness.
	// A retry after a failure leaves the status Failed until its outcome is known.
	if !r.retrying(req.NamespacedName, inputs) {
		status.Phase, status.Message = v1alpha1.ReleaseInstalling, fmt.Sprintf("installing %s-%s", chrt.Metadata.Name, chrt.Metadata.Version)
		if err := installing(); err != nil {
			return ctrl.Result{}, false, err
		}
	}
	owner := v1alpha1.ReleaseOwner(rel.Spec.Workspace, rel.Spec.App)
	hr, err := deploy(ctx, cfg, last != nil, rel.Spec.ReleaseName, rel.Spec.Namespace, chrt, values, owner, or(r.Timeout, DefaultHelmTimeout))
	if err != nil {
		ReleaseAttempts.WithLabelValues("failed").Inc()
		return r.failed(ctx, rel, status, inputs, fmt.Errorf("helm release %s in %s: %w", rel.Spec.ReleaseName, rel.Spec.Namespace, err))
	}
	ReleaseAttempts.WithLabelValues("deployed").Inc()
	r.forgetFailures(req.NamespacedName)
	r.remember(req.NamespacedName, sum)
	status.Phase, status.Message = v1alpha1.ReleaseDeployed, ""
	status.Revision = int32(min(hr.Version, 1<<31-1)) //nolint:gosec // bounded
	status.Digest = pullDigest
	status.Chart = chrt.Metadata.Name + "-" + chrt.Metadata.Version
	// Checked at once, so that a repair reports no drift without waiting for the next check.
	status.Drift = nil
	result := ctrl.Result{}
	if r.DriftInterval > 0 {
		result = r.findDrift(cfg, hr, req.NamespacedName, status, log)
	}
	log.V(1).Info("release deployed", "release", rel.Spec.ReleaseName, "namespace", rel.Spec.Namespace, "revision", hr.Version, "chart", status.Chart)
	return result, true, nil
}

// failed sets phase Failed with err's message, and asks for another try after the release's
// next back-off delay for inputs.
func (r *FleetReleaseReconciler) failed(ctx context.Context, rel *v1alpha1.FleetRelease, status *v1alpha1.FleetReleaseStatus, inputs string, err error) (ctrl.Result, bool, error) {
	status.Phase, status.Message = v1alpha1.ReleaseFailed, err.Error()
	delay := r.recordFailure(client.ObjectKeyFromObject(rel), inputs)
	ctrl.LoggerFrom(ctx).V(1).Info("release failed", "release", rel.Spec.ReleaseName, "namespace", rel.Spec.Namespace, "retryIn", delay, "error", err)
	return ctrl.Result{RequeueAfter: delay}, true, nil
}

// waitForOperation reports a release another live operation holds (a busyError) as Installing
// and looks again once that operation's Lease would lapse; any other error is returned.
func (r *FleetReleaseReconciler) waitForOperation(status *v1alpha1.FleetReleaseStatus, err error) (ctrl.Result, bool, error) {
	var busy busyError
	if !errors.As(err, &busy) {
		return ctrl.Result{}, false, err
	}
	status.Phase, status.Message = v1alpha1.ReleaseInstalling, busy.Error()
	return ctrl.Result{RequeueAfter: max(time.Until(busy.until), 0) + time.Second}, true, nil
}

// attemptInputs identifies what an attempt at rel deploys: its generation, the chart's digest
// and the values' hash. The back-off starts over when they change.
func attemptInputs(rel *v1alpha1.FleetRelease, digest, values string) string {
	return fmt.Sprintf("%d/%s/%s", rel.Generation, digest, values)
}

// backingOff is how long the release still waits before its next attempt for inputs; 0 when
// it is due or did not fail for these inputs.
func (r *FleetReleaseReconciler) backingOff(key types.NamespacedName, inputs string) time.Duration {
	if r.fixedRetry {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.failures[key]; ok && st.inputs == inputs {
		return max(time.Until(st.next), 0)
	}
	return 0
}

// retrying tells whether the release's last attempt for inputs failed.
func (r *FleetReleaseReconciler) retrying(key types.NamespacedName, inputs string) bool {
	if r.fixedRetry {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.failures[key]
	return ok && st.inputs == inputs
}

// recordFailure counts a failed attempt for inputs and returns the delay before the next.
func (r *FleetReleaseReconciler) recordFailure(key types.NamespacedName, inputs string) time.Duration {
	if r.fixedRetry {
		return baselineRetry
	}
	b := r.Backoff
	b.Initial, b.Max = cmp.Or(b.Initial, DefaultReleaseBackoffInitial), cmp.Or(b.Max, DefaultReleaseBackoffMax)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures == nil {
		r.failures = map[types.NamespacedName]retryState{}
	}
	st := r.failures[key]
	if st.inputs != inputs {
		st = retryState{inputs: inputs}
	}
	st.attempts++
	delay := b.Delay(st.attempts)
	st.next = time.Now().Add(delay)
	r.failures[key] = st
	return delay
}

// forgetFailures ends the release's back-off: it deployed, or is gone.
func (r *FleetReleaseReconciler) forgetFailures(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failures, key)
}

// pulledDigest returns the manifest digest of the release's pull, or, while the pull has not
// pulled its current spec, what the release waits for (a kube.Wait).
func (r *FleetReleaseReconciler) pulledDigest(ctx context.Context, rel *v1alpha1.FleetRelease) (pulled string, waiting, err error) {
	var pull v1alpha1.OCIPull
	key := types.NamespacedName{Namespace: rel.Namespace, Name: rel.Spec.Pull}
	if err := r.Get(ctx, key, &pull); err != nil {
		if apierrors.IsNotFound(err) {
			return "", kube.Wait(0, reasonPullMissing, fmt.Errorf("the OCIPull %s is not on the cluster: waiting for the hub to deliver it", key)), nil
		}
		return "", nil, err
	}
	s := pull.Status
	if s.ObservedGeneration == pull.Generation && s.State == v1alpha1.OCIPullPulled && s.Digest != "" {
		return s.Digest, nil, nil
	}
	why := "not started yet"
	if c := meta.FindStatusCondition(s.Conditions, v1alpha1.ReadyCondition); c != nil && c.ObservedGeneration == pull.Generation {
		why = c.Message
	}
	return "", kube.Wait(0, reasonPullNotPulled, fmt.Errorf("waiting for the OCIPull %s to pull the chart: %s", key, why)), nil
}

// Reasons of the waits of a release, which the agent logs at debug level.
const (
	reasonPullMissing    = "PullNotDelivered"
	reasonPullNotPulled  = "PullNotPulled"
	reasonValuesNotFound = "ValuesSecretNotDelivered"
)

// values are spec.values merged with the values Secret's key, whose values win; a Secret not on
// the cluster yet is a wait (kube.Wait). Its errors never carry the Secret's content.
func (r *FleetReleaseReconciler) values(ctx context.Context, rel *v1alpha1.FleetRelease) (map[string]any, error) {
	values := map[string]any{}
	if rel.Spec.Values != nil && len(rel.Spec.Values.Raw) > 0 {
		if err := json.Unmarshal(rel.Spec.Values.Raw, &values); err != nil {
			return nil, fmt.Errorf("spec.values is not a map of values: %w", err)
		}
	}
	ref := rel.Spec.ValuesSecretRef
	if ref == nil {
		return values, nil
	}
	var secret corev1.Secret
	key := types.NamespacedName{Namespace: rel.Namespace, Name: ref.Name}
	if err := r.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, kube.Wait(0, reasonValuesNotFound, fmt.Errorf("the values Secret %s is not on the cluster: waiting for the hub to deliver it", key))
		}
		return nil, err
	}
	data, ok := secret.Data[ref.Key]
	if !ok {
		return nil, fmt.Errorf("the values Secret %s has no key %s: fix the app's values Secret", key, ref.Key)
	}
	secretValues := map[string]any{}
	// The parser's message may quote the content: say only where it is.
	if err := yaml.Unmarshal(data, &secretValues); err != nil {
		return nil, fmt.Errorf("the values Secret %s: key %s is not a YAML or JSON map of values", key, ref.Key)
	}
	return chartutil.CoalesceTables(secretValues, values), nil
}

// valuesHash is the sha256 of values as JSON (keys sorted), as Helm stores a release's values.
func valuesHash(values map[string]any) string {
	if values == nil {
		values = map[string]any{}
	}
	data, _ := json.Marshal(values) // decoded from JSON or YAML: always encodes
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// valuesDeployed tells whether values of hash sum are those of the release's last deploy: from
// memory, else (after a restart) from Helm's last release, which is then remembered.
func (r *FleetReleaseReconciler) valuesDeployed(rel *v1alpha1.FleetRelease, sum string, log logr.Logger) bool {
	key := client.ObjectKeyFromObject(rel)
	r.mu.Lock()
	known, ok := r.deployed[key]
	r.mu.Unlock()
	if ok {
		return known == sum
	}
	cfg, err := r.helm(rel, log)
	if err != nil {
		return false
	}
	last, err := cfg.Releases.Last(rel.Spec.ReleaseName)
	if err != nil || last.Info == nil || last.Info.Status != release.StatusDeployed || !ownedBy(last, rel) {
		return false
	}
	r.remember(key, valuesHash(last.Config))
	return valuesHash(last.Config) == sum
}

// remember records the hash of the values deployed for a FleetRelease; "" forgets it.
func (r *FleetReleaseReconciler) remember(key types.NamespacedName, sum string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sum == "" {
		delete(r.deployed, key)
		return
	}
	if r.deployed == nil {
		r.deployed = map[types.NamespacedName]string{}
	}
	r.deployed[key] = sum
}

// loadChart loads the Helm chart whose OCI manifest is manifestDigest from the cache: the
// manifest's layer of media type application/vnd.cncf.helm.chart.content.v1.tar+gzip; it reads
// that artifact only, and records its use. Blobs are content-addressed and committed once
// verified, so reading them while a pull writes the cache is safe.
func loadChart(cache *puller.Cache, manifestDigest string) (*chart.Chart, error) {
	d, err := digest.Parse(manifestDigest)
	if err != nil {
		return nil, fmt.Errorf("the OCIPull's digest %q: %w", manifestDigest, err)
	}
	cacheDir := cache.Dir()
	_ = cache.Touch(d) // the last use orders garbage collection; a failed write only loses it
	blob := func(d digest.Digest) string {
		return filepath.Join(cacheDir, "blobs", d.Algorithm().String(), d.Encoded())
	}
	data, err := os.ReadFile(blob(d))
	if err != nil {
		return nil, fmt.Errorf("the manifest %s is not in the cache %s: %w", d, cacheDir, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("the manifest %s: %w", d, err)
	}
	for _, layer := range m.Layers {
		if layer.MediaType != helmregistry.ChartLayerMediaType {
			continue
		}
		f, err := os.Open(blob(layer.Digest))
		if err != nil {
			return nil, fmt.Errorf("the chart layer %s of %s is not in the cache %s: %w", layer.Digest, d, cacheDir, err)
		}
		defer f.Close()
		chrt, err := loader.LoadArchive(f)
		if err != nil {
			return nil, fmt.Errorf("the chart of %s: %w", d, err)
		}
		return chrt, nil
	}
	return nil, fmt.Errorf("the artifact %s has no layer of media type %s: push the chart with `helm push`", d, helmregistry.ChartLayerMediaType)
}

// lastRelease is Helm's last revision of the release name, nil when there is none.
func lastRelease(cfg *action.Configuration, name string) (*release.Release, error) {
	last, err := cfg.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	return last, err
}

// ownedBy tells whether the release's owner labels name rel's workspace and app.
func ownedBy(last *release.Release, rel *v1alpha1.FleetRelease) bool {
	return v1alpha1.ReleaseOwnedBy(last.Labels, rel.Spec.Workspace, rel.Spec.App)
}

// ownedElsewhere says whose the release is and what to do.
func ownedElsewhere(last *release.Release, rel *v1alpha1.FleetRelease) string {
	owner := "it was not installed by fleet-controller agent (installed by hand?)"
	if ws, app := last.Labels[v1alpha1.ReleaseWorkspaceLabel], last.Labels[v1alpha1.ReleaseAppLabel]; ws != "" || app != "" {
		owner = fmt.Sprintf("it belongs to app %q of workspace %q", app, ws)
	}
	return fmt.Sprintf("the Helm release %s in namespace %s (revision %d) is not this app's: %s; "+
		"it is left untouched: set adopt on app %s/%s to take it over, or choose another release name or namespace",
		rel.Spec.ReleaseName, rel.Spec.Namespace, last.Version, owner, rel.Spec.Workspace, rel.Spec.App)
}

// deploy installs chrt with values as release name in namespace, or upgrades the release when it
// has a history; the release's labels record owner. It does not wait for the release's workloads.
func deploy(ctx context.Context, cfg *action.Configuration, exists bool, name, namespace string, chrt *chart.Chart, values map[string]any,
	owner map[string]string, timeout time.Duration,
) (*release.Release, error) {
	if !exists {
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = name, namespace
		install.Timeout = timeout
		install.Labels = owner
		return install.RunWithContext(ctx, chrt, values)
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	upgrade.Timeout = timeout
	upgrade.MaxHistory = releaseMaxHistory
	upgrade.ResetValues = true // exactly the values given, none carried from the last revision
	upgrade.Labels = owner     // merged over the last revision's: an adopted release becomes ours
	return upgrade.RunWithContext(ctx, name, chrt, values)
}

// uninstall uninstalls the release if the agent installed it for rel's app; one that is not
// installed, or whose namespace is gone or not the workspace's, is fine, and one owned elsewhere
// is left alone.
func (r *FleetReleaseReconciler) uninstall(ctx context.Context, rel *v1alpha1.FleetRelease, log logr.Logger) error {
	if ok, err := r.access().workspaceNamespace(ctx, rel.Spec.Workspace, rel.Spec.Namespace); err != nil || !ok {
		return err
	}
	// The binding may be gone, or never made (the release waited for its chart).
	if err := r.access().ensure(ctx, rel.Spec.Workspace, rel.Spec.Namespace); err != nil {
		return err
	}
	cfg, err := r.helm(rel, log)
	if err != nil {
		return err
	}
	last, err := lastRelease(cfg, rel.Spec.ReleaseName)
	if err != nil {
		return fmt.Errorf("helm release %s in %s: %w", rel.Spec.ReleaseName, rel.Spec.Namespace, err)
	}
	if last == nil || !ownedBy(last, rel) {
		if last != nil {
			log.Info("release owned elsewhere: not uninstalled", "release", rel.Spec.ReleaseName, "namespace", rel.Spec.Namespace)
		}
		return nil
	}
	// Not while another live agent operates the release (a busyError: the workqueue retries).
	op, err := r.acquire(ctx, rel, log)
	if err != nil {
		return err
	}
	defer op.release(log)
	uninstall := action.NewUninstall(cfg)
	uninstall.IgnoreNotFound = true
	uninstall.Timeout = or(r.Timeout, DefaultHelmTimeout)
	if _, err := uninstall.Run(rel.Spec.ReleaseName); err != nil {
		return fmt.Errorf("helm uninstall of %s in %s: %w", rel.Spec.ReleaseName, rel.Spec.Namespace, err)
	}
	log.V(1).Info("release uninstalled", "release", rel.Spec.ReleaseName, "namespace", rel.Spec.Namespace)
	return nil
}

// access is how the reconciler sets up the workspaces' ServiceAccounts and bindings.
func (r *FleetReleaseReconciler) access() *workspaceAccess {
	return &workspaceAccess{Client: r.Client, Reader: r.Reader, Config: r.Config, Namespace: r.Namespace, Role: cmp.Or(r.WorkspaceRole, DefaultWorkspaceRole)}
}

// helm returns Helm's configuration for rel's release, its history in Secrets of the release
// namespace, acting as rel's workspace ServiceAccount.
func (r *FleetReleaseReconciler) helm(rel *v1alpha1.FleetRelease, log logr.Logger) (*action.Configuration, error) {
	namespace := rel.Spec.Namespace
	getter, err := newRESTGetter(r.access().config(rel.Spec.Workspace), namespace)
	if err != nil {
		return nil, err
	}
	cfg := new(action.Configuration)
	debug := func(format string, v ...any) { log.V(2).Info(fmt.Sprintf(format, v...)) }
	if err := cfg.Init(getter, namespace, "secret", debug); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return cfg, nil
}

// restGetter is the genericclioptions.RESTClientGetter Helm's clients are made from: a REST
// config, a fresh discovery cache (so that kinds a chart's CRDs add are found), and namespace
// as the default namespace of the objects a chart leaves without one.
type restGetter struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	namespace string
}

func newRESTGetter(config *rest.Config, namespace string) (*restGetter, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	return &restGetter{config: config, discovery: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached), namespace: namespace}, nil
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(clientcmdapi.Config{}, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}

// SetupWithManager registers the reconciler and the indexes and watches that re-queue a release
// when its OCIPull's status or its values Secret changes.
func (r *FleetReleaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	indexes := map[string]func(*v1alpha1.FleetRelease) string{
		pullIndex: func(rel *v1alpha1.FleetRelease) string { return rel.Spec.Pull },
		valuesSecretIndex: func(rel *v1alpha1.FleetRelease) string {
			if rel.Spec.ValuesSecretRef == nil {
				return ""
			}
			return rel.Spec.ValuesSecretRef.Name
		},
	}
	for field, value := range indexes {
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.FleetRelease{}, field, func(o client.Object) []string {
			if v := value(o.(*v1alpha1.FleetRelease)); v != "" {
				return []string{v}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return kube.Build(kube.NewController(mgr, "fleetrelease", controller.Options{}).
		// Deleting a FleetRelease that has a finalizer bumps its generation too.
		For(&v1alpha1.FleetRelease{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.OCIPull{}, handler.EnqueueRequestsFromMapFunc(r.releasesBy(pullIndex))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.releasesBy(valuesSecretIndex))), r)
}

// releasesBy maps an object (an OCIPull, a Secret) to the FleetReleases of its namespace whose
// index field names it.
func (r *FleetReleaseReconciler) releasesBy(index string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []ctrl.Request {
		var releases v1alpha1.FleetReleaseList
		if err := r.List(ctx, &releases, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index: obj.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the releases of an object", "index", index, "name", obj.GetName())
			return nil
		}
		out := make([]ctrl.Request, len(releases.Items))
		for i := range releases.Items {
			out[i] = ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&releases.Items[i])}
		}
		return out
	}
}
