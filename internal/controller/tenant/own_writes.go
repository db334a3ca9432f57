package tenant

import (
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// ownWrites keeps, per tenant, the tenant as the API server answered this reconciler's last
// write of it (its status, its finalizer, its shard), until the cache shows that write. The
// cache sees a write a moment after it is made, and a reconcile that read the tenant from before
// then would work from an older status than the one just written: it would provision a database
// "again" (a second Provisioned event), take a component's new version for its first apply (no
// ComponentApplied event), and write the older view back over the newer one. Such a reconcile
// works from the answer instead, which is the newer of the two. Waiting for the cache would do as
// well, but late: by then the quota controller has often written a quota's status over
// Landlord's own write of it, which the reconcile would then have to read whole.
//
// An entry lives from a write until the tenants' informer delivers it, a few milliseconds: a
// fleet at rest keeps none.
type ownWrites struct {
	mu     sync.Mutex
	byName map[string]*tenancyv1alpha1.Tenant
}

// record keeps t, as the API server returned it from a write.
func (w *ownWrites) record(t *tenancyv1alpha1.Tenant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byName == nil {
		w.byName = map[string]*tenancyv1alpha1.Tenant{}
	}
	w.byName[t.Name] = t.DeepCopy()
}

// fresher is the tenant as this reconciler last wrote it, when the cache's t is older; nil when
// t is as new (and the write is forgotten). A tenant re-created under the same name (another
// UID), or a resourceVersion that is not a number (an API server that does not promise to order
// them), is never replaced.
func (w *ownWrites) fresher(t *tenancyv1alpha1.Tenant) *tenancyv1alpha1.Tenant {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.byName[t.Name]
	if !ok {
		return nil
	}
	if olderThan(t, last) {
		return last.DeepCopy()
	}
	delete(w.byName, t.Name)
	return nil
}

// observe forgets the write once the cache holds it, or anything newer (ForgetWhatIsGone
// calls it for every update the tenants' informer delivers).
func (w *ownWrites) observe(t *tenancyv1alpha1.Tenant) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if last, ok := w.byName[t.Name]; ok && !olderThan(t, last) {
		delete(w.byName, t.Name)
	}
}

func (w *ownWrites) forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byName, name)
}

// olderThan reports whether t is an older version of the same tenant than last.
func olderThan(t, last *tenancyv1alpha1.Tenant) bool {
	if t.UID != last.UID {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(t.ResourceVersion, last.ResourceVersion)
	return err == nil && cmp < 0
}
