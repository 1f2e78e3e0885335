package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/hub"
)

// ceiling is the local apiserver's own write ceiling for what the controller wrote to converge:
// the same ManifestWorks and ClusterOCIStorages, copied from the hub, created and the storages'
// statuses updated by plain clients in parallel, with no reconcile logic. They go into the same
// cluster namespaces (works, under another name) and into another workspace namespace
// (storages). The copies carry the controller's labels under keys of their own (copyLabels), so
// that its caches, which select its objects by label, do not see them.
//
// A watching ceiling is the same with one watch on the works written, as the controller's cache
// watches its own: every write comes back as an event the API server encodes and the watcher
// decodes, a cost any controller that reads back what it wrote pays and plain clients do not.
type ceiling struct {
	name    string // as the controller line prints it: ceiling or watched_ceiling
	took    time.Duration
	writes  int
	workers int      // the best of those tried
	tries   []string // each worker count tried, with its rate in clusters a second
}

// copyLabels are the labels from, under keys prefixed with prefix. A copy must carry them: the
// apiserver tracks which writer set which field (managedFields) of an object that has fields of
// its own, and skips that work for one created with none, such as an unlabelled storage, whose
// status update then costs it less than the controller's does.
func copyLabels(from map[string]string, prefix string) map[string]string {
	out := make(map[string]string, len(from))
	for k, v := range from {
		out[prefix+k] = v
	}
	return out
}

// measureCeiling copies the converged workspace's works and storages, tries a few worker counts
// on a tenth of them each, and writes all of them with the best; with watch, as a watching
// ceiling, under names of their own.
func measureCeiling(b *testing.B, ctx context.Context, c client.WithWatch, watch bool) ceiling {
	// Each ceiling's copies carry its prefix in their names and their labels' keys; the watching
	// ceiling's watch selects its own copies by it.
	name, prefix, ceilingNS := "ceiling", "ceiling-", "bench-ceiling"
	if watch {
		name, prefix, ceilingNS = "watched_ceiling", "ceiling-watched-", "bench-ceiling-watched"
	}
	var works workv1.ManifestWorkList
	if err := c.List(ctx, &works, client.MatchingLabels{hub.WorkspaceLabel: benchWS}); err != nil {
		b.Fatal(err)
	}
	var storages v1alpha1.ClusterOCIStorageList
	if err := c.List(ctx, &storages, client.InNamespace(benchWS)); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ceilingNS}}); err != nil {
		b.Fatal(err)
	}
	// One job per cluster: its work, its storage and the storage's status, as the controller writes them.
	type job struct {
		work    *workv1.ManifestWork
		storage *v1alpha1.ClusterOCIStorage
	}
	byCluster := map[string]*v1alpha1.ClusterOCIStorage{}
	for i := range storages.Items {
		byCluster[storages.Items[i].Name] = &storages.Items[i]
	}
	var jobs []job
	for i := range works.Items {
		w := &works.Items[i]
		j := job{work: &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: prefix + w.Name, Namespace: w.Namespace, Labels: copyLabels(w.Labels, prefix), Annotations: w.Annotations}, Spec: w.Spec}}
		if s := byCluster[w.Namespace]; s != nil {
			j.storage = &v1alpha1.ClusterOCIStorage{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ceilingNS, Labels: copyLabels(s.Labels, prefix)}, Status: s.Status}
		}
		jobs = append(jobs, j)
	}
	if watch {
		wi, err := c.Watch(ctx, &workv1.ManifestWorkList{}, client.MatchingLabels{prefix + hub.WorkspaceLabel: benchWS})
		if err != nil {
			b.Fatal(err)
		}
		defer wi.Stop()
		go func() {
			for range wi.ResultChan() { // decoded, as an informer's are, and dropped
			}
		}()
	}
	var written atomic.Int64
	run := func(jobs []job, workers int) time.Duration {
		var (
			wg   sync.WaitGroup
			next atomic.Int64
		)
		start := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < len(jobs); i = int(next.Add(1)) - 1 {
					j := jobs[i]
					if err := c.Create(ctx, j.work.DeepCopy()); err != nil {
						b.Error(err)
						return
					}
					written.Add(1)
					if j.storage == nil {
						continue
					}
					s := j.storage.DeepCopy()
					if err := c.Create(ctx, s); err != nil {
						b.Error(err)
						return
					}
					s.Status = j.storage.Status
					if err := c.Status().Update(ctx, s); err != nil {
						b.Error(err)
						return
					}
					written.Add(2)
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	// Tune on a tenth each, then write the rest with the best; the tenths count in the total at
	// the best rate.
	tenth := max(1, len(jobs)/10)
	best, bestRate := 0, 0.0
	var tries []string
	offset := 0
	for _, n := range []int{16, 64, 256} {
		if offset+tenth > len(jobs) {
			break
		}
		took := run(jobs[offset:offset+tenth], n)
		offset += tenth
		rate := float64(tenth) / took.Seconds()
		tries = append(tries, fmt.Sprintf("%d:%.0f", n, rate))
		if rate > bestRate {
			best, bestRate = n, rate
		}
	}
	written.Store(0)
	took := run(jobs[offset:], best)
	rest := len(jobs) - offset
	total := time.Duration(float64(took) * float64(len(jobs)) / float64(max(1, rest)))
	if b.Failed() {
		b.FailNow()
	}
	return ceiling{name: name, took: total, writes: int(written.Load()) * len(jobs) / max(1, rest), workers: best, tries: tries}
}

func (c ceiling) String() string {
	if c.took == 0 {
		return "" // not measured (the baseline's run)
	}
	return fmt.Sprintf("%[1]s_writes=%[2]d %[1]s_workers=%[3]d %[1]s_clusters_per_s=%[4]s", c.name, c.writes, c.workers, strings.Join(c.tries, ","))
}
