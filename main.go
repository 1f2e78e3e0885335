// Command terraform-provider-fleet serves the fleet provider to Terraform and OpenTofu.
package main

import (
	"flag"
	"log"
	"os"
	"strings"

	"github.com/umkim/terraform-provider-fleet/internal/provider"
)

// version is set by goreleaser at release time.
var version = "dev"

func main() {
	debug := flag.Bool("debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	quietSDKLogs()
	if err := provider.Serve(version, *debug); err != nil {
		log.Fatal(err)
	}
}

// sdkLogLevels are the plugin SDK's log level variables: its root logger's, and its framework and
// protocol subsystems'.
var sdkLogLevels = []string{"TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO"}

// quietSDKLogs turns the plugin SDK's own logs off unless the environment the CLI passes on asks
// for logs (any TF_LOG variable but TF_LOG_PATH). Without one the CLI shows none of a provider's
// logs, yet the SDK would write each call's trace logs as JSON for the CLI to read and discard:
// a quarter of the provider's CPU in a plan of thousands of resources. The provider's own logs
// (tflog) are left as they are.
func quietSDKLogs() {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TF_LOG") && name != "TF_LOG_PATH" {
			return
		}
	}
	for _, name := range sdkLogLevels {
		os.Setenv(name, "OFF")
	}
}
