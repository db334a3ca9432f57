package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installManifests applies every object of the given YAML files (server-side apply, as
// kubectl apply --server-side would): what an installation puts in place before the operator
// runs, such as the tenant roles, which the operator binds but may not create.
func installManifests(ctx context.Context, cfg *rest.Config, files []string) error {
	if len(files) == 0 {
		return nil
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("reading %s: %w", file, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("landlord-install"), client.ForceOwnership); err != nil {
				return fmt.Errorf("installing %s %s from %s: %w", obj.GetKind(), obj.GetName(), file, err)
			}
		}
	}
	return nil
}
