package component_test

import (
	"slices"
	"strings"
	"testing"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/component"
)

// A declaration's JSON pointer becomes the field names the applier walks, unescaped as RFC 6901
// says.
func TestAFieldOwnedByOthersIsReadFromItsJSONPointer(t *testing.T) {
	cases := []struct {
		name    string
		pointer string
		want    []string
	}{
		{"a field of the spec is its names", "/spec/replicas", []string{"spec", "replicas"}},
		{"~1 stands for a slash in an annotation's name", "/metadata/annotations/sidecar.istio.io~1status", []string{"metadata", "annotations", "sidecar.istio.io/status"}},
		{"~0 stands for a tilde, and ~01 is a tilde and a one", "/spec/a~0b/c~01", []string{"spec", "a~b", "c~1"}},
		{"a label that is not Landlord's may be owned by others", "/metadata/labels/version", []string{"metadata", "labels", "version"}},
		{"a field holding an object may be owned whole", "/spec/template/metadata/annotations", []string{"spec", "template", "metadata", "annotations"}},
		{"a name with digits that is not a number is a field", "/spec/v1beta1", []string{"spec", "v1beta1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := component.FieldsOwnedByOthers([]tenancyv1alpha1.FieldOwnedByOthers{{Group: "apps", Kind: "Deployment", Name: "api", JSONPointer: tc.pointer}})
			if err != nil {
				t.Fatal(err)
			}
			want := apply.OthersField{Group: "apps", Kind: "Deployment", Name: "api", Path: tc.want}
			if len(got) != 1 || got[0].Group != want.Group || got[0].Kind != want.Kind || got[0].Name != want.Name || !slices.Equal(got[0].Path, want.Path) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// refusedFieldsOwnedByOthers are declarations that must never be made, with what the refusal
// says. The API server refuses them at admission in the same words, from the CRD's rules.
var refusedFieldsOwnedByOthers = []struct {
	Name, Pointer, Says string
}{
	{"a pointer without a leading slash is not a pointer", "spec/replicas", "is not a JSON pointer to a field"},
	{"the root is not a field", "/", "is not a JSON pointer to a field"},
	{"an empty name is not a field", "/spec//replicas", "is not a JSON pointer to a field"},
	{"a tilde that escapes nothing is not a pointer", "/metadata/annotations/a~2b", "is not a JSON pointer to a field"},
	{"an element of a list is not a field", "/spec/template/spec/containers/0/image", "names an element of a list"},
	{"the end of a list is not a field", "/spec/template/spec/containers/-", "names an element of a list"},
	{"the kind is what the object is", "/kind", "is never owned by others"},
	{"the API version is what the object is", "/apiVersion", "is never owned by others"},
	{"status is never written by Landlord", "/status/replicas", "is never owned by others"},
	{"the name is Landlord's", "/metadata/name", "is metadata Landlord must own"},
	{"the namespace is Landlord's", "/metadata/namespace", "is metadata Landlord must own"},
	{"every label at once holds Landlord's", "/metadata/labels", "is metadata Landlord must own"},
	{"every annotation at once holds Landlord's", "/metadata/annotations", "is metadata Landlord must own"},
	{"the owner references are Landlord's", "/metadata/ownerReferences", "is metadata Landlord must own"},
	{"the managed-by label is Landlord's", "/metadata/labels/app.kubernetes.io~1managed-by", "is a label or annotation of Landlord"},
	{"the tenant label is Landlord's", "/metadata/labels/tenancy.landlord.dev~1tenant", "is a label or annotation of Landlord"},
	{"the applied-hash annotation is Landlord's", "/metadata/annotations/tenancy.landlord.dev~1applied-hash", "is a label or annotation of Landlord"},
}

// A declaration of what Landlord must own, or of something that is not a field of an object, is
// refused naming the entry and the pointer.
func TestAFieldOwnedByOthersIsRefusedWhenLandlordMustOwnIt(t *testing.T) {
	for _, tc := range refusedFieldsOwnedByOthers {
		t.Run(tc.Name, func(t *testing.T) {
			decls := []tenancyv1alpha1.FieldOwnedByOthers{
				{Kind: "Deployment", JSONPointer: "/spec/replicas"},
				{Kind: "Deployment", JSONPointer: tc.Pointer},
			}
			_, err := component.FieldsOwnedByOthers(decls)
			if err == nil {
				t.Fatalf("%s was accepted", tc.Pointer)
			}
			for _, want := range []string{"spec.fieldsOwnedByOthers[1].jsonPointer", "jsonPointer " + tc.Pointer + " ", tc.Says} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal %q does not say %q", err, want)
				}
			}
		})
	}
}

// While a tenant is Frozen its workloads run nothing, whoever sized them: the replica count of
// a Deployment or StatefulSet, and any field holding it, is Landlord's then.
func TestAFrozenTenantKeepsTheReplicaCountsItScalesToZero(t *testing.T) {
	cases := []struct {
		name  string
		field apply.OthersField
		kept  bool
	}{
		{"a Deployment's count is Landlord's", apply.OthersField{Group: "apps", Kind: "Deployment", Path: []string{"spec", "replicas"}}, false},
		{"a StatefulSet's count in any group is Landlord's", apply.OthersField{Kind: "StatefulSet", Path: []string{"spec", "replicas"}}, false},
		{"a Deployment's whole spec is Landlord's", apply.OthersField{Kind: "Deployment", Path: []string{"spec"}}, false},
		{"a Deployment's annotation stays the mesh's", apply.OthersField{Kind: "Deployment", Path: []string{"metadata", "annotations", "mesh.example.com/status"}}, true},
		{"a Deployment's pod template stays others'", apply.OthersField{Kind: "Deployment", Path: []string{"spec", "template", "metadata", "annotations"}}, true},
		{"another kind's count stays others'", apply.OthersField{Group: "argoproj.io", Kind: "Rollout", Path: []string{"spec", "replicas"}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fields := []apply.OthersField{tc.field}
			got := component.WhileFrozen(fields)
			if kept := len(got) == 1; kept != tc.kept {
				t.Errorf("kept = %v, want %v", kept, tc.kept)
			}
			if len(fields) != 1 {
				t.Errorf("the template's fields were changed: %+v", fields)
			}
		})
	}
}
