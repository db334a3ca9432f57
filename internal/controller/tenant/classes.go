package tenant

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/tenantclass"
)

// A tenant of a TenantClass converges to its spec with the class's fields filled in beneath its
// own (package tenantclass). A class that does not exist, or a field the class does not let the
// tenant set (admitted before the class changed; the admission policy refuses it on any later
// write), stops the reconcile before any phase: converging without the class would take the
// tenant off its tier (its node pool, its quota), and a guess is worse than waiting.

// Classes are read from the cache.
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantclasses,verbs=get;list;watch

// classStall is why a tenant's class stops its reconcile; err, when set, is retried with backoff
// (the cache could not be read); waiting, a wait for the class's status, which its watch ends.
type classStall struct {
	reason, message string
	err             error
	waiting         bool
}

// applyClass is the tenant as its class makes it, and the class at the revision the tenant
// converges to (tenantclass.Choose); t itself, and no class, when it names none. A stall says
// why the tenant cannot be converged as its class asks.
//
// An Archived or Purged tenant has no namespace for its class to shape: it is converged (its
// namespace removed, its data kept or dropped) whatever its class, or without one.
func (r *Reconciler) applyClass(ctx context.Context, t *tenancyv1alpha1.Tenant) (*tenancyv1alpha1.Tenant, *tenancyv1alpha1.TenantClass, *classStall) {
	if t.Spec.Class == "" || t.Spec.State == tenancyv1alpha1.StateArchived || t.Spec.State == tenancyv1alpha1.StatePurged {
		return t, nil, nil
	}
	if !r.Classes {
		return nil, nil, &classStall{reason: tenancyv1alpha1.ReasonClassNotFound,
			message: fmt.Sprintf("spec.class names TenantClass %s, but the TenantClass CustomResourceDefinition is not installed: Landlord changes nothing of the tenant until it is", t.Spec.Class)}
	}
	c := &tenancyv1alpha1.TenantClass{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: t.Spec.Class}, c); {
	case apierrors.IsNotFound(err):
		return nil, nil, &classStall{reason: tenancyv1alpha1.ReasonClassNotFound,
			message: fmt.Sprintf("spec.class names TenantClass %s, which does not exist: Landlord changes nothing of the tenant until it does, or spec.class names another", t.Spec.Class)}
	case err != nil:
		return nil, nil, &classStall{reason: tenancyv1alpha1.ReasonClassNotFound, message: "the tenant's TenantClass could not be read", err: err}
	}
	// What the tenant may set is the class's current say, as at admission; what it converges to
	// is the revision its class's updates give it.
	if err := tenantclass.Check(t, c); err != nil {
		var refused *tenantclass.RefusedError
		if errors.As(err, &refused) {
			return nil, nil, &classStall{reason: tenancyv1alpha1.ReasonClassOverrideRefused,
				message: err.Error() + ": Landlord changes nothing of the tenant until the field is removed, or the class lets its tenants set it"}
		}
		return nil, nil, &classStall{reason: tenancyv1alpha1.ReasonClassOverrideRefused, message: err.Error()}
	}
	revision, spec, ok := tenantclass.Choose(t, c)
	if !ok {
		return nil, nil, &classStall{reason: tenancyv1alpha1.ReasonProgressing, waiting: true,
			message: fmt.Sprintf("waiting for TenantClass %s to record the revision of its spec (generation %d)", c.Name, c.Generation)}
	}
	at := &tenancyv1alpha1.TenantClass{ObjectMeta: c.ObjectMeta, Spec: *spec}
	at.Spec.Updates = c.Spec.Updates
	c = at
	applied := tenantclass.Apply(t, c)
	applied.Status.Class = &tenancyv1alpha1.TenantClassRef{Name: c.Name, Revision: revision}
	return applied, c, nil
}

// classStalledStatus is the status of a tenant its class stops: as last observed, with Stalled
// saying why (Ready false). observedGeneration moves on unless the class could not be read:
// the spec was read, and waiting is what it asks.
func classStalledStatus(t *tenancyv1alpha1.Tenant, stall *classStall) tenancyv1alpha1.TenantStatus {
	s := *t.Status.DeepCopy()
	conds := conditions.For(&s.Conditions, t.Generation)
	if stall.err != nil || stall.waiting {
		conds.Reconciling(stall.reason, stall.message)
		return s
	}
	conds.Stalled(stall.reason, stall.message)
	s.ObservedGeneration = t.Generation
	return s
}

// tenantsOfClass are the tenants naming a class, from the cache's index.
func (r *Reconciler) tenantsOfClass(ctx context.Context, c client.Object) []reconcile.Request {
	list := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.TenantClass: c.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
	}
	return out
}

// classChanged passes a class's creation, deletion, a change of its spec, and a change of what its
// tenants converge to (its current revision, the revisions it keeps, or the share of tenants its
// rollout released); not the counts its controller refreshes while a change rolls out.
var classChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*tenancyv1alpha1.TenantClass)
		after, ok2 := e.ObjectNew.(*tenancyv1alpha1.TenantClass)
		if !ok1 || !ok2 {
			return true
		}
		return before.Generation != after.Generation || before.Status.Revision != after.Status.Revision ||
			before.Status.ObservedGeneration != after.Status.ObservedGeneration ||
			len(before.Status.Revisions) != len(after.Status.Revisions) || released(before) != released(after)
	},
}

func released(c *tenancyv1alpha1.TenantClass) int32 {
	if c.Status.Rollout == nil {
		return -1
	}
	return c.Status.Rollout.ReleasedPercent
}
