package tenant

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// applyFailed classifies a write error, and records it as an event on the tenant: an object
// the API server rejects, a kind Landlord may not write, or a name someone else holds will not
// fix itself (Stalled); anything else is retried.
func (r *Reconciler) applyFailed(t *tenancyv1alpha1.Tenant, obj client.Object, err error) outcome {
	msg := fmt.Sprintf("applying %s: %v", writes.ObjectRef(obj), err)
	var conflict *apply.ConflictError
	var res outcome
	switch {
	case errors.As(err, &conflict):
		res = phase.Stalled(tenancyv1alpha1.ReasonOwnershipConflict, "%s", msg)
	case apierrors.IsForbidden(err):
		// Landlord's own role does not allow the kind (a component rendered something outside
		// what components may create): only a person can change that.
		res = phase.Stalled(tenancyv1alpha1.ReasonInvalidObject, "%s", msg)
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		res = phase.Stalled(tenancyv1alpha1.ReasonInvalidObject, "%s", msg)
	default:
		res = outcome{Reason: tenancyv1alpha1.ReasonApplyFailed, Message: msg, Err: err}
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, res.Reason, "Apply", "%s", msg)
	applyFailures.WithLabelValues(obj.GetObjectKind().GroupVersionKind().Kind, res.Reason).Inc()
	return res
}
