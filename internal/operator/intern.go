package operator

import (
	"encoding/binary"
	"hash"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"time"
	"unique"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/usage"
)

// internMetadata stores the strings that repeat across a tenant's objects, and across tenants,
// once: a cache of thousands of tenants holds each namespace name, label and owner reference
// about fifteen times. Equal label maps, annotation maps and owner reference lists are shared:
// most of a tenant's objects carry the same labels, and a small map costs about 370 bytes.
// Unstructured objects are left as they are: their metadata is a map that rewriting would copy.
//
// Sharing is safe because nothing writes to a cached object: reads get a deep copy, and the
// reads that skip the copy only read.
func internMetadata(obj any, m metav1.Object, shared *sharing) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return
	}
	if t, ok := obj.(*tenancyv1alpha1.Tenant); ok {
		internTenant(t)
	}
	if ns := m.GetNamespace(); ns != "" {
		// The names of a tenant's objects are the same in every tenant namespace.
		m.SetName(intern(m.GetName()))
		m.SetNamespace(intern(ns))
	}
	m.SetLabels(shared.labels.intern(m.GetLabels()))
	m.SetOwnerReferences(shared.owners.intern(m.GetOwnerReferences()))
	annotations := m.GetAnnotations()
	if len(annotations) == 0 {
		return
	}
	_, digest := annotations[apply.HashAnnotation]
	_, sampled := annotations[usage.CachedAnnotation]
	if !digest && !sampled {
		// Without a digest of the object, annotations repeat across tenants: a shared
		// secret's copies all name the same source at the same hash, and every healthy
		// ConfigMap a component renders has the same health.
		m.SetAnnotations(shared.annotations.intern(annotations))
		return
	}
	out := make(map[string]string, len(annotations))
	for k, v := range annotations {
		// Values are mostly digests or a tenant's usage, unique to the object; keys repeat.
		out[intern(k)] = v
	}
	m.SetAnnotations(out)
}

// internTenant stores once the strings of a tenant's spec and status that repeat across tenants:
// condition types, statuses and reasons, component names, versions and inventories, database
// engines and servers, the shard. Messages, names and logins are left: they are the tenant's own.
func internTenant(t *tenancyv1alpha1.Tenant) {
	for i := range t.Spec.Components {
		c := &t.Spec.Components[i]
		c.Name, c.Version = intern(c.Name), intern(c.Version)
	}
	st := &t.Status
	st.Namespace, st.Shard = intern(st.Namespace), intern(st.Shard)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Reason = intern(c.Type), intern(c.Reason)
		c.Status = metav1.ConditionStatus(intern(string(c.Status)))
	}
	for i := range st.Components {
		c := &st.Components[i]
		c.Name, c.Version, c.Rollout = intern(c.Name), intern(c.Version), intern(c.Rollout)
		for j := range c.Inventory {
			c.Inventory[j] = intern(c.Inventory[j])
		}
	}
	for i := range st.Databases {
		d := &st.Databases[i]
		d.Engine = tenancyv1alpha1.DatabaseEngine(intern(string(d.Engine)))
		d.Name, d.Server = intern(d.Name), intern(d.Server)
	}
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// sharing is what the cache's objects share: label maps, annotation maps, owner reference lists.
type sharing struct {
	labels, annotations mapInterner
	owners              refsInterner
}

// newSharing returns empty tables. Annotations are remembered for shorter generations than labels:
// a component object's health annotation changes with its replica counts, and during a rollout
// of thousands of tenants each past value would otherwise be held for up to 20 minutes.
func newSharing() *sharing {
	s := &sharing{}
	s.annotations.age = annotationGenerationAge
	return s
}

const annotationGenerationAge = time.Minute

// sharer hands out one value for all equal values it is given. Values are found by a 64-bit
// hash and confirmed equal, so a collision only costs the sharing of one value. Kept by the
// canonical string of their content, each distinct value cost as much again in the table as in
// the objects. It remembers the values of two generations of generationAge each: a value not
// asked for during a whole generation (the labels of a deleted tenant) is forgotten, so the
// table follows the live objects and does not grow with time. Forgetting only ends the sharing
// of that value; objects holding it keep it. A generation is a span of time, not a count,
// because a restart lists every kind in turn: a tenant's labels are asked for once per kind,
// all within the restart.
type sharer[T any] struct {
	mu                sync.Mutex
	current, previous map[uint64]T
	since             time.Time
	// age is how long a generation lasts: generationAge when zero.
	age time.Duration
	// now is time.Now, or a test's clock.
	now func() time.Time
}

const generationAge = 10 * time.Minute

// share returns the value remembered under key if equal says it is the one asked for, or
// remembers and returns build().
func (t *sharer[T]) share(key uint64, equal func(T) bool, build func() T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now
	if t.now != nil {
		now = t.now
	}
	age := t.age
	if age == 0 {
		age = generationAge
	}
	if t.current == nil || now().Sub(t.since) >= age {
		t.previous, t.current, t.since = t.current, map[uint64]T{}, now()
	}
	if v, ok := t.current[key]; ok {
		if equal(v) {
			return v
		}
		// Another value with the same hash: this one is not shared.
		return build()
	}
	v, ok := t.previous[key]
	if !ok || !equal(v) {
		v = build()
	}
	t.current[key] = v
	return v
}

// mapInterner shares equal string maps: labels, and annotations that do not digest their
// object.
type mapInterner struct{ sharer[map[string]string] }

func (t *mapInterner) intern(in map[string]string) map[string]string {
	if len(in) == 0 {
		return in
	}
	return t.share(mapKey(in), func(m map[string]string) bool { return maps.Equal(m, in) }, func() map[string]string {
		m := make(map[string]string, len(in))
		for k, v := range in {
			m[intern(k)] = intern(v)
		}
		return m
	})
}

// mapKey hashes a map's entries, in any order: the sum of its entries' hashes.
func mapKey(m map[string]string) uint64 {
	var sum uint64
	h := fnv.New64a()
	for k, v := range m {
		h.Reset()
		writeField(h, k)
		writeField(h, v)
		sum += h.Sum64()
	}
	return sum
}

// writeField writes s with its length, so that fields written one after the other hash apart
// however their bytes split.
func writeField(h hash.Hash64, s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	_, _ = h.Write(n[:])
	_, _ = h.Write([]byte(s))
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
	h := fnv.New64a()
	flag := func(p *bool) string {
		switch {
		case p == nil:
			return "-"
		case *p:
			return "t"
		}
		return "f"
	}
	for _, r := range in {
		for _, s := range []string{r.APIVersion, r.Kind, r.Name, string(r.UID), flag(r.Controller), flag(r.BlockOwnerDeletion)} {
			writeField(h, s)
		}
	}
	equal := func(refs []metav1.OwnerReference) bool {
		return slices.EqualFunc(refs, in, func(a, b metav1.OwnerReference) bool { return equality.Semantic.DeepEqual(a, b) })
	}
	return t.share(h.Sum64(), equal, func() []metav1.OwnerReference {
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
