package controller_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/umkim/terraform-provider-fleet/internal/controller"
	"github.com/umkim/terraform-provider-fleet/internal/manager"
	"github.com/umkim/terraform-provider-fleet/internal/testkit"
)

// TestOneManagedClusterInformer runs every hub reconciler and watches what they ask the
// apiserver for ManagedClusters: one watch of the typed kind (the one informer every reconciler
// reads and watches them through), no metadata-only request (a second informer, holding every
// cluster again), no list (the informer streams its first state), and the cluster read back from
// that cache as the reconcilers see it.
func TestOneManagedClusterInformer(t *testing.T) {
	h, c := startHub(t)
	ctx := context.Background()
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "one-informer", Labels: map[string]string{"zone": "z1"}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	if err := c.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, mc) })

	var (
		mu   sync.Mutex
		seen []string // "<list|watch> <Accept>" of each ManagedCluster request
	)
	cfg := rest.CopyConfig(h.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if strings.HasSuffix(req.URL.Path, "/managedclusters") && req.Method == http.MethodGet {
				verb := "list"
				if req.URL.Query().Get("watch") == "true" {
					verb = "watch"
				}
				mu.Lock()
				seen = append(seen, verb+" "+req.Header.Get("Accept"))
				mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
	mgr, err := controller.NewHubManager(cfg, controller.HubOptions{Manager: manager.Options{MetricsAddr: "0", ProbeAddr: "0"},
		Controllers: strings.Join(slices.Sorted(maps.Keys(controller.Reconcilers)), ","), QPS: 500, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, mgr)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("the cache did not sync")
	}
	time.Sleep(2 * time.Second) // informers a reconciler starts late would have asked by now

	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	watches, lists := 0, 0
	for _, s := range got {
		if strings.Contains(s, "PartialObjectMetadata") {
			t.Errorf("a metadata-only request for ManagedClusters (%s): a second informer holds every cluster again", s)
		}
		switch {
		case strings.HasPrefix(s, "watch "):
			watches++
		case strings.HasPrefix(s, "list "):
			lists++
		}
	}
	if watches != 1 {
		t.Errorf("%d watches of ManagedClusters, want 1 (one informer): %q", watches, got)
	}
	// client-go's streaming list (WatchListClient, on by default, and the apiserver's WatchList):
	// the informer's first state comes as watch events, decoded one at a time, not as list pages.
	if lists != 0 {
		t.Errorf("%d lists of ManagedClusters: the informer did not stream its first state (WatchList): %q", lists, got)
	}

	var cached clusterv1.ManagedCluster
	if err := mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(mc), &cached); err != nil {
		t.Fatal(err)
	}
	if cached.Labels["zone"] != "z1" || !cached.Spec.HubAcceptsClient || cached.ManagedFields != nil {
		t.Errorf("cached cluster %+v, want its labels and spec, no managedFields", cached.ObjectMeta)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
