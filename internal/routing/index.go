package routing

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// index finds the earliest route a cluster matches by looking up its name, its groups and the
// values of the label keys the routes' selectors require, so a cluster tests only selectors that
// could match it. Each selector is filed under one anchor, requirements every matching cluster
// satisfies: the values of all its In requirements together (a compound key: a selector on
// region=r and tier=t is found by the cluster's (region, tier) values, so a cluster in region r
// but another tier never tests it), else the key of an Exists requirement. Selectors with
// neither (empty, or only NotIn/DoesNotExist) are tested for every cluster.
//
// A match is ranked by route position, then criterion (names, groups, selectors in order), packed
// into one int64 so that "earlier" is a single comparison. Every list is in ascending rank.
type index struct {
	size       int // number of routes
	labelKeys  *labelKeys
	byName     table[[]int64]  // id 0, one key
	byGroup    table[[]int64]  // id 0, one key
	byValue    table[[]selRef] // selectors anchored on In requirements, by anchor id and values
	anchors    []anchor        // in ascending first rank
	unanchored []selRef
}

// anchor is a set of label keys that selectors are filed under.
type anchor struct {
	id     int      // of the anchor's lists in byValue
	slots  []int    // the keys, in labelKeys, ascending; one key for an Exists anchor
	first  int64    // the lowest rank filed under the anchor
	exists []selRef // of an Exists anchor: the selectors anchored on its key's existence
}

// maxAnchorKeys and maxAnchorLists bound an anchor: a selector is filed under at most four of
// its In requirements, and under at most 64 combinations of their values (the values of one
// requirement, when it has more); the other requirements are tested after the lookup.
const (
	maxAnchorKeys  = 4
	maxAnchorLists = MaxRequirementValues
)

type selRef struct {
	rank int64
	rest []requirement // the selector's requirements other than its anchor
}

// indexBuilder collects an index's lists before they are frozen into tables.
type indexBuilder struct {
	anchors map[string]int // the anchor's slots, joined → position in index.anchors
	lists   map[string]*list
}

// list is one list of byValue in the making: an anchor and one value of each of its keys.
type list struct {
	id     int
	values []string
	refs   []selRef
}

const (
	rankName   = 0
	rankGroup  = 1
	rankSel0   = 2 // rank of selector 0
	rankShift  = 32
	rankFields = 1<<rankShift - 1
)

func rank(route, criterion int) int64 { return int64(route)<<rankShift | int64(criterion) }

// position returns the route position of a rank.
func position(r int64) int { return int(r >> rankShift) }

// matchedBy returns the criterion of a rank.
func matchedBy(r int64) MatchedBy {
	switch c := int(r & rankFields); c {
	case rankName:
		return MatchedBy{Criterion: ByName}
	case rankGroup:
		return MatchedBy{Criterion: ByGroup}
	default:
		return MatchedBy{Criterion: BySelector, Selector: c - rankSel0}
	}
}

func newIndex(routes []*compiledRoute, lk *labelKeys) index {
	x := index{size: len(routes), labelKeys: lk}
	b := indexBuilder{anchors: map[string]int{}, lists: map[string]*list{}}
	names, groups := map[string][]int64{}, map[string][]int64{}
	for i, rt := range routes {
		for _, n := range rt.ClusterNames {
			names[n] = append(names[n], rank(i, rankName))
		}
		for _, g := range rt.ClusterGroups {
			groups[g] = append(groups[g], rank(i, rankGroup))
		}
		for s, reqs := range rt.selectors {
			x.add(&b, rank(i, rankSel0+s), reqs)
		}
	}
	for i := range x.anchors {
		x.anchors[i].first = firstRank(x.anchors[i].exists)
	}
	cells := make([]cell[[]selRef], 0, len(b.lists))
	for _, l := range b.lists {
		a := &x.anchors[l.id]
		a.first = min(a.first, firstRank(l.refs))
		cells = append(cells, cell[[]selRef]{id: l.id, keys: l.values, val: l.refs})
	}
	x.byValue = newTable(cells)
	slices.SortFunc(x.anchors, func(a, b anchor) int { return cmp.Compare(a.first, b.first) })
	x.byName, x.byGroup = stringTable(names), stringTable(groups)
	return x
}

// stringTable returns the table of m under id 0.
func stringTable[V any](m map[string]V) table[V] {
	cells := make([]cell[V], 0, len(m))
	for k, v := range m {
		cells = append(cells, cell[V]{keys: []string{k}, val: v})
	}
	return newTable(cells)
}

func firstRank(refs []selRef) int64 {
	if len(refs) == 0 {
		return math.MaxInt64
	}
	return refs[0].rank
}

// add files a selector under its In requirements, one per key and those with the fewest values
// first, as many as the bounds allow; else under an Exists requirement; else unanchored.
func (x *index) add(b *indexBuilder, r int64, reqs []requirement) {
	var in []int // positions in reqs of the anchor's requirements
	exists, lists := -1, 1
	for _, i := range fewestValuesFirst(reqs) {
		q := &reqs[i]
		switch {
		case q.op == In && len(in) < maxAnchorKeys && (len(in) == 0 || lists*len(q.values) <= maxAnchorLists) &&
			!slices.ContainsFunc(in, func(j int) bool { return reqs[j].slot == q.slot }):
			in = append(in, i)
			lists *= len(q.values)
		case q.op == Exists && exists < 0:
			exists = i
		}
	}
	if len(in) == 0 && exists < 0 {
		x.unanchored = append(x.unanchored, selRef{r, reqs})
		return
	}
	if len(in) == 0 {
		in = []int{exists}
	}
	slices.SortFunc(in, func(i, j int) int { return cmp.Compare(reqs[i].slot, reqs[j].slot) })
	ref := selRef{rank: r}
	for i := range reqs {
		if !slices.Contains(in, i) {
			ref.rest = append(ref.rest, reqs[i])
		}
	}
	slots := make([]int, len(in))
	for j, i := range in {
		slots[j] = reqs[i].slot
	}
	id := b.anchor(x, slots, reqs[in[0]].op == Exists)
	if reqs[in[0]].op == Exists {
		x.anchors[id].exists = append(x.anchors[id].exists, ref)
		return
	}
	// One list per combination of the requirements' values.
	values := make([]string, len(in))
	var file func(j int)
	file = func(j int) {
		if j == len(in) {
			b.list(id, values).refs = append(b.list(id, values).refs, ref)
			return
		}
		for _, v := range reqs[in[j]].values {
			values[j] = v
			file(j + 1)
		}
	}
	file(0)
}

