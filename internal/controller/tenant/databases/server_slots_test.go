package databases

import (
	"context"
	"testing"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

func TestAStatementsTimeoutStartsWhenItHasAConnection(t *testing.T) {
	var s serverSlots
	ctx := context.Background()
	// Every connection to the server is taken by statements still running.
	release := make(chan struct{})
	running := make(chan struct{}, database.MaxAdminConns)
	for range database.MaxAdminConns {
		go func() {
			_ = s.run(ctx, "pg", time.Minute, func(context.Context) error {
				running <- struct{}{}
				<-release
				return nil
			})
		}()
	}
	for range database.MaxAdminConns {
		<-running
	}
	started := make(chan error, 1)
	go func() {
		_ = s.run(ctx, "pg", 50*time.Millisecond, func(ctx context.Context) error {
			started <- ctx.Err()
			return nil
		})
	}()
	select {
	case <-started:
		t.Fatal("a statement ran while every connection was taken")
	case <-time.After(200 * time.Millisecond):
		// Longer than the statement's timeout: a timeout running while it queued has passed.
	}
	close(release)
	if err := <-started; err != nil {
		t.Errorf("the statement started with its context already %v, want its whole timeout", err)
	}

	t.Run("another server's statements do not wait for this one's", func(t *testing.T) {
		if err := s.run(ctx, "mysql", time.Second, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a wait ends with the reconcile's context", func(t *testing.T) {
		hold := make(chan struct{})
		defer close(hold)
		held := make(chan struct{}, database.MaxAdminConns)
		for range database.MaxAdminConns {
			go func() {
				_ = s.run(ctx, "busy", time.Minute, func(context.Context) error { held <- struct{}{}; <-hold; return nil })
			}()
		}
		for range database.MaxAdminConns {
			<-held
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.run(cancelled, "busy", time.Minute, func(context.Context) error { return nil }); err == nil {
			t.Error("ran with no connection free and the reconcile's context cancelled")
		}
	})
}
