package apply

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// OthersField is a field of some of the objects an Applier writes that another controller takes
// over once the object exists: a Deployment's spec.replicas under a HorizontalPodAutoscaler.
// Landlord gives it its first value and keeps it while no other field manager has written it;
// from then on Landlord's writes leave it out, and the comparison with the live object ignores
// it, so a value someone else set is neither put back nor counted as drift.
//
// Leaving out is decided by the object's managed fields, not by the value: server-side apply
// deletes a field Landlord stops sending when no other manager owns it, so a field only Landlord
// owns is always sent, with Landlord's value.
type OthersField struct {
	// Group is the objects' API group; "" matches the kind in any group.
	Group string
	// Kind is the objects' kind.
	Kind string
	// Name is the one object's name; "" matches every object of the kind.
	Name string
	// Path is the field names from the object's root to the field (spec, replicas). A field
	// holding an object covers every field in it.
	Path []string
}

// matches reports whether the field is one of obj's.
func (f OthersField) matches(obj client.Object) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return gvk.Kind == f.Kind && (f.Group == "" || f.Group == gvk.Group) && (f.Name == "" || f.Name == obj.GetName())
}

// othersPaths are the paths of the fields others own of desired.
func (a *Applier) othersPaths(desired client.Object) [][]string {
	var paths [][]string
	for _, f := range a.OwnedByOthers {
		if len(f.Path) > 0 && f.matches(desired) {
			paths = append(paths, f.Path)
		}
	}
	return paths
}

// withoutPaths is content without the fields at paths, and the maps that held nothing else,
// for comparing with the live object: what others own is theirs to change, remove included.
// content is not changed; the result shares what is not on a path with it.
func withoutPaths(content map[string]any, paths [][]string) map[string]any {
	for _, p := range paths {
		content = without(content, p)
	}
	return content
}

func without(m map[string]any, path []string) map[string]any {
	v, ok := m[path[0]]
	if !ok {
		return m
	}
	out := maps.Clone(m)
	if len(path) == 1 {
		delete(out, path[0])
		return out
	}
	child, ok := v.(map[string]any)
	if !ok {
		return m
	}
	if rest := without(child, path[1:]); len(rest) > 0 {
		out[path[0]] = rest
	} else {
		delete(out, path[0])
	}
	return out
}

// LeaveToOthers is content as Landlord sends it to an object that exists with the managed
// fields given: every field under paths that a field manager other than Landlord's apply owns
// (itself or a field within it) is left out; one only Landlord owns stays, since leaving it out
// would delete it. Without managed fields (stripped from the object), who owns what is unknown,
// and everything under paths is left out: the API server then counts the fields already there
// as another manager's, so none is deleted. Maps emptied by what is left out go too. content is
// not changed.
//
// A list is sent or left out whole: its elements are not addressed. It is left out only while
// Landlord's apply owns no field of any element, since the API server would delete those
// fields (a container's securityContext, its limits) once Landlord stopped sending them; while
// Landlord owns one, the list is sent, and another manager's change to it is put back.
func LeaveToOthers(content map[string]any, paths [][]string, entries []metav1.ManagedFieldsEntry) map[string]any {
	out := runtime.DeepCopyJSON(content)
	others := ownedBy(entries, func(e metav1.ManagedFieldsEntry) bool { return !landlordsApply(e) })
	mine := ownedBy(entries, landlordsApply)
	unknown := len(entries) == 0
	leave := func(at fieldpath.Path, list bool) bool {
		if unknown {
			return true
		}
		return ownsWithin(others, at) && !(list && ownsWithin(mine, at))
	}
	for _, p := range paths {
		leaveOut(out, p, nil, leave)
	}
	return out
}

// leaveOut removes from m, at the path rest below the field path at, every leaf (a value that
// is not a map with fields) that leave says goes, and the maps it empties, and reports whether m
// is empty after that.
func leaveOut(m map[string]any, rest []string, at fieldpath.Path, leave func(at fieldpath.Path, list bool) bool) bool {
	name := rest[0]
	v, ok := m[name]
	if !ok {
		return false
	}
	here := append(at.Copy(), fieldpath.PathElement{FieldName: &name})
	child, isMap := v.(map[string]any)
	switch {
	case len(rest) > 1:
		if isMap && leaveOut(child, rest[1:], here, leave) {
			delete(m, name)
		}
	case isMap && len(child) > 0:
		for k := range child {
			leaveOut(child, []string{k}, here, leave)
		}
		if len(child) == 0 {
			delete(m, name)
		}
	default:
		if _, isList := v.([]any); leave(here, isList) {
			delete(m, name)
		}
	}
	return len(m) == 0
}

// ownsWithin reports whether set holds the field at path, or any field within it.
func ownsWithin(set *fieldpath.Set, path fieldpath.Path) bool {
	if set.Has(path) {
		return true
	}
	within := set
	for _, pe := range path {
		within = within.WithPrefix(pe)
	}
	return !within.Empty()
}
