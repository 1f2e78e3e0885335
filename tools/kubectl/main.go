// Command kubectl is the stock kubectl (k8s.io/kubectl, pinned in go.mod to the hub's
// kube-apiserver version), so the demo and tests can show objects with a real kubectl built from
// Go alone. It is kubernetes' own cmd/kubectl entry point.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() { os.Exit(cli.Run(cmd.NewDefaultKubectlCommand())) }
