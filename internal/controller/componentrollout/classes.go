package componentrollout

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/tenantclass"
)

// A tenant's maintenance windows are its own, or its TenantClass's when it sets none, at the
// revision of the class the tenant converges to (tenantclass.Choose): a rollout waits for the
// same windows the tenant reconciler moves it in.

// classWindows reads each class once per reconcile, from the cache.
type classWindows struct {
	reader client.Reader
	served bool
	seen   map[string]*tenancyv1alpha1.TenantClass
}

// of is t, or a copy of it with its class's maintenance windows when it has none of its own and
// its class has some; t is not changed (it may be the cache's own object). A class that does
// not exist gives none: the tenant stalls, and moves nothing, until it does.
func (w *classWindows) of(ctx context.Context, t *tenancyv1alpha1.Tenant) (*tenancyv1alpha1.Tenant, error) {
	if !w.served || t.Spec.Class == "" || len(t.Spec.MaintenanceWindows) > 0 {
		return t, nil
	}
	c, ok := w.seen[t.Spec.Class]
	if !ok {
		c = &tenancyv1alpha1.TenantClass{}
		switch err := w.reader.Get(ctx, client.ObjectKey{Name: t.Spec.Class}, c, client.UnsafeDisableDeepCopy); {
		case apierrors.IsNotFound(err):
			c = nil
		case err != nil:
			return nil, err
		}
		if w.seen == nil {
			w.seen = map[string]*tenancyv1alpha1.TenantClass{}
		}
		w.seen[t.Spec.Class] = c
	}
	if c == nil {
		return t, nil
	}
	_, spec, ok := tenantclass.Choose(t, c)
	if !ok || len(spec.MaintenanceWindows) == 0 {
		return t, nil
	}
	windows := spec.MaintenanceWindows
	copied := *t
	copied.Spec.MaintenanceWindows = windows
	return &copied, nil
}
