package apply

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
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

// UnknownManager stands for the field managers of an object whose managed fields were stripped.
const UnknownManager = "unknown (managed fields stripped)"

// bodyOwnedBy reports whether a managed-fields entry owns anything outside metadata and status.
func bodyOwnedBy(entry metav1.ManagedFieldsEntry) bool {
	if entry.FieldsV1 == nil {
		return false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(entry.FieldsV1.GetRawBytes(), &top); err != nil {
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
// fields in the object's body that Landlord does not own. A manager that owns only fields
// Landlord owns too added nothing: two managers own a field together only while both set it to
// the same value (an installer applying exactly what the operator applies: kubectl apply
// --server-side of the release manifest, Flux, Helm), since a write that changes a field's
// value takes it from every other owner. Such a manager is not foreign, so an installer's
// apply of Landlord's own objects is neither a repair nor a write.
func ForeignManagers(entries []metav1.ManagedFieldsEntry) []string {
	var managers []string
	var ours *fieldpath.Set
	for _, e := range entries {
		if landlordsApply(e) || e.Subresource != "" || !bodyOwnedBy(e) {
			continue
		}
		if ours == nil {
			ours = ownedBy(entries, landlordsApply)
		}
		if theirs := fieldSet(e); theirs == nil || bodyPaths(theirs.Difference(ours)) {
			managers = append(managers, e.Manager)
		}
	}
	slices.Sort(managers)
	return slices.Compact(managers)
}

// landlordsApply is whether e is Landlord's server-side apply of the object: what Landlord sets
// now. Landlord's other writes (the repair's patch, an update) own what they changed then, which
// Landlord may have stopped setting since: a field such an entry alone owns is someone else's to
// Landlord, so that a field Landlord no longer sets is removed, not kept by its own old write.
func landlordsApply(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == FieldOwner && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// fieldSet is the set of fields a managed-fields entry owns, or nil when it cannot be read.
func fieldSet(e metav1.ManagedFieldsEntry) *fieldpath.Set {
	if e.FieldsV1 == nil {
		return &fieldpath.Set{}
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
		return nil
	}
	return set
}

// ownedBy is the union of the fields the entries that match own; unreadable entries own none,
// so what another manager owns beside them counts as foreign.
func ownedBy(entries []metav1.ManagedFieldsEntry, match func(metav1.ManagedFieldsEntry) bool) *fieldpath.Set {
	union := &fieldpath.Set{}
	for _, e := range entries {
		if match(e) {
			if set := fieldSet(e); set != nil {
				union = union.Union(set)
			}
		}
	}
	return union
}

// bodyPaths is whether set holds a field outside metadata and status.
func bodyPaths(set *fieldpath.Set) bool {
	body := false
	set.Iterate(func(p fieldpath.Path) {
		if len(p) > 0 && p[0].FieldName != nil && *p[0].FieldName != "metadata" && *p[0].FieldName != "status" {
			body = true
		}
	})
	return body
}

// OtherWriters lists, as ForeignManagers does, the field managers other than Landlord that own
// fields of obj's body, wherever obj was read: from the managed fields the API server sent with
// it, or, from the operator's cache, which drops them, from ForeignFieldsAnnotation. An object
// read from the API server without any managed fields had them stripped: who wrote it is
// unknown, and it is taken for someone else's.
func OtherWriters(obj metav1.Object) []string {
	entries := obj.GetManagedFields()
	if len(entries) > 0 && !slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return e.Operation != "" }) {
		// The cache's stand-in: the API server names the operation of every entry it records.
		if others := obj.GetAnnotations()[ForeignFieldsAnnotation]; others != "" {
			return strings.Split(others, ",")
		}
		return nil
	}
	if len(entries) == 0 {
		return []string{UnknownManager}
	}
	return ForeignManagers(entries)
}

// MarkForeignFields sets ForeignFieldsAnnotation from obj's managed fields, or removes it when
// no one else owns a field of the body (whatever value the annotation had on the server: only
// the managed fields decide). Call it before the managed fields are dropped.
func MarkForeignFields(obj metav1.Object) {
	managers := ForeignManagers(obj.GetManagedFields())
	if len(obj.GetManagedFields()) == 0 {
		// Every write records its manager, so an object without any had them stripped
		// (managedFields: [{}]): who added what is unknown, and treated as someone else's.
		managers = []string{UnknownManager}
	}
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

// HeldByOthers reports whether a field manager other than Landlord's own apply owns any of the
// top-level fields named, or a field within one: unlike ForeignManagers, a manager that wrote
// the same value as Landlord, and so owns it beside Landlord, counts. It is for deciding to
// remove an object Landlord shares a name with other writers on. Without entries (stripped, or
// read from the operator's cache, which drops them) who holds the fields is unknown, and they
// are taken for held.
func HeldByOthers(entries []metav1.ManagedFieldsEntry, fields ...string) bool {
	if len(entries) == 0 || !slices.ContainsFunc(entries, func(e metav1.ManagedFieldsEntry) bool { return e.Operation != "" }) {
		return true
	}
	others := ownedBy(entries, func(e metav1.ManagedFieldsEntry) bool { return !landlordsApply(e) })
	for _, f := range fields {
		if ownsWithin(others, fieldpath.MakePathOrDie(f)) {
			return true
		}
	}
	return false
}
