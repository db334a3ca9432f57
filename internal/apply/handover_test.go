package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

func content(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// scaled is the autoscaler's write of a Deployment's count, through the scale subresource.
func scaled() metav1.ManagedFieldsEntry {
	e := entry("kube-controller-manager", `{"f:spec":{"f:replicas":{}}}`)
	e.Operation, e.Subresource = metav1.ManagedFieldsOperationUpdate, "scale"
	return e
}

// What Landlord sends to an object that exists leaves out the fields others own that another
// field manager has written, and only those: a field only Landlord owns is sent, since leaving
// it out of a server-side apply would delete it.
func TestLeaveToOthersLeavesOutOnlyWhatAnotherManagerOwns(t *testing.T) {
	const deployment = `
metadata:
  annotations: {mesh.example.com/status: pending, tenancy.landlord.dev/applied-hash: abc}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  template:
    metadata:
      annotations: {a: "1", b: "2"}
    spec:
      containers: [{name: api, image: api:1}]
`
	landlordAll := entry(FieldOwner, `{"f:metadata":{"f:annotations":{"f:mesh.example.com/status":{},"f:tenancy.landlord.dev/applied-hash":{}}},"f:spec":{"f:replicas":{},"f:revisionHistoryLimit":{},"f:template":{"f:metadata":{"f:annotations":{"f:a":{},"f:b":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"api\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)
	cases := []struct {
		name    string
		paths   [][]string
		entries []metav1.ManagedFieldsEntry
		want    string
	}{
		{
			name:    "a count only Landlord owns is sent with the template's value",
			paths:   [][]string{{"spec", "replicas"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll},
			want:    deployment,
		},
		{
			name:    "a count the autoscaler wrote through the scale subresource is left out",
			paths:   [][]string{{"spec", "replicas"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll, scaled()},
			want: `
metadata:
  annotations: {mesh.example.com/status: pending, tenancy.landlord.dev/applied-hash: abc}
spec:
  revisionHistoryLimit: 3
  template:
    metadata:
      annotations: {a: "1", b: "2"}
    spec:
      containers: [{name: api, image: api:1}]
`,
		},
		{
			name:    "an annotation a mesh rewrote is left out, and Landlord's own annotation stays",
			paths:   [][]string{{"metadata", "annotations", "mesh.example.com/status"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll, entry("mesh", `{"f:metadata":{"f:annotations":{"f:mesh.example.com/status":{}}}}`)},
			want: `
metadata:
  annotations: {tenancy.landlord.dev/applied-hash: abc}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  template:
    metadata:
      annotations: {a: "1", b: "2"}
    spec:
      containers: [{name: api, image: api:1}]
`,
		},
		{
			name:    "a field another manager owns beside Landlord is left out too",
			paths:   [][]string{{"spec", "replicas"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll, entry("kubectl", `{"f:spec":{"f:replicas":{}}}`)},
			want: `
metadata:
  annotations: {mesh.example.com/status: pending, tenancy.landlord.dev/applied-hash: abc}
spec:
  revisionHistoryLimit: 3
  template:
    metadata:
      annotations: {a: "1", b: "2"}
    spec:
      containers: [{name: api, image: api:1}]
`,
		},
		{
			name:    "of a map declared whole, only the keys others own are left out",
			paths:   [][]string{{"spec", "template", "metadata", "annotations"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll, entry("mesh", `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:a":{},"f:c":{}}}}}}`)},
			want: `
metadata:
  annotations: {mesh.example.com/status: pending, tenancy.landlord.dev/applied-hash: abc}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  template:
    metadata:
      annotations: {b: "2"}
    spec:
      containers: [{name: api, image: api:1}]
`,
		},
		{
			name:    "a map emptied by what is left out goes with it",
			paths:   [][]string{{"spec", "template", "metadata", "annotations"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll, entry("mesh", `{"f:spec":{"f:template":{"f:metadata":{"f:annotations":{"f:a":{},"f:b":{}}}}}}`)},
			want: `
metadata:
  annotations: {mesh.example.com/status: pending, tenancy.landlord.dev/applied-hash: abc}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  template:
    spec:
      containers: [{name: api, image: api:1}]
`,
		},
		{
			name:    "a list declared whole is sent while Landlord owns a field of an element, since leaving it out would delete that field",
			paths:   [][]string{{"spec", "template", "spec", "containers"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll, entry("vpa", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"api\"}":{"f:resources":{}}}}}}}`)},
			want:    deployment,
		},
		{
			name:  "a list declared whole is left out once others own a field of an element and Landlord none",
			paths: [][]string{{"spec", "template", "spec", "containers"}},
			entries: []metav1.ManagedFieldsEntry{
				entry(FieldOwner, `{"f:metadata":{"f:annotations":{"f:mesh.example.com/status":{},"f:tenancy.landlord.dev/applied-hash":{}}},"f:spec":{"f:replicas":{},"f:revisionHistoryLimit":{},"f:template":{"f:metadata":{"f:annotations":{"f:a":{},"f:b":{}}}}}}`),
				entry("vpa", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"api\"}":{"f:resources":{}}}}}}}`),
			},
			want: `
metadata:
  annotations: {mesh.example.com/status: pending, tenancy.landlord.dev/applied-hash: abc}
spec:
  replicas: 2
  revisionHistoryLimit: 3
  template:
    metadata:
      annotations: {a: "1", b: "2"}
`,
		},
		{
			name:    "an object whose managed fields were stripped has every declared field left out, which the API server then keeps",
			paths:   [][]string{{"spec", "replicas"}, {"metadata", "annotations", "mesh.example.com/status"}},
			entries: nil,
			want: `
metadata:
  annotations: {tenancy.landlord.dev/applied-hash: abc}
spec:
  revisionHistoryLimit: 3
  template:
    metadata:
      annotations: {a: "1", b: "2"}
    spec:
      containers: [{name: api, image: api:1}]
`,
		},
		{
			name:    "a declared field the template does not set changes nothing",
			paths:   [][]string{{"spec", "minReadySeconds"}, {"spec", "strategy", "rollingUpdate"}},
			entries: []metav1.ManagedFieldsEntry{landlordAll, entry("someone", `{"f:spec":{"f:minReadySeconds":{},"f:strategy":{"f:rollingUpdate":{}}}}`)},
			want:    deployment,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := content(t, deployment)
			before := runtime.DeepCopyJSON(in)
			got := LeaveToOthers(in, tc.paths, tc.entries)
			if want := content(t, tc.want); !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("sent\n%v\nwant\n%v", got, want)
			}
			if !equality.Semantic.DeepEqual(in, before) {
				t.Errorf("the desired content was changed: %v", in)
			}
		})
	}
}

