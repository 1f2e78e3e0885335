// Command work-agent is Open Cluster Management's work agent (open-cluster-management.io/ocm,
// pinned in go.mod) without the rest of the klusterlet: the stock cmd/work and pkg/cmd/spoke also
// link the registration agent, whose dependencies the module proxy here does not serve. It builds
// the same command as pkg/cmd/spoke.NewWorkAgent: the common agent options, the work agent's
// options and the spoke work feature gates, run by pkg/work/spoke's RunWorkloadAgent.
//
// internal/testbed's StartFleet runs it, one process per workload cluster, with
//
//	work-agent --spoke-cluster-name NAME --hub-kubeconfig HUB --workload-source-config HUB \
//	  --spoke-kubeconfig SPOKE --kubeconfig SPOKE --disable-leader-election
//
// and FLEET_WORK_AGENT_PARENT_PID set to its own pid: the agent then exits when that process is
// gone (a test binary killed by `go test -timeout`, say) instead of running on as an orphan.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	"k8s.io/utils/clock"

	ocmfeature "open-cluster-management.io/api/feature"

	commonoptions "open-cluster-management.io/ocm/pkg/common/options"
	"open-cluster-management.io/ocm/pkg/features"
	"open-cluster-management.io/ocm/pkg/version"
	"open-cluster-management.io/ocm/pkg/work/spoke"
)

// EnvParentPID names the variable holding the pid of the process the agent must not outlive.
const EnvParentPID = "FLEET_WORK_AGENT_PARENT_PID"

func main() {
	if pid, err := strconv.Atoi(os.Getenv(EnvParentPID)); err == nil && pid > 1 {
		go exitWithParent(pid)
	}
	pflag.CommandLine.SetNormalizeFunc(utilflag.WordSepNormalizeFunc)
	pflag.CommandLine.AddGoFlagSet(goflag.CommandLine)
	logs.AddFlags(pflag.CommandLine)
	logs.InitLogs()
	defer logs.FlushLogs()

	commonOptions := commonoptions.NewAgentOptions()
	agentOptions := spoke.NewWorkloadAgentOptions()
	cfg := spoke.NewWorkAgentConfig(commonOptions, agentOptions)
	cmd := commonOptions.CommonOpts.
		NewControllerCommandConfig("work-agent", version.Get(), cfg.RunWorkloadAgent, clock.RealClock{}).
		NewCommandWithContext(context.Background())
	cmd.Use = "work-agent"
	cmd.Short = "Open Cluster Management's work agent: applies a cluster's ManifestWorks from the hub"

	flags := cmd.Flags()
	commonOptions.AddFlags(flags)
	agentOptions.AddFlags(flags)
	utilruntime.Must(features.SpokeMutableFeatureGate.Add(ocmfeature.DefaultSpokeWorkFeatureGates))
	features.SpokeMutableFeatureGate.AddFlag(flags)

	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1) //nolint:gocritic // logs.FlushLogs has nothing to flush after a failed start
	}
}

// exitWithParent ends the process once its parent is no longer pid: when the parent dies, the
// agent is reparented (to init or a subreaper).
func exitWithParent(pid int) {
	for range time.Tick(time.Second) {
		if os.Getppid() != pid {
			fmt.Fprintf(os.Stderr, "work-agent: parent process %d is gone, exiting\n", pid)
			os.Exit(2)
		}
	}
}
