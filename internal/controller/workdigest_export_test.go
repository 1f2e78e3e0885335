package controller

// SlimManifestWork is the cache's transform of a ManifestWork.
var SlimManifestWork = slimManifestWork
