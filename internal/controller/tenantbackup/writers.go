package tenantbackup

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// writers holds, per tenant (by UID), the restore this process started writing into it, until
// that restore ends or is deleted. Whether another restore writes into a tenant is first read
// from the cache, which shows a restore's start a moment after it is written: two restores
// ready in the same instant (their safety backups ending together) would both find the tenant
// free there, and interleave their drops and loads. Only the leader runs restores, so this
// process knows every start the cache may not show yet; after a restart or a failover the cache
// shows every restore running.
type writers struct {
	mu       sync.Mutex
	byTenant map[string]writer
}

type writer struct {
	uid  types.UID
	name string
}

// take records rs as the restore writing into the tenant, unless another restore this process
// started does: then it returns that restore's name and false.
func (w *writers) take(tenantUID string, rs *tenancyv1alpha1.TenantRestore) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if held, ok := w.byTenant[tenantUID]; ok && held.uid != rs.UID {
		return held.name, false
	}
	if w.byTenant == nil {
		w.byTenant = map[string]writer{}
	}
	w.byTenant[tenantUID] = writer{uid: rs.UID, name: rs.Name}
	return "", true
}

// release ends what the restore holds.
func (w *writers) release(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for tenant, held := range w.byTenant {
		if held.uid == uid {
			delete(w.byTenant, tenant)
		}
	}
}

// releaseNamed ends what a restore of that name holds, unless it is the restore whose UID is
// keep: a restore gone (keep is ""), or deleted and made again under its name (keep is the new
// one's), writes no more.
func (w *writers) releaseNamed(name string, keep types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for tenant, held := range w.byTenant {
		if held.name == name && held.uid != keep {
			delete(w.byTenant, tenant)
		}
	}
}
