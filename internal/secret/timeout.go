package secret

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// WithTimeout bounds every call to a store: a store that hangs (a network dropping packets, a
// stuck mount) then fails like one that is down, and holds no worker for longer than timeout.
// A call is abandoned, not stopped, when its time is up: the file store's system calls do not
// take a context. Every store operation is idempotent, so the retry that follows is safe. While
// MaxAbandonedCalls calls have not returned, further calls fail at once rather than pile up
// goroutines and threads behind a store that does not answer.
func WithTimeout(s Store, timeout time.Duration) Store {
	if timeout <= 0 {
		return s
	}
	return &timeoutStore{store: s, timeout: timeout}
}

// MaxAbandonedCalls is how many calls past their deadline may still be running before the store
// is not tried at all: more than the reconciles that run at once, so one slow burst is retried.
const MaxAbandonedCalls = 32

type timeoutStore struct {
	store     Store
	timeout   time.Duration
	abandoned atomic.Int32
}

// bounded runs call with a deadline and returns when either ends.
func bounded[T any](ctx context.Context, t *timeoutStore, what string, call func(context.Context) (T, error)) (T, error) {
	var zero T
	if n := t.abandoned.Load(); n >= MaxAbandonedCalls {
		return zero, fmt.Errorf("secret store %s: not tried: %d earlier calls have not returned", what, n)
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := call(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		t.abandoned.Add(1)
		go func() {
			<-done
			t.abandoned.Add(-1)
		}()
		return zero, fmt.Errorf("secret store %s: no answer within %s: %w", what, t.timeout, ctx.Err())
	}
}

func (t *timeoutStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return bounded(ctx, t, "read of "+namespace+"/"+name, func(ctx context.Context) (*corev1.Secret, error) {
		return t.store.Get(ctx, namespace, name)
	})
}

func (t *timeoutStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	return bounded(ctx, t, "listing of "+namespace, func(ctx context.Context) ([]*corev1.Secret, error) {
		return t.store.List(ctx, namespace)
	})
}

func (t *timeoutStore) Put(ctx context.Context, s *corev1.Secret) error {
	_, err := bounded(ctx, t, "write of "+s.Namespace+"/"+s.Name, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, t.store.Put(ctx, s)
	})
	return err
}

func (t *timeoutStore) Delete(ctx context.Context, namespace, name string) error {
	_, err := bounded(ctx, t, "delete of "+namespace+"/"+name, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, t.store.Delete(ctx, namespace, name)
	})
	return err
}

func (t *timeoutStore) Identity(ctx context.Context) (string, error) {
	return bounded(ctx, t, "identity read", t.store.Identity)
}

func (t *timeoutStore) DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error {
	_, err := bounded(ctx, t, "delete of "+namespace+"/"+name, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, t.store.DeleteIf(ctx, namespace, name, match)
	})
	return err
}
