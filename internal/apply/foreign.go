package apply

import (
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ForeignFieldsAnnotation is set in the operator's cache, never on the server, on an object
// whose body (anything but metadata and status) has fields owned by a field manager other than
// Landlord: it lists those managers. The cache drops managed fields to save memory, so the
// question "did someone else add to this object?" is answered when the object enters the cache
// and kept as this one annotation.
//
// A comparison of desired against live sees every field Landlord sets, but not fields someone
// else added beside them: an objectSelector on a policy binding, an ingress rule on the
// default-deny NetworkPolicy, a scopeSelector on the quota. Any of them can switch isolation
// off while every field Landlord set is still in place.
const ForeignFieldsAnnotation = "tenancy.landlord.dev/foreign-fields"

// bodyOwnedBy reports whether a managed-fields entry owns anything outside metadata and status.
func bodyOwnedBy(entry metav1.ManagedFieldsEntry) bool {
	if entry.FieldsV1 == nil {
		return false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(entry.FieldsV1.Raw, &top); err != nil {
		// Unreadable ownership is treated as foreign: a repair is a write, a missed one a hole.
		return true
	}
	for k := range top {
		if k != "f:metadata" && k != "f:status" && k != "." {
			return true
		}
	}
	return false
}

// ForeignManagers lists, sorted and once each, the field managers other than Landlord that own
// fields in the object's body.
func ForeignManagers(entries []metav1.ManagedFieldsEntry) []string {
	var managers []string
	for _, e := range entries {
		if e.Manager != FieldOwner && e.Subresource == "" && bodyOwnedBy(e) {
			managers = append(managers, e.Manager)
		}
	}
	slices.Sort(managers)
	return slices.Compact(managers)
}

// MarkForeignFields sets ForeignFieldsAnnotation from obj's managed fields, or removes it when
// no one else owns a field of the body (whatever value the annotation had on the server: only
// the managed fields decide). Call it before the managed fields are dropped.
func MarkForeignFields(obj metav1.Object) {
	managers := ForeignManagers(obj.GetManagedFields())
	annotations := obj.GetAnnotations()
	if len(managers) == 0 {
		if _, ok := annotations[ForeignFieldsAnnotation]; ok {
			delete(annotations, ForeignFieldsAnnotation)
			obj.SetAnnotations(annotations)
		}
		return
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ForeignFieldsAnnotation] = strings.Join(managers, ",")
	obj.SetAnnotations(annotations)
}
