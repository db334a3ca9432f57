// Command kustomize prints the build of a kustomization directory, as `kustomize build DIR` and
// `kubectl kustomize DIR` do, with kustomize's own library (sigs.k8s.io/kustomize/api): the
// installer and the chart are built from config/ without a kubectl, so no Kubernetes build is
// needed to make a release.
//
//	go run ./hack/kustomize DIR
package main

import (
	"fmt"
	"os"

	"github.com/landlord-dev/landlord/hack/kustomize/build"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize DIR")
		os.Exit(2)
	}
	out, err := build.Dir(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, _ = os.Stdout.Write(out)
}
