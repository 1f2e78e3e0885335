package routing

// labelKeys numbers the label keys that any selector tests, so that a cluster's labels are read
// once into a slice indexed by that number and requirements test slice elements, not maps.
type labelKeys struct {
	keys []string
	slot map[string]int
}

// label is the value of one label key on a cluster; ok is false when the cluster lacks the key.
type label struct {
	value string
	ok    bool
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

// read fills buf, which must be zeroed, or a new slice if buf is too short, with the cluster's
// values of the keys.
func (lk *labelKeys) read(labels map[string]string, buf []label) []label {
	n := len(lk.keys)
	if n > len(buf) {
		buf = make([]label, n)
	}
	out := buf[:n]
	// A map lookup costs less than a step of iteration over a map, so look the keys up unless
	// they far outnumber the labels.
	if n <= 2*len(labels) {
		for s, k := range lk.keys {
			v, ok := labels[k]
			out[s] = label{v, ok}
		}
		return out
	}
	for k, v := range labels {
		if s, ok := lk.slot[k]; ok {
			out[s] = label{v, true}
		}
	}
	return out
}
