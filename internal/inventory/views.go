package inventory

import (
	"sync"

	"github.com/umkim/terraform-provider-fleet/internal/routing"
)

// views are what checks ask of a workspace for every route of a plan, built once on first use,
// so that a plan's cost grows with its routes and not with its routes times its clusters.
type views struct {
	winsOnce sync.Once
	wins     map[string][]string

	labelsOnce sync.Once
	labelled   map[string]map[string][]*routing.Cluster // label key, value: the clusters carrying it
}

// Wins is the clusters route wins among the workspace's routes as they are on the hub (Resolve),
// sorted by name. Callers must not modify it.
func (w *Workspace) Wins(route string) ([]string, error) {
	_, rep, err := w.Resolve()
	if err != nil {
		return nil, err
	}
	w.views.winsOnce.Do(func() {
		w.views.wins = make(map[string][]string, len(rep.Routes))
		for _, rc := range rep.Routes {
			w.views.wins[rc.Route] = rc.Clusters
		}
	})
	return w.views.wins[route], nil
}

// Labelled is the clusters of the workspace (of Clusters, in its order) whose label key has
// value. Callers must not modify them.
func (w *Workspace) Labelled(key, value string) []*routing.Cluster {
	w.views.labelsOnce.Do(func() {
		w.views.labelled = map[string]map[string][]*routing.Cluster{}
		for i := range w.Clusters {
			c := &w.Clusters[i]
			for k, v := range c.Labels {
				byValue := w.views.labelled[k]
				if byValue == nil {
					byValue = map[string][]*routing.Cluster{}
					w.views.labelled[k] = byValue
				}
				byValue[v] = append(byValue[v], c)
			}
		}
	})
	return w.views.labelled[key][value]
}
