package apply

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

// A manager is foreign when it owns a field of the body Landlord does not own: it added
// something beside Landlord's fields, or took one of Landlord's over with another value. One
// that owns only fields Landlord owns too (an installer applying what the operator applies) set
// them to Landlord's values, and is not.
func TestForeignManagersOwnWhatLandlordDoesNot(t *testing.T) {
	landlord := entry(FieldOwner, `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{}}},"f:spec":{"f:failurePolicy":{},"f:validations":{}}}`)
	for _, tc := range []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    []string
	}{
		{"an installer that applied Landlord's own fields is not foreign",
			[]metav1.ManagedFieldsEntry{landlord, entry("kubectl", `{"f:spec":{"f:failurePolicy":{},"f:validations":{}}}`)}, nil},
		{"an installer that applied some of them and labels is not foreign",
			[]metav1.ManagedFieldsEntry{landlord, entry("kustomize-controller", `{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:failurePolicy":{}}}`)}, nil},
		{"a manager that added a field beside Landlord's is foreign",
			[]metav1.ManagedFieldsEntry{landlord, entry("mallory", `{"f:spec":{"f:failurePolicy":{},"f:matchConditions":{}}}`)}, []string{"mallory"}},
		{"every manager of a body Landlord owns nothing of is foreign",
			[]metav1.ManagedFieldsEntry{entry("kubectl", `{"f:spec":{"f:failurePolicy":{}}}`), entry("helm", `{"f:spec":{"f:validations":{}}}`)}, []string{"helm", "kubectl"}},
		{"a manager of metadata alone is not foreign",
			[]metav1.ManagedFieldsEntry{entry("kubectl-label", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)}, nil},
		{"an unreadable entry is foreign",
			[]metav1.ManagedFieldsEntry{landlord, entry("garbled", `{"f:spec":`)}, []string{"garbled"}},
		{"a status writer is not foreign",
			[]metav1.ManagedFieldsEntry{landlord, func() metav1.ManagedFieldsEntry {
				e := entry("kube-apiserver", `{"f:status":{"f:typeChecking":{}}}`)
				e.Subresource = "status"
				return e
			}()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ForeignManagers(tc.entries); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("ForeignManagers = %v, want %v", got, tc.want)
			}
		})
	}
}

// Who else wrote an object is answered alike whether it was read from the API server, with its
// managed fields, or from the operator's cache, which keeps only ForeignFieldsAnnotation.
func TestOtherWritersAreReadFromTheManagedFieldsOrTheCachesRecord(t *testing.T) {
	landlord := entry(FieldOwner, `{"f:data":{"f:token":{}},"f:type":{}}`)
	eso := metav1.ManagedFieldsEntry{Manager: "external-secrets", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:token":{}},"f:type":{}}`)}
	cached := []metav1.ManagedFieldsEntry{{Manager: "landlord-cache"}}
	for _, tc := range []struct {
		name        string
		fields      []metav1.ManagedFieldsEntry
		annotations map[string]string
		want        []string
	}{
		{"an object only Landlord applied was written by no one else", []metav1.ManagedFieldsEntry{landlord}, nil, nil},
		{"an object another tool created was written by that tool", []metav1.ManagedFieldsEntry{eso}, nil, []string{"external-secrets"}},
		{"an object read from the API server with an annotation claiming others is judged by its managed fields",
			[]metav1.ManagedFieldsEntry{landlord}, map[string]string{ForeignFieldsAnnotation: "mallory"}, nil},
		{"an object from the cache names the writers the cache recorded", cached, map[string]string{ForeignFieldsAnnotation: "external-secrets"}, []string{"external-secrets"}},
		{"an object from the cache without a record was written by Landlord alone", cached, nil, nil},
		{"an object whose managed fields were stripped was written by someone unknown", nil, nil, []string{UnknownManager}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{ManagedFields: tc.fields, Annotations: tc.annotations}
			if got := OtherWriters(obj); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("OtherWriters = %v, want %v", got, tc.want)
			}
		})
	}
}

// Before Landlord removes an object it shares a name with other writers on, any other manager
// of the fields that matter holds it, one that wrote Landlord's very values beside it included;
// not knowing who wrote it holds it too.
func TestHeldByOthersCountsEveryOtherOwnerOfTheFields(t *testing.T) {
	landlords := entry(FieldOwner, `{"f:data":{"f:token":{}},"f:metadata":{"f:labels":{"f:a":{}}}}`)
	cases := []struct {
		name    string
		entries []metav1.ManagedFieldsEntry
		want    bool
	}{
		{"a secret only Landlord's apply wrote is not held", []metav1.ManagedFieldsEntry{landlords}, false},
		{"a tool that applied the same data beside Landlord holds it", []metav1.ManagedFieldsEntry{landlords, entry("kustomize-controller", `{"f:data":{"f:token":{}}}`)}, true},
		{"a person's edit of the data holds it", []metav1.ManagedFieldsEntry{landlords, {Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:token":{}}}`)}}, true},
		{"a tool that only labelled it does not hold its data", []metav1.ManagedFieldsEntry{landlords, entry("labeller", `{"f:metadata":{"f:labels":{"f:b":{}}}}`)}, false},
		{"a patch of Landlord's own name (not its apply) holds it", []metav1.ManagedFieldsEntry{landlords, {Manager: FieldOwner, Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:type":{}}`)}}, true},
		{"stripped managed fields hold it: who wrote it is unknown", nil, true},
		{"the cache's stand-in entries hold it: the operator's cache drops who wrote what", []metav1.ManagedFieldsEntry{{Manager: FieldOwner}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := HeldByOthers(tc.entries, "data", "stringData", "type"); got != tc.want {
				t.Errorf("HeldByOthers = %v, want %v", got, tc.want)
			}
		})
	}
}
