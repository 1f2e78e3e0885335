package routing

// index finds the routes a cluster matches by looking up its name, its groups and the values of
// the label keys the routes' selectors require, so a cluster tests only routes that could match.
// Each selector is filed under one anchor, a requirement every matching cluster satisfies: a
// (key, value) pair of an In requirement, else a key of an Exists requirement; selectors with no
// such requirement (empty, or only NotIn/DoesNotExist) are tested for every cluster. Every list
// is in ascending route position, so the first match found in a list is that list's earliest.
type index struct {
	routes     []*compiledRoute
	byName     map[string][]int
	byGroup    map[string][]int
	keys       []keyEntry // the anchor keys, to look up in a cluster's labels
	byKey      map[string]*keyIndex
	unanchored []selRef
}

type keyEntry struct {
	key string
	idx *keyIndex
}

type keyIndex struct {
	values map[string][]selRef // selectors anchored on key=value
	exists []selRef            // selectors anchored on the key's existence
}

type selRef struct {
	route int // position in index.routes
	reqs  []requirement
}

func newIndex(routes []*compiledRoute) index {
	x := index{routes: routes, byName: map[string][]int{}, byGroup: map[string][]int{}, byKey: map[string]*keyIndex{}}
	for i, rt := range routes {
		for n := range rt.names {
			x.byName[n] = append(x.byName[n], i)
		}
		for g := range rt.groups {
			x.byGroup[g] = append(x.byGroup[g], i)
		}
		for _, reqs := range rt.selectors {
			x.add(selRef{i, reqs})
		}
	}
	return x
}

func (x *index) add(ref selRef) {
	anchor := -1
	for i, q := range ref.reqs {
		switch {
		case q.op == In && (anchor < 0 || ref.reqs[anchor].op != In || len(q.values) < len(ref.reqs[anchor].values)):
			anchor = i
		case q.op == Exists && anchor < 0:
			anchor = i
		}
	}
	if anchor < 0 {
		x.unanchored = append(x.unanchored, ref)
		return
	}
	q := ref.reqs[anchor]
	ki := x.byKey[q.key]
	if ki == nil {
		ki = &keyIndex{values: map[string][]selRef{}}
		x.byKey[q.key] = ki
		x.keys = append(x.keys, keyEntry{q.key, ki})
	}
	if q.op == Exists {
		ki.exists = append(ki.exists, ref)
		return
	}
	for _, v := range q.values {
		ki.values[v] = append(ki.values[v], ref)
	}
}

// first returns the position of the earliest route c matches, or len(x.routes).
func (x *index) first(c Cluster) int {
	best := len(x.routes)
	if ids := x.byName[c.Name]; len(ids) > 0 {
		best = ids[0]
	}
	for _, g := range c.Groups {
		if ids := x.byGroup[g]; len(ids) > 0 && ids[0] < best {
			best = ids[0]
		}
	}
	// Look up whichever is fewer: the anchor keys in the labels, or the labels in the anchor keys.
	if len(x.keys) <= len(c.Labels) {
		for _, k := range x.keys {
			if v, ok := c.Labels[k.key]; ok {
				best = firstIn(k.idx.values[v], c.Labels, best)
				best = firstIn(k.idx.exists, c.Labels, best)
			}
		}
	} else {
		for k, v := range c.Labels {
			if ki := x.byKey[k]; ki != nil {
				best = firstIn(ki.values[v], c.Labels, best)
				best = firstIn(ki.exists, c.Labels, best)
			}
		}
	}
	return firstIn(x.unanchored, c.Labels, best)
}

// firstIn returns the position of the first selector in refs that matches labels if it is before
// best, else best.
func firstIn(refs []selRef, labels map[string]string, best int) int {
	for _, ref := range refs {
		if ref.route >= best {
			break
		}
		if matchesAll(ref.reqs, labels) {
			return ref.route
		}
	}
	return best
}

// each calls visit once for the position of every route c matches, in no particular order.
// seen must have len(x.routes) entries; each uses stamp to mark routes already visited.
func (x *index) each(c Cluster, seen []int, stamp int, visit func(int)) {
	mark := func(i int) {
		if seen[i] != stamp {
			seen[i] = stamp
			visit(i)
		}
	}
	for _, i := range x.byName[c.Name] {
		mark(i)
	}
	for _, g := range c.Groups {
		for _, i := range x.byGroup[g] {
			mark(i)
		}
	}
	all := func(refs []selRef) {
		for _, ref := range refs {
			if seen[ref.route] != stamp && matchesAll(ref.reqs, c.Labels) {
				mark(ref.route)
			}
		}
	}
	for k, v := range c.Labels {
		if ki := x.byKey[k]; ki != nil {
			all(ki.values[v])
			all(ki.exists)
		}
	}
	all(x.unanchored)
}
