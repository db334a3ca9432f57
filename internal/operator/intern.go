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
// about fifteen times. Equal label maps and owner reference lists are shared: most of a
// tenant's objects carry the same labels, and a small map costs about 370 bytes. Unstructured objects are left as they are:
// their metadata is a map that rewriting would copy.
//
// Sharing is safe because nothing writes to a cached object: reads get a deep copy, and the
// reads that skip the copy only read.
func internMetadata(obj any, m metav1.Object, labels *mapInterner, owners *refsInterner) {
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
	m.SetOwnerReferences(owners.intern(m.GetOwnerReferences()))
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// sharer hands out one value for all equal values it is given (equal by a canonical key). It
// remembers the values of two generations of generationAge each: a value not asked for during a
// whole generation (the labels of a deleted tenant) is forgotten, so the table follows the live
// objects and does not grow with time. Forgetting only ends the sharing of that value; objects
// holding it keep it. A generation is a span of time, not a count, because a restart lists
// every kind in turn: a tenant's labels are asked for once per kind, all within the restart.
type sharer[T any] struct {
	mu                sync.Mutex
	current, previous map[string]T
	since             time.Time
	// now is time.Now, or a test's clock.
	now func() time.Time
}

const generationAge = 10 * time.Minute

// share returns the value remembered under key, or remembers and returns build().
func (t *sharer[T]) share(key string, build func() T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	if t.current == nil || now().Sub(t.since) >= generationAge {
		t.previous, t.current, t.since = t.current, map[string]T{}, now()
	}
	if v, ok := t.current[key]; ok {
		return v
	}
	v, ok := t.previous[key]
	if !ok {
		v = build()
	}
	t.current[key] = v
	return v
}

// mapInterner shares equal label maps.
type mapInterner struct{ sharer[map[string]string] }

func (t *mapInterner) intern(in map[string]string) map[string]string {
	if len(in) == 0 {
		return in
	}
	return t.share(canonical(in), func() map[string]string {
		m := make(map[string]string, len(in))
		for k, v := range in {
			m[intern(k)] = intern(v)
		}
		return m
	})
}

// refsInterner shares equal owner reference lists: every object a tenant owns names the tenant
// alone, and a list of one reference, with its two flags, took about 100 bytes per object.
type refsInterner struct {
	sharer[[]metav1.OwnerReference]
}

func (t *refsInterner) intern(in []metav1.OwnerReference) []metav1.OwnerReference {
	if len(in) == 0 {
		return in
	}
	var b strings.Builder
	flag := func(p *bool) byte {
		switch {
		case p == nil:
			return '-'
		case *p:
			return 't'
		}
		return 'f'
	}
	for _, r := range in {
		// Names, kinds and UIDs cannot hold a NUL byte.
		for _, s := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID)} {
			b.WriteString(s)
			b.WriteByte(0)
		}
		b.WriteByte(flag(r.Controller))
		b.WriteByte(flag(r.BlockOwnerDeletion))
	}
	return t.share(b.String(), func() []metav1.OwnerReference {
		out := slices.Clone(in)
		for i := range out {
			out[i].APIVersion = intern(out[i].APIVersion)
			out[i].Kind = intern(out[i].Kind)
			out[i].Name = intern(out[i].Name)
			out[i].UID = types.UID(intern(string(out[i].UID)))
		}
		return out
	})
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
