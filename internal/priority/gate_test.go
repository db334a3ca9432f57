package priority

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// started runs Background in a goroutine and returns a channel that yields its done function
// once the write may start.
func started(ctx context.Context, g *Gate) <-chan func() {
	ch := make(chan func(), 1)
	go func() { ch <- g.Background(ctx) }()
	return ch
}

// blocked reports whether no write started from ch within a moment: the one wait in these
// tests, since a write held back is, by definition, one that has not happened yet.
func blocked(ch <-chan func()) bool {
	select {
	case done := <-ch:
		done()
		return false
	case <-time.After(100 * time.Millisecond):
		return true
	}
}

// wentAhead waits for a write from ch to start and returns its done function, failing with msg
// if it still waits after a minute.
func wentAhead(t *testing.T, ch <-chan func(), msg string) func() {
	t.Helper()
	select {
	case done := <-ch:
		return done
	case <-time.After(time.Minute):
		t.Fatal(msg)
		return nil
	}
}

func TestBackgroundWrites(t *testing.T) {
	ctx := context.Background()

	t.Run("never wait while no bind is under way", func(t *testing.T) {
		g := NewGate(1, time.Hour)
		for range 10 {
			defer g.Background(ctx)()
		}
	})

	t.Run("beyond the gate's in-flight count wait while a bind is under way, until one in flight ends", func(t *testing.T) {
		g := NewGate(2, time.Hour)
		first, second := g.Background(ctx), g.Background(ctx)
		defer second()
		release := g.Urgent()
		defer release()
		third := started(ctx, g)
		if !blocked(third) {
			t.Fatal("a third background write started with 2 in flight while a bind was under way")
		}
		first()
		wentAhead(t, third, "the third write still waits with 1 in flight")()
	})

	t.Run("wait until the bind ends", func(t *testing.T) {
		g := NewGate(0, time.Hour)
		release := g.Urgent()
		write := started(ctx, g)
		if !blocked(write) {
			t.Fatal("a background write started while a bind was under way, with room for none")
		}
		if got := testutil.ToFloat64(waitingWrites); got != 1 {
			t.Errorf("landlord_background_writes_waiting is %v, want 1", got)
		}
		release()
		wentAhead(t, write, "the write still waits after the bind ended")()
		if got := testutil.ToFloat64(waitingWrites); got != 0 {
			t.Errorf("landlord_background_writes_waiting is %v once the write went, want 0", got)
		}
	})

	t.Run("wait while a second bind is under way, however often the first is released", func(t *testing.T) {
		g := NewGate(0, time.Hour)
		first, second := g.Urgent(), g.Urgent()
		first()
		first()
		write := started(ctx, g)
		if !blocked(write) {
			t.Fatal("a background write started while the second bind was still under way")
		}
		second()
		wentAhead(t, write, "the write still waits after both binds ended")()
	})

	t.Run("wait no longer than the gate's bound, and are counted", func(t *testing.T) {
		g := NewGate(0, 50*time.Millisecond)
		defer g.Urgent()()
		writes0, seconds0 := testutil.ToFloat64(heldWrites), testutil.ToFloat64(heldSeconds)
		start := time.Now()
		g.Background(ctx)()
		if waited := time.Since(start); waited < 50*time.Millisecond {
			t.Fatalf("waited %v, want the bound of 50ms", waited)
		}
		if got := testutil.ToFloat64(heldWrites) - writes0; got != 1 {
			t.Errorf("landlord_background_writes_held_total rose by %v, want 1", got)
		}
		if got := testutil.ToFloat64(heldSeconds) - seconds0; got < 0.05 {
			t.Errorf("landlord_background_writes_held_seconds_total rose by %v, want at least 0.05", got)
		}
	})

	t.Run("stop waiting when their context ends, and then count as in flight", func(t *testing.T) {
		g := NewGate(1, time.Hour)
		first := g.Background(ctx)
		defer g.Urgent()()
		cctx, cancel := context.WithCancel(ctx)
		write := started(cctx, g)
		if !blocked(write) {
			t.Fatal("a second background write started with 1 in flight while a bind was under way")
		}
		cancel()
		cancelled := wentAhead(t, write, "the write still waits after its context ended")
		// The cancelled write went (to fail on its context): with it in flight, ending the
		// first leaves no room for a third.
		first()
		third := started(ctx, g)
		if !blocked(third) {
			t.Fatal("a third background write started beside the cancelled one, which the gate did not count")
		}
		cancelled()
		wentAhead(t, third, "the third write still waits with none in flight")()
	})

	t.Run("never wait when yielding is off", func(t *testing.T) {
		g := NewGate(-1, time.Hour)
		defer g.Urgent()()
		g.Background(ctx)()
	})

	t.Run("never wait on a nil gate", func(t *testing.T) {
		var g *Gate
		defer g.Urgent()()
		g.Background(ctx)()
	})
}

func TestTheTransportHoldsBackOnlyWrites(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer server.Close()
	g := NewGate(0, time.Hour)
	defer g.Urgent()()
	rt := g.Transport(server.Client().Transport)

	for _, tc := range []struct {
		method, path string
		held         bool
	}{
		{http.MethodGet, "/api/v1/namespaces/default/configmaps/a", false},
		{http.MethodGet, "/api/v1/namespaces?watch=true", false},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/landlord-system/leases/landlord", false},
		{http.MethodPut, "/k8s/clusters/c-m-abc/apis/coordination.k8s.io/v1/namespaces/landlord-system/leases/landlord", false},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", false},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
		{http.MethodPatch, "/api/v1/namespaces/tenant-a/configmaps/a", true},
		{http.MethodPost, "/apis/tenancy.landlord.dev/v1alpha1/tenants", true},
		{http.MethodDelete, "/api/v1/namespaces/tenant-a", true},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, tc.method, server.URL+tc.path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan struct{})
			go func() {
				if resp, err := rt.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
				close(got)
			}()
			if tc.held {
				select {
				case <-got:
					t.Fatal("went ahead of a bind under way")
				case <-time.After(100 * time.Millisecond):
				}
				return
			}
			select {
			case <-got:
			case <-time.After(time.Minute):
				t.Fatal("was held back behind a bind")
			}
		})
	}
}
