package secret_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/landlord-dev/landlord/internal/secret"
)

// stuckStore is a store on a mount that stopped answering: its calls ignore their context and
// block until released, as system calls on a hung filesystem do. It counts the calls it got.
type stuckStore struct {
	secret.Store
	release chan struct{}
	calls   atomic.Int32
}

func (s *stuckStore) Get(context.Context, string, string) (*corev1.Secret, error) {
	s.calls.Add(1)
	<-s.release
	return nil, secret.ErrNotFound
}

func TestADeadlineBoundsAStoreThatIgnoresItsContext(t *testing.T) {
	ctx := context.Background()
	stuck := &stuckStore{release: make(chan struct{})}
	s := secret.WithTimeout(stuck, 10*time.Millisecond)

	t.Run("each call ends at the deadline, saying so", func(t *testing.T) {
		_, err := s.Get(ctx, "ns", "a")
		if err == nil || !strings.Contains(err.Error(), "no answer within 10ms") {
			t.Fatalf("Get = %v, want the deadline's error", err)
		}
	})

	t.Run("once many calls are left running, the store is not tried at all", func(t *testing.T) {
		for range 100 {
			if _, err := s.Get(ctx, "ns", "a"); err == nil {
				t.Fatal("a stuck store answered")
			}
		}
		// As many calls as may be left running reached the store; the rest failed without a
		// goroutine (and a thread, on a hung mount) each.
		// A call left running reaches the store when its goroutine is scheduled, which on a
		// busy machine can be after its deadline: wait for them, never for more.
		NewWithT(t).Eventually(stuck.calls.Load).WithTimeout(10 * time.Second).Should(BeNumerically(">=", secret.MaxAbandonedCalls))
		if got := stuck.calls.Load(); got != secret.MaxAbandonedCalls {
			t.Fatalf("the stuck store got %d of 101 calls, want %d: abandoned calls pile up without bound", got, secret.MaxAbandonedCalls)
		}
		_, err := s.Get(ctx, "ns", "a")
		if err == nil || !strings.Contains(err.Error(), "earlier calls have not returned") {
			t.Fatalf("Get = %v, want the store not tried", err)
		}
	})

	t.Run("when the stuck calls return, the store is tried again", func(t *testing.T) {
		close(stuck.release)
		NewWithT(t).Eventually(func() error {
			_, err := s.Get(ctx, "ns", "a")
			return err
		}).WithTimeout(30 * time.Second).Should(MatchError(secret.ErrNotFound))
	})
}
