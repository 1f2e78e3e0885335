// Package e2e holds end-to-end tests that run on a local fleet (internal/testbed.StartFleet): the
// hub with fleet-controller's hub controllers in-process, and workload clusters whose real Open
// Cluster Management work agents apply what the controller writes. Like the other test-bed tests
// they skip without bin/kube-apiserver, bin/etcd and bin/work-agent (`make testbed`), or fail
// with FLEET_REQUIRE_TESTBED=1.
package e2e
