package apply

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Memo remembers which live objects were found to carry everything desired of them: at which
// resourceVersion, and with which content digest (KeepInCache). Comparing a desired
// object with the live one means converting both to maps, and, for an object the cache keeps
// without its body, reading it from the API server. A live object whose resourceVersion has not
// moved has not changed; one whose resourceVersion moved but whose content digest did not had
// only its status written. Either way, when the desired object has not changed (same
// fingerprint), the earlier comparison still holds.
//
// Entries are grouped by tenant namespace, so that Forget drops a tenant's in one step. A group
// is a slice searched in order, not a map: a tenant has about fifteen objects, and a map of
// fifteen entries takes three times the memory (at 10,000 tenants, about 50 MB more).
type Memo struct {
	mu     sync.Mutex
	groups map[string][]memoEntry
}

// memoKey is a 64-bit hash of an object's group, kind and name, unique within its group (a
// tenant's fifteen or so objects) but for a chance of about 1 in 10^17. Kept whole (its kind
// and name as strings), a key took 64 bytes of the entry's 128: 10 MB at 10,000 tenants. The
// version is left out: an object desired under another version has another fingerprint, so it
// is compared in full all the same.
type memoKey uint64

func memoKeyOf(gk schema.GroupKind, name string) memoKey {
	h := fnv.New64a()
	for _, s := range []string{gk.Group, "/", gk.Kind, "/", name} {
		_, _ = h.Write([]byte(s))
	}
	return memoKey(h.Sum64())
}

type memoEntry struct {
	key             memoKey
	fingerprint     Fingerprint
	resourceVersion string
	// digest is the live object's content digest at that resourceVersion, "" when Landlord
	// wrote it and the cache has not shown it yet.
	digest string
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
func NewMemo() *Memo { return &Memo{groups: map[string][]memoEntry{}} }

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
	return memoKeyOf(obj.GetObjectKind().GroupVersionKind().GroupKind(), obj.GetName())
}

// memoState is what the memo knows of a live object.
type memoState int

const (
	// memoUnknown: never compared (a new object, or a restarted operator).
	memoUnknown memoState = iota
	// memoSame: unchanged since it was found to match (or written), and desired as it was then.
	memoSame
	// memoMoved: the live object's content changed since it was found to match or written.
	memoMoved
	// memoWanted: the live object is as it was, but the desired one changed.
	memoWanted
)

// lookup says what the memo knows of the live object, given its resourceVersion and content
// digest ("" when the cache sets none). A match at a new resourceVersion (a status write) is
// remembered at that one.
func (m *Memo) lookup(desired client.Object, fingerprint Fingerprint, resourceVersion, digest string) memoState {
	if m == nil || resourceVersion == "" {
		return memoUnknown
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group(desired)]
	i := find(g, keyOf(desired))
	if i < 0 {
		return memoUnknown
	}
	e := &g[i]
	switch {
	case e.resourceVersion == resourceVersion:
		if e.digest == "" && digest != "" {
			// Landlord's own write, now in the cache: its digest stands for it from here on.
			e.digest = digest
		}
	case e.digest != "" && e.digest == digest:
		e.resourceVersion = resourceVersion
	default:
		return memoMoved
	}
	if e.fingerprint != fingerprint {
		return memoWanted
	}
	return memoSame
}

// matched reports whether the live object is known to carry the desired one.
func (m *Memo) matched(desired client.Object, fingerprint Fingerprint, resourceVersion, digest string) bool {
	return m.lookup(desired, fingerprint, resourceVersion, digest) == memoSame
}

// record remembers that the live object, at resourceVersion and with digest ("" for the
// answer to a write, which the cache has not digested yet), carries the desired one.
func (m *Memo) record(desired client.Object, fingerprint Fingerprint, resourceVersion, digest string) {
	if m == nil || resourceVersion == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := keyOf(desired)
	e := memoEntry{key: key, fingerprint: fingerprint, resourceVersion: resourceVersion, digest: digest}
	g := m.groups[group(desired)]
	if i := find(g, key); i >= 0 {
		g[i] = e
		return
	}
	m.groups[group(desired)] = append(g, e)
}

func find(g []memoEntry, key memoKey) int {
	for i := range g {
		if g[i].key == key {
			return i
		}
	}
	return -1
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
	key := memoKeyOf(gk, name)
	entries := slices.DeleteFunc(m.groups[g], func(e memoEntry) bool { return e.key == key })
	// An emptied group goes too, so a namespace whose every object went leaves nothing behind.
	if len(entries) == 0 {
		delete(m.groups, g)
		return
	}
	m.groups[g] = entries
}
