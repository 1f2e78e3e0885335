package manager

import "github.com/umkim/terraform-provider-fleet/internal/initpages"

// releaseStartupPages hands back the resident pages of the binary's read-only mappings (its code
// and read-only data) and returns the bytes those mappings span. Pages touched again come back
// on demand.
func releaseStartupPages() (int64, error) { return initpages.Release() }
