// Command landlordctl operates Landlord from a workstation or a pipeline, as kubectl does and
// with kubectl's connection flags: tenants and their status, fleet rollouts of a component
// version, batch by batch, across clusters, claims of a pool's spare tenants, local renders of
// component templates, pausing a tenant and asking for it to be checked again now, and the
// secret store. Installed as kubectl-landlord on the PATH, it is the kubectl plugin
// `kubectl landlord`.
package main

import (
	"fmt"
	"os"
)

func main() {
	name := commandName(os.Args[0])
	if err := newRootCommandAs(name, os.Stdout).Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
