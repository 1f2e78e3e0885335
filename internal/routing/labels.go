package routing

// labelKeys numbers the label keys that any selector tests, so that a cluster's labels are read
// into a slice indexed by that number and requirements test slice elements, not maps.
type labelKeys struct {
	keys []string
	slot map[string]int
}

// label is the value of one label key on a cluster; ok is false when the cluster lacks the key,
// read is false until the key has been looked up.
type label struct {
	value    string
	ok, read bool
}

// newLabelKeys numbers the keys of the routes' requirements and records each requirement's slot.
func newLabelKeys(routes []*compiledRoute) *labelKeys {
	lk := &labelKeys{slot: map[string]int{}}
	for _, rt := range routes {
		for _, reqs := range rt.selectors {
			for i := range reqs {
				s, ok := lk.slot[reqs[i].key]
				if !ok {
					s = len(lk.keys)
					lk.slot[reqs[i].key] = s
					lk.keys = append(lk.keys, reqs[i].key)
				}
				reqs[i].slot = s
			}
		}
	}
	return lk
}

// labelReader reads a cluster's values of the numbered keys, each at most once and only when a
// requirement tests it: a cluster resolved by its first anchors costs a few lookups, not one per
// key the routes use.
type labelReader struct {
	labels map[string]string
	keys   []string
	got    []label
}

// reader returns a labelReader of labels that keeps its values in buf, which must be zeroed, or
// in a new slice if buf is too short.
func (lk *labelKeys) reader(labels map[string]string, buf []label) labelReader {
	n := len(lk.keys)
	if n > len(buf) {
		buf = make([]label, n)
	}
	r := labelReader{labels: labels, keys: lk.keys, got: buf[:n]}
	// A map lookup costs less than a step of iteration over a map, so look keys up as they are
	// needed unless they far outnumber the labels: then read every label once, up front.
	if n > 2*len(labels) {
		for i := range r.got {
			r.got[i].read = true
		}
		for k, v := range labels {
			if s, ok := lk.slot[k]; ok {
				r.got[s] = label{v, true, true}
			}
		}
	}
	return r
}

// get returns the cluster's value of the key numbered s.
func (r *labelReader) get(s int) label {
	l := &r.got[s]
	if !l.read {
		v, ok := r.labels[r.keys[s]]
		*l = label{v, ok, true}
	}
	return *l
}
