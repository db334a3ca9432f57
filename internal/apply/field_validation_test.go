package apply_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/landlord-dev/landlord/internal/apply"
)

// The API server parses an apply patch a second time, strictly, to warn of unknown fields,
// unless told not to. An object Landlord builds from a Go type cannot carry one; a component's
// object, rendered from an administrator's template, can, and keeps the warning.
func TestOnlyRenderedObjectsAreParsedForUnknownFields(t *testing.T) {
	rendered := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "tenant-acme", "name": "web"},
		"data":     map[string]any{"k": "v"},
	}}
	cases := []struct {
		name    string
		desired client.Object
		want    string
	}{
		{"an object built from a Go type is applied without the strict parse", quota("50"), metav1.FieldValidationIgnore},
		{"a rendered object is applied with the API server's default", rendered, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sent []client.PatchOptions
			c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if patch.Type() != types.ApplyYAMLPatchType {
						t.Errorf("sent a %s patch, want a server-side apply", patch.Type())
					}
					o := client.PatchOptions{}
					o.ApplyOptions(opts)
					sent = append(sent, o)
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
			applier := &apply.Applier{Client: c, APIReader: c, Memo: apply.NewMemo()}
			if result, err := applier.Apply(context.Background(), tc.desired); err != nil || result != apply.Created {
				t.Fatalf("applied: %s, %v", result, err)
			}
			if len(sent) != 1 {
				t.Fatalf("%d patches sent, want 1", len(sent))
			}
			if sent[0].FieldValidation != tc.want || sent[0].FieldManager != apply.FieldOwner {
				t.Errorf("field validation %q by %q, want %q by %q", sent[0].FieldValidation, sent[0].FieldManager, tc.want, apply.FieldOwner)
			}
		})
	}
}
