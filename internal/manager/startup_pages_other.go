//go:build !linux

package manager

// releaseStartupPages does nothing where MADV_PAGEOUT does not exist.
func releaseStartupPages() (int64, error) { return 0, nil }
