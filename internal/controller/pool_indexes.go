package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The pool and claim controllers read their tenants and claims through these indexes: a list
// by label selector visits every object in the cache, a list by index only the ones it returns.
const (
	// TenantPoolIndex indexes the tenants that carry a pool's label and no claim has taken, by
	// that label: a pool's spares (and tenants labeled by hand). Allocated tenants are left out,
	// so that a pool reads only its spares however many tenants it has handed out.
	TenantPoolIndex = "metadata.labels.pool,unallocated"
	// TenantClaimUIDIndex indexes tenants by the UID of the claim they were bound to.
	TenantClaimUIDIndex = "metadata.labels.claim-uid"
	// PendingClaimPoolIndex indexes the claims not yet Bound by the pool they ask for (spec.pool):
	// a claim leaves it when it is Bound, so a spare turning Ready wakes only the claims waiting.
	PendingClaimPoolIndex = "spec.pool,pending"
)

// RegisterPoolIndexes registers the indexes the pool and claim controllers list by.
func RegisterPoolIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range []struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}{
		{&tenancyv1alpha1.Tenant{}, TenantPoolIndex, tenantPoolKeys},
		{&tenancyv1alpha1.Tenant{}, TenantClaimUIDIndex, tenantClaimUIDKeys},
		{&tenancyv1alpha1.TenantClaim{}, PendingClaimPoolIndex, pendingClaimPoolKeys},
	} {
		if err := indexer.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return err
		}
	}
	return nil
}

func tenantPoolKeys(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok || t.IsAllocated() {
		return nil
	}
	if pool := t.Labels[tenancyv1alpha1.PoolLabel]; pool != "" {
		return []string{pool}
	}
	return nil
}

func tenantClaimUIDKeys(obj client.Object) []string {
	if uid := obj.GetLabels()[tenancyv1alpha1.ClaimUIDLabel]; uid != "" {
		return []string{uid}
	}
	return nil
}

func pendingClaimPoolKeys(obj client.Object) []string {
	c, ok := obj.(*tenancyv1alpha1.TenantClaim)
	if !ok || c.Status.Phase == tenancyv1alpha1.ClaimBound || c.Spec.Pool == "" {
		return nil
	}
	return []string{c.Spec.Pool}
}
