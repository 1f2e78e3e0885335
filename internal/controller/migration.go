package controller

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/umkim/terraform-provider-fleet/api/v1alpha1"
	"github.com/umkim/terraform-provider-fleet/internal/appwork"
)

// Names of works written before the injective names (v1alpha1.WorkspaceObjectName, issue 19):
// prefix-workspace-name, which two (workspace, name) pairs can share (workspace team-a's web and
// workspace team's a-web both gave app-team-a-web). Migration only: nothing new is written under
// them. A reconciler looks the work of its object's legacy name up and, when the work's owner is
// that object (checkOwner),
//   - apps adopt it: the app keeps its work, OCIPull, FleetRelease and values Secret names until
//     it is deleted, since replacing the work would delete the FleetRelease and so uninstall
//     the release;
//   - storage deployments replace it: the new work is written and the legacy one deleted (its
//     deleteOption orphans what it made on the site);
//   - app routes replace it: unpublish deletes every route work the route owns but the one it
//     publishes, the legacy one included.

// legacyName is the name the hub gave, before issue 19, to what it wrote for the object name of
// workspace: prefix-workspace-name, cut to a hash-suffixed 253 characters when longer.
func legacyName(prefix, workspace, name string) string {
	return legacyBounded(prefix+"-"+workspace+"-"+name, v1alpha1.MaxSubdomain)
}

// legacyBounded is how legacyName bounded a name: s when it fits limit, else its first
// limit-11 characters, "-" and ten hex digits of its SHA-256.
func legacyBounded(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:limit-11] + "-" + hex.EncodeToString(sum[:])[:10]
}

// legacyAppNames are the names app's work and its values Secret had before issue 19.
func legacyAppNames(app *v1alpha1.FleetApp) appwork.Names {
	work := legacyName("app", app.Namespace, app.Name)
	return appwork.Names{Work: work, ValuesSecret: legacyBounded(work, v1alpha1.MaxSubdomain-len("-values")) + "-values"}
}

// legacyStorageWorkName is the name a StorageSiteDeployment's work had before issue 19.
func legacyStorageWorkName(namespace, name string) string { return legacyName("sbsd", namespace, name) }
