// Command landlordctl operates Landlord from a workstation or a pipeline, as kubectl does and
// with kubectl's connection flags: tenants and their status, fleet rollouts of a component
// version, batch by batch, across clusters, claims of a pool's spare tenants, local renders of
// component templates, pausing a tenant and asking for it to be checked again now, and the
// secret store. Installed as kubectl-landlord on the PATH, it is the kubectl plugin
// `kubectl landlord`.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	name, args := invocation(os.Args)
	os.Exit(execute(name, args, os.Stdout, os.Stderr))
}

// execute runs the CLI as name with args, and returns its exit code (exit.go): errors go to
// stderr, prefixed with the name, and a usage error says where the help is.
func execute(name string, args []string, stdout, stderr io.Writer) int {
	root := newRootCommandAs(name, stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		if exitCode(err) == exitUsage {
			fmt.Fprintln(stderr, usageHint(cmd))
		}
	}
	return exitCode(err)
}
