package tenant

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// ownWrites remembers, per tenant, the resourceVersion the API server gave this reconciler's
// last write of the tenant (its status, its finalizer, its shard), until the cache shows it.
// The cache sees a write a moment after it is made, and a reconcile that read the tenant from
// before then works from an older status than the one just written: it provisions a database
// "again" (a second Provisioned event), takes a component's new version for its first apply (no
// ComponentApplied event) and writes the older view back over the newer one. Such a reconcile
// waits for the cache instead, at the cost of a map look-up and no request.
//
// An entry lives from a write until the cache shows it, a few milliseconds: a fleet at rest
// keeps none.
type ownWrites struct {
	mu     sync.Mutex
	byName map[string]ownWrite
}

type ownWrite struct {
	uid types.UID
	rv  string
}

// record remembers t as the API server returned it from a write.
func (w *ownWrites) record(t *tenancyv1alpha1.Tenant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byName == nil {
		w.byName = map[string]ownWrite{}
	}
	w.byName[t.Name] = ownWrite{uid: t.UID, rv: t.ResourceVersion}
}

// behind reports whether t, as the cache holds it, is older than this reconciler's last write
// of it; once it is not, the write is forgotten. A tenant re-created under the same name (another
// UID), or a resourceVersion that is not a number (an API server that does not promise to
// order them), is never held back.
func (w *ownWrites) behind(t *tenancyv1alpha1.Tenant) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.byName[t.Name]
	if !ok {
		return false
	}
	if last.uid == t.UID {
		if cmp, err := resourceversion.CompareResourceVersion(t.ResourceVersion, last.rv); err == nil && cmp < 0 {
			return true
		}
	}
	delete(w.byName, t.Name)
	return false
}

func (w *ownWrites) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byName, name)
}
