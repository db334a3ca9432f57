// Package crd holds the CustomResourceDefinitions this build of Landlord ships (bases/, generated
// by `make manifests`), embedded so that a binary can compare them with the ones a cluster has
// installed.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// Shipped are the CRDs of this build, by name.
func Shipped() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		data, err := bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(string(data), "---\n")), crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
