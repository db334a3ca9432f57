package apply

import (
	"encoding/json"
	"hash/fnv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Memo remembers which live objects were found to carry everything desired of them, and at
// which resourceVersion. Comparing a desired object with the live one means converting both to
// maps; at thousands of tenants that conversion was most of a no-op reconcile's CPU. A live
// object whose resourceVersion has not moved has not changed, so when the desired object has
// not changed either (same fingerprint), the earlier comparison still holds.
//
// Entries are grouped by tenant namespace, so that Forget drops a tenant's in one step.
type Memo struct {
	mu     sync.Mutex
	groups map[string]map[memoKey]memoEntry
}

type memoKey struct {
	gvk  schema.GroupVersionKind
	name string
}

type memoEntry struct {
	print           Fingerprint
	resourceVersion string
}

// Fingerprint is a digest of what desired objects are built from, or of one desired object.
type Fingerprint [16]byte

// FingerprintOf digests v's JSON encoding.
func FingerprintOf(v any) (Fingerprint, error) {
	h := fnv.New128a()
	var f Fingerprint
	if err := json.NewEncoder(h).Encode(v); err != nil {
		return f, err
	}
	h.Sum(f[:0])
	return f, nil
}

// NewMemo returns an empty memo.
func NewMemo() *Memo { return &Memo{groups: map[string]map[memoKey]memoEntry{}} }

// fingerprintOf encodes built-in kinds as protobuf, several times cheaper than JSON, and
// rendered objects as JSON. The kind is part of the memo's key, not of the fingerprint.
func fingerprintOf(obj client.Object) (Fingerprint, error) {
	m, ok := obj.(interface{ Marshal() ([]byte, error) })
	if !ok {
		return FingerprintOf(obj)
	}
	raw, err := m.Marshal()
	if err != nil {
		return Fingerprint{}, err
	}
	var f Fingerprint
	h := fnv.New128a()
	_, _ = h.Write(raw)
	h.Sum(f[:0])
	return f, nil
}

// group is the namespace of a namespaced object, and the name of a cluster-scoped one: a
// tenant's Namespace is grouped with the objects inside it.
func group(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns
	}
	return obj.GetName()
}

func keyOf(obj client.Object) memoKey {
	return memoKey{gvk: obj.GetObjectKind().GroupVersionKind(), name: obj.GetName()}
}

func (m *Memo) matched(desired client.Object, print Fingerprint, resourceVersion string) bool {
	if m == nil || resourceVersion == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.groups[group(desired)][keyOf(desired)]
	return ok && e.print == print && e.resourceVersion == resourceVersion
}

func (m *Memo) record(desired client.Object, print Fingerprint, resourceVersion string) {
	if m == nil || resourceVersion == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group(desired)]
	if g == nil {
		g = map[memoKey]memoEntry{}
		m.groups[group(desired)] = g
	}
	g[keyOf(desired)] = memoEntry{print: print, resourceVersion: resourceVersion}
}

// Forget drops what is remembered about a namespace, its objects and the Namespace itself.
func (m *Memo) Forget(namespace string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.groups, namespace)
}

// Len is the number of objects remembered.
func (m *Memo) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, g := range m.groups {
		n += len(g)
	}
	return n
}

// ForgetObject drops what is remembered about one object, under any version of its kind: an
// object deleted from a namespace that stays. namespace is "" for a cluster-scoped object.
func (m *Memo) ForgetObject(gk schema.GroupKind, namespace, name string) {
	if m == nil {
		return
	}
	g := namespace
	if g == "" {
		g = name
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	entries := m.groups[g]
	for k := range entries {
		if k.name == name && k.gvk.GroupKind() == gk {
			delete(entries, k)
		}
	}
	// An emptied group goes too, so a namespace whose every object went leaves no map behind.
	if len(entries) == 0 {
		delete(m.groups, g)
	}
}
