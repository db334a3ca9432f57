package secret

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// TenantSecrets keeps the secrets Landlord generates for one tenant (database credentials) in
// the store, under the tenant's namespace name, so that an Archived tenant brought back, or a
// rebuilt cluster, gets the very same values.
type TenantSecrets struct {
	Store Store
}

// Save stores a tenant secret; its namespace must be the tenant's namespace.
func (ts TenantSecrets) Save(ctx context.Context, s *corev1.Secret) error {
	return ts.Store.Put(ctx, s)
}

// Load returns a stored tenant secret, or an error wrapping ErrNotFound.
func (ts TenantSecrets) Load(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return ts.Store.Get(ctx, namespace, name)
}

// LoadAll returns every stored secret of a tenant namespace.
func (ts TenantSecrets) LoadAll(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	return ts.Store.List(ctx, namespace)
}

// Delete forgets one stored tenant secret of the tenant whose UID is owner; one already gone is
// not an error. Records are kept by namespace name, which a same-named newer tenant shares: the
// record is deleted only while it still names owner (TenantUIDLabel; "" for a record written
// before records carried one), read and deleted with no write between, so a record that tenant
// wrote after the caller read its own is never deleted. Such a record is not an error either:
// the owner's own is gone. Only a Purged tenant's own records are forgotten.
func (ts TenantSecrets) Delete(ctx context.Context, namespace, name, owner string) error {
	err := ts.Store.DeleteIf(ctx, namespace, name, func(s *corev1.Secret) bool {
		return s.Annotations[tenancyv1alpha1.TenantUIDLabel] == owner
	})
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrPreconditionFailed) {
		return fmt.Errorf("forgetting %s/%s: %w", namespace, name, err)
	}
	return nil
}