// The comparison with the live object ignores the fields others own, whatever their value, and
// still sees every other field.
func TestTheComparisonIgnoresOnlyTheFieldsOthersOwn(t *testing.T) {
	const want = `
metadata:
  annotations: {mesh.example.com/status: pending}
spec:
  replicas: 2
  revisionHistoryLimit: 3
`
	paths := [][]string{{"spec", "replicas"}, {"metadata", "annotations", "mesh.example.com/status"}}
	cases := []struct {
		name    string
		live    string
		matches bool
	}{
		{"a count the autoscaler changed matches", `{metadata: {annotations: {mesh.example.com/status: pending}}, spec: {replicas: 5, revisionHistoryLimit: 3}}`, true},
		{"an annotation the mesh changed matches", `{metadata: {annotations: {mesh.example.com/status: injected}}, spec: {replicas: 2, revisionHistoryLimit: 3}}`, true},
		{"an annotation the mesh removed matches", `{spec: {replicas: 2, revisionHistoryLimit: 3}}`, true},
		{"a changed field the template does not declare does not match", `{metadata: {annotations: {mesh.example.com/status: injected}}, spec: {replicas: 5, revisionHistoryLimit: 1}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired := content(t, want)
			before := runtime.DeepCopyJSON(desired)
			if got := Contains(content(t, tc.live), withoutPaths(desired, paths)); got != tc.matches {
				t.Errorf("Contains = %v, want %v", got, tc.matches)
			}
			if !equality.Semantic.DeepEqual(desired, before) {
				t.Errorf("the desired content was changed: %v", desired)
			}
		})
	}
}

// A declared field belongs to the objects its group, kind and name select; an empty group or
// name selects any.
func TestAFieldOwnedByOthersSelectsObjectsByGroupKindAndName(t *testing.T) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("apps/v1")
	obj.SetKind("Deployment")
	obj.SetName("api")
	replicas := []string{"spec", "replicas"}
	cases := []struct {
		name    string
		field   OthersField
		matches bool
	}{
		{"the group, kind and name of the object select it", OthersField{Group: "apps", Kind: "Deployment", Name: "api", Path: replicas}, true},
		{"an empty group selects the kind in any group", OthersField{Kind: "Deployment", Path: replicas}, true},
		{"another group does not select it", OthersField{Group: "extensions", Kind: "Deployment", Path: replicas}, false},
		{"another kind does not select it", OthersField{Group: "apps", Kind: "StatefulSet", Path: replicas}, false},
		{"another name does not select it", OthersField{Kind: "Deployment", Name: "worker", Path: replicas}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &Applier{OwnedByOthers: []OthersField{tc.field}}
			if got := len(a.othersPaths(obj)) == 1; got != tc.matches {
				t.Errorf("selected = %v, want %v", got, tc.matches)
			}
		})
	}
}
