package tenant

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// ReasonCRDOutdated: a tenant's status dropped the reconcile request it had handled, because the
// installed Tenant CRD is older than the operator.
const ReasonCRDOutdated = "CRDOutdated"

// handledRequests remembers, per tenant, the last reconcile request (ReconcileRequestAnnotation)
// this process handled. status.lastHandledReconcileAt says the same to everyone; this is for
// when the API server does not keep it: a Tenant CRD older than the operator (Helm never
// upgrades crds/) prunes the field, and a request read as never handled would be verified again
// on every later event of the tenant, at the cost of a full comparison and a login to every
// database server each time. With it, a request is verified once per process.
type handledRequests struct {
	mu sync.Mutex
	// byName is keyed by tenant name, so a tenant gone (whose UID is no longer known) is
	// forgotten; the UID tells a tenant re-created under the same name apart.
	byName map[string]handledRequest
	// warned: the outdated CRD was logged (once per process; each tenant gets its event).
	warned bool
}

type handledRequest struct {
	uid       types.UID
	requested string
}

// handled reports whether this process already handled the tenant's request.
func (h *handledRequests) handled(t *tenancyv1alpha1.Tenant, requested string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	got, ok := h.byName[t.Name]
	return ok && got.uid == t.UID && got.requested == requested
}

func (h *handledRequests) record(t *tenancyv1alpha1.Tenant, requested string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byName == nil {
		h.byName = map[string]handledRequest{}
	}
	h.byName[t.Name] = handledRequest{uid: t.UID, requested: requested}
}

func (h *handledRequests) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.byName, name)
}

// firstWarning reports whether the outdated CRD is to be logged: once per process.
func (h *handledRequests) firstWarning() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := !h.warned
	h.warned = true
	return first
}

// handledRequest records a reconcile request handled; stored is the status the API server
// returned after the request was written to it. A status without the request means the API
// server pruned the field: the tenant gets a Warning event, and the log says it once.
func (r *Reconciler) handledRequest(ctx context.Context, t *tenancyv1alpha1.Tenant, requested, stored string) {
	r.requests.record(t, requested)
	if stored == requested {
		return
	}
	const msg = "the installed Tenant CRD is older than the operator: the API server dropped status.lastHandledReconcileAt, " +
		"so clients waiting for the request (landlordctl reconcile --wait) never see it handled, and spec.suspend is dropped too. " +
		"Apply the CRDs of this release (Helm never upgrades crds/: kubectl apply --server-side -f the chart's crds/)"
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, ReasonCRDOutdated, "Reconcile", "reconcile request %q handled, but %s", requested, msg)
	if r.requests.firstWarning() {
		log.FromContext(ctx).Error(nil, msg, "tenant", t.Name)
	}
}
