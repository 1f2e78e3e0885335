package routing

import (
	"strconv"
	"strings"
	"testing"
)

// TestTable checks that a table finds every key it was built with, under its id and in its
// order, and no other: keys of every length around the hash's 4-, 8- and 16-byte steps, keys
// that differ only in their last byte, compound keys whose concatenations are equal.
func TestTable(t *testing.T) {
	enc := func(id int, keys []string) string {
		s := strconv.Itoa(id)
		for _, k := range keys {
			s += "," + strconv.Quote(k)
		}
		return s
	}
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000, 5000} {
		var cells []cell[int]
		want := map[string]int{}
		for i := range n {
			s := strings.Repeat("v", i%40) + strconv.Itoa(i%10)
			c := cell[int]{id: i % 5, keys: []string{s}, val: i}
			switch i % 3 {
			case 1:
				c.keys = []string{s, strconv.Itoa(i)}
			case 2:
				c.keys = []string{s + strconv.Itoa(i), ""}
			}
			if _, dup := want[enc(c.id, c.keys)]; !dup {
				want[enc(c.id, c.keys)] = i
				cells = append(cells, c)
			}
		}
		tb := newTable(cells)
		if tb.probe > maxProbe {
			t.Fatalf("%d cells: a lookup may probe %d cells", n, tb.probe)
		}
		check := func(id int, keys ...string) {
			v, ok := tb.get(id, keys...)
			w, exists := want[enc(id, keys)]
			if ok != exists || v != w {
				t.Fatalf("%d cells: get(%d, %q) = %d, %v; want %d, %v", n, id, keys, v, ok, w, exists)
			}
		}
		for _, c := range cells {
			check(c.id, c.keys...)
			check(c.id+5, c.keys...)
			check(c.id, c.keys[0]+"x")
			if len(c.keys) == 2 {
				joined := c.keys[0] + c.keys[1]
				check(c.id, joined)
				check(c.id, joined, "")
				check(c.id, "", joined)
				check(c.id, c.keys[1], c.keys[0])
			}
		}
	}
}
