package main

import (
	"fmt"
	"os"

	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
)

// chainVerify returns the verify settings of a chain file that loadChain read: the signatures
// every artifact pulled through it must carry, nil for none. It fails rather than pull
// unverified when the file cannot be read again.
func chainVerify(path string) (*puller.Verify, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the chain file: %w", err)
	}
	f, err := ocichain.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("chain file %s: %w", path, err)
	}
	return f.Verify, nil
}
