// Package work holds what every ManifestWork the hub controller writes shares. size.go is the
// 500 KiB budget: OCM refuses a ManifestWork over 500 KiB (its webhook on a real hub; the local
// test hub has none, where such a work would fail only later, on the cluster side), so every work
// writer checks the work it is about to write with Check, and writes nothing when it is over.
package work

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	workv1 "open-cluster-management.io/api/work/v1"
)

const (
	// Limit is OCM's largest ManifestWork.
	Limit = 500 << 10
	// Budget is the largest work, serialized, the controller writes: 50 KiB under Limit leave
	// room for what the hub adds to a work (metadata, managed fields).
	Budget = 450 << 10
	// PlanWarning is the size of an input (one CA bundle, the CA bundles of a chain's registries
	// together, an app's values) from which the provider warns at plan that its work approaches
	// Budget.
	PlanWarning = 256 << 10
)

// Part is one input of a work that a person can make smaller, and its size in bytes, such as
// `registry "harbor"'s CA bundle` or "the app's spec.values".
type Part struct {
	What string
	Size int
}

// TooLargeError says that a work is over Budget and which of its parts are largest.
type TooLargeError struct {
	Work  string // <namespace>/<name>
	Size  int
	Parts []Part // the largest first, at most three
}

func (e *TooLargeError) Error() string {
	msg := fmt.Sprintf("ManifestWork %s would be %s, over the %s budget under OCM's %s limit, so it is not written",
		e.Work, KiB(e.Size), KiB(Budget), KiB(Limit))
	if len(e.Parts) == 0 {
		return msg
	}
	names := make([]string, len(e.Parts))
	for i, p := range e.Parts {
		names[i] = fmt.Sprintf("%s (%s)", p.What, KiB(p.Size))
	}
	return msg + "; the largest parts are " + strings.Join(names, ", ") + ": make them smaller"
}

// Size is the work's serialized size: its JSON, as the apiserver stores it.
func Size(w *workv1.ManifestWork) (int, error) {
	raw, err := json.Marshal(w)
	return len(raw), err
}

// Check returns a *TooLargeError, naming the largest of parts, when w is over Budget.
func Check(w *workv1.ManifestWork, parts ...Part) error {
	n, err := Size(w)
	if err != nil {
		return err
	}
	if n <= Budget {
		return nil
	}
	parts = slices.DeleteFunc(slices.Clone(parts), func(p Part) bool { return p.Size == 0 })
	slices.SortStableFunc(parts, func(a, b Part) int { return b.Size - a.Size })
	return &TooLargeError{Work: w.Namespace + "/" + w.Name, Size: n, Parts: parts[:min(3, len(parts))]}
}

// NearBudget returns parts (the CA bundles of one chain's registries) without the empty ones,
// largest first, and their total, when there are two or more and together they reach
// PlanWarning: the one work that carries them all approaches Budget though none alone may. One
// bundle alone is warned of on its own.
func NearBudget(parts []Part) ([]Part, int, bool) {
	parts = slices.DeleteFunc(slices.Clone(parts), func(p Part) bool { return p.Size == 0 })
	slices.SortStableFunc(parts, func(a, b Part) int { return b.Size - a.Size })
	total := 0
	for _, p := range parts {
		total += p.Size
	}
	return parts, total, len(parts) > 1 && total >= PlanWarning
}

// KiB renders a size in bytes as KiB, rounded up.
func KiB(n int) string { return fmt.Sprintf("%d KiB", (n+1023)/1024) }
