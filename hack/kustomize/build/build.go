// Package build runs kustomize's library on a directory, with the options `kubectl kustomize`
// uses by default.
package build

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Dir returns the build of the kustomization in dir as a YAML stream.
func Dir(dir string) ([]byte, error) {
	opts := krusty.MakeDefaultOptions()
	// kubectl kustomize's default: namespaces and CRDs first, so a plain apply of the stream
	// creates what the rest needs before it.
	opts.Reorder = krusty.ReorderOptionLegacy
	k := krusty.MakeKustomizer(opts)
	resources, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return out, nil
}
