package operator

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// internMetadata stores the strings that repeat across a tenant's objects, and across tenants,
// once: a cache of thousands of tenants holds each namespace name, label and owner reference
// about fifteen times. Equal label maps are shared: most of a tenant's objects carry the same
// two labels, and a small map costs about 370 bytes. Unstructured objects are left as they are:
// their metadata is a map that rewriting would copy.
//
// Sharing is safe because nothing writes to a cached object: reads get a deep copy, and the
// reads that skip the copy only read.
func internMetadata(obj any, m metav1.Object, labels *mapInterner) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return
	}
	if ns := m.GetNamespace(); ns != "" {
		// The names of a tenant's objects are the same in every tenant namespace.
		m.SetName(intern(m.GetName()))
		m.SetNamespace(intern(ns))
	}
	m.SetLabels(labels.intern(m.GetLabels()))
	if annotations := m.GetAnnotations(); len(annotations) > 0 {
		out := make(map[string]string, len(annotations))
		for k, v := range annotations {
			// Values are mostly digests, unique to the object; keys repeat.
			out[intern(k)] = v
		}
		m.SetAnnotations(out)
	}
	refs := m.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion = intern(refs[i].APIVersion)
		refs[i].Kind = intern(refs[i].Kind)
		refs[i].Name = intern(refs[i].Name)
		refs[i].UID = types.UID(intern(string(refs[i].UID)))
	}
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// mapInterner hands out one map for all equal maps it is given. It remembers the maps of two
// generations of generationAge each: a map not asked for during a whole generation (the labels
// of a deleted tenant) is forgotten, so the table follows the live objects and does not grow
// with time. Forgetting only ends the sharing of that map; objects holding it keep it. A
// generation is a span of time, not a count, because a restart lists every kind in turn: a
// tenant's labels are asked for once per kind, all within the restart.
type mapInterner struct {
	mu                sync.Mutex
	current, previous map[string]map[string]string
	since             time.Time
	// now is time.Now, or a test's clock.
	now func() time.Time
}

const generationAge = 10 * time.Minute

func (t *mapInterner) intern(in map[string]string) map[string]string {
	if len(in) == 0 {
		return in
	}
	key := canonical(in)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	if t.current == nil || now().Sub(t.since) >= generationAge {
		t.previous, t.current, t.since = t.current, map[string]map[string]string{}, now()
	}
	if m, ok := t.current[key]; ok {
		return m
	}
	m, ok := t.previous[key]
	if !ok {
		m = make(map[string]string, len(in))
		for k, v := range in {
			m[intern(k)] = intern(v)
		}
	}
	t.current[key] = m
	return m
}

// canonical is a string equal for equal maps and different for different ones.
func canonical(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		// Label keys and values cannot hold a NUL byte.
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String()
}
