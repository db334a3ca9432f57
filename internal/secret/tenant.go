package secret

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
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

// Delete forgets one stored tenant secret; one already gone is not an error. Only a Purged
// tenant's own records are forgotten.
func (ts TenantSecrets) Delete(ctx context.Context, namespace, name string) error {
	if err := ts.Store.Delete(ctx, namespace, name); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("forgetting %s/%s: %w", namespace, name, err)
	}
	return nil
}
