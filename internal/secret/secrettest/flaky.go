package secrettest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/landlord-dev/landlord/internal/secret"
)

// ErrStoreDown is what a FlakyStore returns while down.
var ErrStoreDown = errors.New("secret store unavailable")

// FlakyStore is a store that can be taken down, or made to hang, to show what an outage does
// (and does not do).
type FlakyStore struct {
	secret.Store
	down atomic.Bool
	hang atomic.Pointer[chan struct{}]

	mu      sync.Mutex
	cutOffs []CutOff
}

// CutOff is a call that hung until its caller's context ended, as the store saw it: what the
// caller's deadline was is read from the context the store was handed, not guessed from how
// long the caller waited.
type CutOff struct {
	// Arrived is when the call reached the store.
	Arrived time.Time
	// Deadline is the deadline of the call's context; HasDeadline is false when it had none.
	Deadline    time.Time
	HasDeadline bool
	// Err is why the context ended: context.DeadlineExceeded when its deadline cut the call off.
	Err error
}

// CutOffs are the calls that hung until their context ended, oldest first.
func (f *FlakyStore) CutOffs() []CutOff {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]CutOff(nil), f.cutOffs...)
}

// NewFlakyStore wraps a store.
func NewFlakyStore(s secret.Store) *FlakyStore { return &FlakyStore{Store: s} }

// SetDown takes the store down or brings it back.
func (f *FlakyStore) SetDown(down bool) { f.down.Store(down) }

// SetHanging makes every call wait, as on a network that drops packets, until the caller's
// context ends or SetHanging(false) lets the calls through.
func (f *FlakyStore) SetHanging(hanging bool) {
	if hanging {
		release := make(chan struct{})
		f.hang.Store(&release)
		return
	}
	if release := f.hang.Swap(nil); release != nil {
		close(*release)
	}
}

// fail is what a call gets before it reaches the store: an outage, a hang that ends with the
// caller's context, or nothing.
func (f *FlakyStore) fail(ctx context.Context) error {
	if release := f.hang.Load(); release != nil {
		arrived := time.Now()
		select {
		case <-ctx.Done():
			deadline, ok := ctx.Deadline()
			f.mu.Lock()
			f.cutOffs = append(f.cutOffs, CutOff{Arrived: arrived, Deadline: deadline, HasDeadline: ok, Err: ctx.Err()})
			f.mu.Unlock()
			return ctx.Err()
		case <-*release:
		}
	}
	if f.down.Load() {
		return ErrStoreDown
	}
	return nil
}

func (f *FlakyStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if err := f.fail(ctx); err != nil {
		return nil, err
	}
	return f.Store.Get(ctx, namespace, name)
}

func (f *FlakyStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	if err := f.fail(ctx); err != nil {
		return nil, err
	}
	return f.Store.List(ctx, namespace)
}

func (f *FlakyStore) Put(ctx context.Context, s *corev1.Secret) error {
	if err := f.fail(ctx); err != nil {
		return err
	}
	return f.Store.Put(ctx, s)
}

func (f *FlakyStore) Delete(ctx context.Context, namespace, name string) error {
	if err := f.fail(ctx); err != nil {
		return err
	}
	return f.Store.Delete(ctx, namespace, name)
}

func (f *FlakyStore) Identity(ctx context.Context) (string, error) {
	if err := f.fail(ctx); err != nil {
		return "", err
	}
	return f.Store.Identity(ctx)
}

func (f *FlakyStore) DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error {
	if err := f.fail(ctx); err != nil {
		return err
	}
	return f.Store.DeleteIf(ctx, namespace, name, match)
}
