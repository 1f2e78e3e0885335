package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Limits of the names Kubernetes takes.
const (
	// MaxSubdomain is the longest DNS subdomain (RFC 1123), the name of most kinds.
	MaxSubdomain = 253
	// MaxLabel is the longest DNS label, and the longest label value.
	MaxLabel = 63
)

// WorkspaceObjectName is the name of what the hub writes on behalf of the object name of
// workspace, in a namespace shared by workspaces (a cluster's namespace on the hub, fleet-system
// on a cluster, the gateway's namespace): prefix.workspace.name. A workspace is a namespace,
// which cannot contain a dot, so the first dot after prefix ends it and no two (workspace, name)
// pairs give one name. Longer than limit (MaxSubdomain for most kinds), it is cut and suffixed
// with a hash of the whole, so it stays distinct unless SHA-256 collides.
func WorkspaceObjectName(prefix, workspace, name string, limit int) string {
	return BoundedName(prefix+"."+workspace+"."+name, limit)
}

// BoundedName is s when it fits limit, else its first characters and a hash of all of it,
// ending in an alphanumeric character as a DNS name must.
func BoundedName(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	const hashLen = 10
	head := strings.TrimRight(s[:limit-hashLen-1], ".-")
	return head + "-" + hex.EncodeToString(sum[:])[:hashLen]
}
