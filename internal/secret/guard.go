package secret

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// StoreMismatchError is a store that is not the one the cluster records.
type StoreMismatchError struct {
	Identity, Recorded string
}

func (e *StoreMismatchError) Error() string {
	return fmt.Sprintf("the secret store (identity %s) is not the one this cluster records (identity %s): check secrets.store in the configuration and that the store's volume outlived the pod", e.Identity, e.Recorded)
}

// ErrNoStoreRecorded is a guarded store's answer while the cluster records no store.
var ErrNoStoreRecorded = errors.New("the cluster records no secret store yet: the template namespace sync records the store it mirrors on its first successful pass")

// Guarded is a store used only while it is the one the cluster records: recorded returns the
// identity the cluster recorded ("" when it has recorded none yet, and then no store is used).
// Tenants' credentials are then never written to a store that is not the cluster's (where they
// would be lost when the right one is back), nor found missing in it (and regenerated). The
// store's identity is read once per process.
func Guarded(s Store, recorded func(context.Context) (string, error)) Store {
	return &guardedStore{Store: s, recorded: recorded}
}

type guardedStore struct {
	Store
	recorded func(context.Context) (string, error)

	mu sync.Mutex
	id string
}

// identity is the store's identity, read from the store until a read succeeds. The lock is not
// held over the read: a store that hangs holds each caller for its own deadline only, never
// every worker in a queue behind it. Reads of the identity are idempotent.
func (g *guardedStore) identity(ctx context.Context) (string, error) {
	g.mu.Lock()
	id := g.id
	g.mu.Unlock()
	if id != "" {
		return id, nil
	}
	id, err := g.Store.Identity(ctx)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	g.id = id
	g.mu.Unlock()
	return id, nil
}

func (g *guardedStore) check(ctx context.Context) error {
	recorded, err := g.recorded(ctx)
	if err != nil {
		return fmt.Errorf("reading the secret store identity the cluster records: %w", err)
	}
	if recorded == "" {
		// Until the template namespace sync has recorded the cluster's store, no store is known
		// to be it: an empty one would have credentials found missing and regenerated.
		return ErrNoStoreRecorded
	}
	id, err := g.identity(ctx)
	if err != nil {
		return fmt.Errorf("reading the secret store's identity: %w", err)
	}
	if id != recorded {
		return &StoreMismatchError{Identity: id, Recorded: recorded}
	}
	return nil
}

func (g *guardedStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := g.check(ctx); err != nil {
		return nil, err
	}
	return g.Store.Get(ctx, namespace, name)
}

func (g *guardedStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	if err := g.check(ctx); err != nil {
		return nil, err
	}
	return g.Store.List(ctx, namespace)
}

func (g *guardedStore) Put(ctx context.Context, s *corev1.Secret) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.Put(ctx, s)
}

func (g *guardedStore) Delete(ctx context.Context, namespace, name string) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.Delete(ctx, namespace, name)
}

func (g *guardedStore) DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error {
	if err := g.check(ctx); err != nil {
		return err
	}
	return g.Store.DeleteIf(ctx, namespace, name, match)
}
