package sitesim

// The site CRDs and the kinds' deep copies, from the Go types in v1alpha2; `make generate` runs
// these (they need bin/controller-gen, from `make tools`).
//go:generate ../../../bin/controller-gen object paths=./v1alpha2/...
//go:generate ../../../bin/controller-gen crd paths=./v1alpha2/... output:crd:artifacts:config=crd
