// Command fleet-controller is the companion controller of the Fleet provider. It is one binary
// whose subcommands are its modes; run it without arguments for the list.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	// The image has no CA bundle: where the system has no roots, crypto/x509 verifies
	// registries' certificates against Mozilla's, embedded in the binary.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/umkim/terraform-provider-fleet/internal/initgc"
)

// command is one mode of the binary.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// version is set at build time with -ldflags "-X main.version=<version>"; it is sent in the
// User-Agent of every request to a registry.
var version = "dev"

var commands = map[string]command{
	"agent": {summary: "run the agent on a workload cluster: pull the artifacts OCIPulls name through the delivered chains", run: runAgent},
	"hub":   {summary: "run the hub controllers: routes to per-cluster chains delivered through ManifestWork", run: runHub},
	"pull":  {summary: "pull an OCI artifact through a registry chain with failover", run: runPull},
}

func main() {
	initgc.Resume()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the exit code: 0 on success and on a request for
// help, 1 on failure, 2 on bad usage (no command, an unknown command or flag).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "fleet-controller: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: fleet-controller <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nRun fleet-controller <command> -h for its flags.")
}

// parseFlags parses a mode's flags. It returns the exit code to stop with, 0 for -h/--help (the
// flag package has printed the usage) and 2 for a bad flag, or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string) int {
	switch err := fs.Parse(args); {
	case err == nil:
		return -1
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		return 2
	}
}
