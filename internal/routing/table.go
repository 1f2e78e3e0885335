package routing

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// table maps keys, an id and a few strings, to values: a cluster name, a cluster group, or an
// index anchor's id and one value of each of its label keys. It is built once per Router and read for every cluster, so a
// lookup is one hash of the strings and, mostly, one probe: most
// strings a cluster brings are in no table, and those miss on an empty cell or a hash that
// differs, without comparing strings. Open addressing with linear probing, at most half full.
type table[V any] struct {
	seed   [2]uint64
	hashes []uint64  // a power of two of them, 0 for an empty cell; nil for the empty table
	cells  []cell[V] // beside hashes: a lookup reads a cell only when its hash matches
	probe  int       // the longest run of probes a lookup can take
}

type cell[V any] struct {
	id   int
	keys []string
	val  V
}

// maxProbe bounds the longest probe run: a table that exceeds it is built again with another
// seed and twice the cells, so that no set of route values makes lookups slow.
const maxProbe = 8

// newTable returns the table of entries, which must have distinct keys.
func newTable[V any](entries []cell[V]) table[V] {
	if len(entries) == 0 {
		return table[V]{}
	}
	n := 1 << bits.Len(uint(2*len(entries)-1)) // at most half full
	for {
		t := table[V]{seed: [2]uint64{seed64(), seed64()}, hashes: make([]uint64, n), cells: make([]cell[V], n)}
		if t.fill(entries) {
			return t
		}
		n *= 2
	}
}

func seed64() uint64 { return maphash.Comparable(maphash.MakeSeed(), 0) }

// fill inserts entries and reports false when a probe run grows longer than maxProbe.
func (t *table[V]) fill(entries []cell[V]) bool {
	mask := uint64(len(t.cells) - 1)
	for _, e := range entries {
		h := t.hash(e.id, e.keys)
		run := 1
		for i := h & mask; ; i = (i + 1) & mask {
			if t.hashes[i] == 0 {
				t.hashes[i], t.cells[i] = h, e
				break
			}
			if run++; run > maxProbe {
				return false
			}
		}
		t.probe = max(t.probe, run)
	}
	return true
}

// get returns the value of (id, keys) and whether the table has it.
func (t *table[V]) get(id int, keys ...string) (V, bool) {
	if t.hashes != nil {
		h := t.hash(id, keys)
		mask := uint64(len(t.hashes) - 1)
		i := h & mask
		for range t.probe {
			switch t.hashes[i] {
			case h:
				if c := &t.cells[i]; c.id == id && slices.Equal(c.keys, keys) {
					return c.val, true
				}
			case 0:
				var zero V
				return zero, false
			}
			i = (i + 1) & mask
		}
	}
	var zero V
	return zero, false
}

// hash is a seeded hash of (id, keys) that is never 0, in the manner of wyhash: each string is
// read eight bytes at a time and mixed in by 64x64-bit multiplications.
func (t *table[V]) hash(id int, keys []string) uint64 {
	a, b := t.seed[0]^uint64(id), t.seed[1]^uint64(len(keys))
	for _, s := range keys {
		a, b = mix(a^uint64(len(s)), b^0x9e3779b97f4a7c15), a
		for len(s) > 16 {
			a, b = mix(a^le64(s), b^le64(s[8:])), a
			s = s[16:]
		}
		switch n := len(s); {
		case n >= 8:
			a ^= le64(s)
			b ^= le64(s[n-8:])
		case n >= 4:
			a ^= le32(s)
			b ^= le32(s[n-4:])
		case n > 0:
			a ^= uint64(s[0])<<16 | uint64(s[n>>1])<<8 | uint64(s[n-1])
		}
	}
	return mix(a, b^0x9e3779b97f4a7c15) | 1
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func le32(s string) uint64 {
	_ = s[3]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}
