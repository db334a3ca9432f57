package secrettest

import (
	"context"
	"errors"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	"github.com/landlord-dev/landlord/internal/secret"
)

// ErrStoreDown is what a FlakyStore returns while down.
var ErrStoreDown = errors.New("secret store unavailable")

// FlakyStore is a store that can be taken down, to show what an outage does (and does not do).
type FlakyStore struct {
	secret.Store
	down atomic.Bool
}

// NewFlakyStore wraps a store.
func NewFlakyStore(s secret.Store) *FlakyStore { return &FlakyStore{Store: s} }

// SetDown takes the store down or brings it back.
func (f *FlakyStore) SetDown(down bool) { f.down.Store(down) }

func (f *FlakyStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if f.down.Load() {
		return nil, ErrStoreDown
	}
	return f.Store.Get(ctx, namespace, name)
}

func (f *FlakyStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	if f.down.Load() {
		return nil, ErrStoreDown
	}
	return f.Store.List(ctx, namespace)
}

func (f *FlakyStore) Put(ctx context.Context, s *corev1.Secret) error {
	if f.down.Load() {
		return ErrStoreDown
	}
	return f.Store.Put(ctx, s)
}

func (f *FlakyStore) Delete(ctx context.Context, namespace, name string) error {
	if f.down.Load() {
		return ErrStoreDown
	}
	return f.Store.Delete(ctx, namespace, name)
}
