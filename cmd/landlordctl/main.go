// Command landlordctl operates Landlord from a workstation or a pipeline: the secret store (put,
// get, list, delete, and sync into the cluster's template namespace), fleet rollouts of a
// component version, batch by batch, across clusters, and claims of a pool's spare tenants.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand(os.Stdout).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "landlordctl:", err)
		os.Exit(1)
	}
}