// fewestValuesFirst returns the positions of reqs, those with fewer values first.
func fewestValuesFirst(reqs []requirement) []int {
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(len(reqs[i].values), len(reqs[j].values)) })
	return order
}

// anchor returns the id of the anchor on slots (on the existence of its one key, when exists),
// adding it if new.
func (b *indexBuilder) anchor(x *index, slots []int, exists bool) int {
	var name strings.Builder
	if exists {
		name.WriteString("exists:")
	}
	for _, s := range slots {
		name.WriteString(strconv.Itoa(s) + ",")
	}
	id, ok := b.anchors[name.String()]
	if !ok {
		id = len(x.anchors)
		b.anchors[name.String()] = id
		x.anchors = append(x.anchors, anchor{id: id, slots: slots})
	}
	return id
}

// list returns the list of anchor id for values, adding it if new.
func (b *indexBuilder) list(id int, values []string) *list {
	name := strconv.Itoa(id)
	for _, v := range values {
		name += "," + strconv.Itoa(len(v)) + ":" + v
	}
	l := b.lists[name]
	if l == nil {
		l = &list{id: id, values: slices.Clone(values)}
		b.lists[name] = l
	}
	return l
}

// lookup returns the list of anchor a (not an Exists anchor) that matches labels, if any.
func (x *index) lookup(a *anchor, labels *labelReader) []selRef {
	var values [maxAnchorKeys]string
	for j, s := range a.slots {
		l := labels.get(s)
		if !l.ok {
			return nil
		}
		values[j] = l.value
	}
	refs, _ := x.byValue.get(a.id, values[:len(a.slots)]...)
	return refs
}

// none is the rank that no match reaches.
func (x *index) none() int64 { return rank(x.size, 0) }

// first returns the rank of the earliest match of c, or x.none().
func (x *index) first(c Cluster) int64 { return x.firstExcept(c, nil) }

// firstExcept returns the rank of the earliest match of c among the routes at positions skip
// does not name (nil skips none), or x.none().
func (x *index) firstExcept(c Cluster, skip func(position int) bool) int64 {
	best := x.none()
	kept := func(rs []int64) int64 {
		for _, r := range rs {
			if skip == nil || !skip(position(r)) {
				return r
			}
		}
		return x.none()
	}
	var buf [16]label
	labels := x.labelKeys.reader(c.Labels, buf[:])
	if len(x.anchors) > 0 {
		// Read the first anchor's first label now: reading the cluster's labels waits on memory,
		// and this lets that wait overlap with the name and group lookups.
		labels.get(x.anchors[0].slots[0])
	}
	if rs, ok := x.byName.get(0, c.Name); ok {
		best = min(best, kept(rs))
	}
	for _, g := range c.Groups {
		if rs, ok := x.byGroup.get(0, g); ok {
			best = min(best, kept(rs))
		}
	}
	for i := range x.anchors { // in ascending first rank
		a := &x.anchors[i]
		if a.first >= best {
			break
		}
		switch {
		case a.exists == nil:
			best = firstIn(x.lookup(a, &labels), &labels, best, skip)
		case labels.get(a.slots[0]).ok:
			best = firstIn(a.exists, &labels, best, skip)
		}
	}
	return firstIn(x.unanchored, &labels, best, skip)
}

// firstIn returns the rank of the first selector in refs that matches labels if it is below
// best, else best; selectors of routes skip names are passed over.
func firstIn(refs []selRef, labels *labelReader, best int64, skip func(int) bool) int64 {
	for _, ref := range refs {
		if ref.rank >= best {
			break
		}
		if (skip == nil || !skip(position(ref.rank))) && matchesAll(ref.rest, labels) {
			return ref.rank
		}
	}
	return best
}

// each calls visit once for the position of every route c matches, in no particular order.
// seen must have one entry per route; each uses stamp to mark routes already visited.
func (x *index) each(c Cluster, seen []int, stamp int, visit func(int)) {
	mark := func(r int64) {
		if i := position(r); seen[i] != stamp {
			seen[i] = stamp
			visit(i)
		}
	}
	names, _ := x.byName.get(0, c.Name)
	for _, r := range names {
		mark(r)
	}
	for _, g := range c.Groups {
		groups, _ := x.byGroup.get(0, g)
		for _, r := range groups {
			mark(r)
		}
	}
	var buf [16]label
	labels := x.labelKeys.reader(c.Labels, buf[:])
	all := func(refs []selRef) {
		for _, ref := range refs {
			if matchesAll(ref.rest, &labels) {
				mark(ref.rank)
			}
		}
	}
	for i := range x.anchors {
		a := &x.anchors[i]
		switch {
		case a.exists == nil:
			all(x.lookup(a, &labels))
		case labels.get(a.slots[0]).ok:
			all(a.exists)
		}
	}
	all(x.unanchored)
}
