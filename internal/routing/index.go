package routing

import (
	"cmp"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
)

// index finds the earliest route a cluster matches by looking up its name, its groups and the
// values of the label keys the routes' selectors require, so a cluster tests only selectors that
// could match it. Each selector is filed under one anchor, a requirement every matching cluster
// satisfies: a (key, value) pair of an In requirement, else the key of an Exists requirement.
// Selectors with neither (empty, or only NotIn/DoesNotExist) are tested for every cluster.
//
// A match is ranked by route position, then criterion (names, groups, selectors in order), packed
// into one int64 so that "earlier" is a single comparison. Every list is in ascending rank.
type index struct {
	size       int // number of routes
	labelKeys  *labelKeys
	byName     map[string][]int64
	byGroup    map[string][]int64
	names      filter     // of byName's keys
	groups     filter     // of byGroup's keys
	keys       []keyEntry // the anchor keys, to look up in a cluster's labels
	byKey      map[string]*keyIndex
	unanchored []selRef
}

type keyEntry struct {
	slot  int   // in labelKeys
	first int64 // the lowest rank filed under the key
	idx   *keyIndex
}

type keyIndex struct {
	values map[string][]selRef // selectors anchored on key=value
	exists []selRef            // selectors anchored on the key's existence
}

type selRef struct {
	rank int64
	rest []requirement // the selector's requirements other than its anchor
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
	x := index{size: len(routes), labelKeys: lk, byName: map[string][]int64{}, byGroup: map[string][]int64{}, byKey: map[string]*keyIndex{}}
	for i, rt := range routes {
		for _, n := range rt.ClusterNames {
			x.byName[n] = append(x.byName[n], rank(i, rankName))
		}
		for _, g := range rt.ClusterGroups {
			x.byGroup[g] = append(x.byGroup[g], rank(i, rankGroup))
		}
		for s, reqs := range rt.selectors {
			x.add(rank(i, rankSel0+s), reqs)
		}
	}
	for i := range x.keys {
		k := &x.keys[i]
		k.first = firstRank(k.idx.exists)
		for _, refs := range k.idx.values {
			k.first = min(k.first, firstRank(refs))
		}
	}
	slices.SortFunc(x.keys, func(a, b keyEntry) int { return cmp.Compare(a.first, b.first) })
	x.names, x.groups = newFilter(x.byName), newFilter(x.byGroup)
	return x
}

// filter tells, for most strings not in a set, that they are not, at the cost of one hash and
// one bit test: most clusters are named by no route and belong to no routed group, and a miss
// in a map costs a probe of memory that the filter's few hundred bytes spare.
type filter struct {
	seed maphash.Seed
	bits []uint64 // one bit per hash value, a power of two of them; nil for the empty set
}

// newFilter returns the filter of m's keys, with 32 to 64 bits per key: at most one string in
// 32 outside the set passes it.
func newFilter[V any](m map[string]V) filter {
	if len(m) == 0 {
		return filter{}
	}
	f := filter{seed: maphash.MakeSeed(), bits: make([]uint64, 1<<bits.Len(uint(len(m)/2)))}
	for k := range m {
		h := f.hash(k)
		f.bits[h>>6] |= 1 << (h & 63)
	}
	return f
}

func (f *filter) hash(s string) uint64 {
	return maphash.String(f.seed, s) & (uint64(len(f.bits))<<6 - 1)
}

// mayHave reports false when s is certainly not in the set.
func (f *filter) mayHave(s string) bool {
	if f.bits == nil {
		return false
	}
	h := f.hash(s)
	return f.bits[h>>6]&(1<<(h&63)) != 0
}

func firstRank(refs []selRef) int64 {
	if len(refs) == 0 {
		return math.MaxInt64
	}
	return refs[0].rank
}

// add files a selector under the In requirement whose lists are shortest so far, which spreads
// selectors over keys with many values; else under an Exists requirement; else unanchored.
func (x *index) add(r int64, reqs []requirement) {
	anchor, cost := -1, 0
	for i, q := range reqs {
		switch {
		case q.op == In:
			if c := x.cost(q); anchor < 0 || reqs[anchor].op != In || c < cost {
				anchor, cost = i, c
			}
		case q.op == Exists && anchor < 0:
			anchor = i
		}
	}
	if anchor < 0 {
		x.unanchored = append(x.unanchored, selRef{r, reqs})
		return
	}
	q := reqs[anchor]
	ref := selRef{r, append(reqs[:anchor:anchor], reqs[anchor+1:]...)}
	ki := x.byKey[q.key]
	if ki == nil {
		ki = &keyIndex{values: map[string][]selRef{}}
		x.byKey[q.key] = ki
		x.keys = append(x.keys, keyEntry{slot: q.slot, idx: ki})
	}
	if q.op == Exists {
		ki.exists = append(ki.exists, ref)
		return
	}
	for _, v := range q.values {
		ki.values[v] = append(ki.values[v], ref)
	}
}

// cost is the length of the longest list an In requirement's selector would join.
func (x *index) cost(q requirement) int {
	ki := x.byKey[q.key]
	if ki == nil {
		return 0
	}
	longest := 0
	for _, v := range q.values {
		longest = max(longest, len(ki.values[v]))
	}
	return longest
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
	if x.names.mayHave(c.Name) {
		best = min(best, kept(x.byName[c.Name]))
	}
	for _, g := range c.Groups {
		if x.groups.mayHave(g) {
			best = min(best, kept(x.byGroup[g]))
		}
	}
	var buf [16]label
	labels := x.labelKeys.reader(c.Labels, buf[:])
	for _, k := range x.keys { // in ascending first rank
		if k.first >= best {
			break
		}
		if l := labels.get(k.slot); l.ok {
			best = firstIn(k.idx.values[l.value], &labels, best, skip)
			best = firstIn(k.idx.exists, &labels, best, skip)
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
	for _, r := range x.byName[c.Name] {
		mark(r)
	}
	for _, g := range c.Groups {
		for _, r := range x.byGroup[g] {
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
	for _, k := range x.keys {
		if l := labels.get(k.slot); l.ok {
			all(k.idx.values[l.value])
			all(k.idx.exists)
		}
	}
	all(x.unanchored)
}
