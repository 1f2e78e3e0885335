//go:build !unix

package puller

import "os"

// lockDir opens path; other systems get no lock against another process.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}
