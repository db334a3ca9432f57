package database_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

// A tenant's login may hold a lock that Landlord's work on its own account waits for: here an
// open transaction that changed its own password, which Landlord's ALTER ROLE waits behind. Every
// provisioning session of the server can end up waiting so, and measuring the server's
// databases, which shared those sessions, waited with them: one tenant froze the usage figures
// of every tenant on its server. Sizes has a session of its own.
func TestATenantHoldingLandlordsSessionsFreezesNoOnesSizes(t *testing.T) {
	ctx := testContext(t)
	s := instance(t, database.Postgres).Server
	p := open(t, s)
	holder := newAccount(t, database.Postgres, p, "holder")
	ensure(t, ctx, p, holder)

	login := openAs(t, s, holder.Username, holder.Password, holder.Database)
	tx, err := login.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "ALTER ROLE CURRENT_USER PASSWORD 'Held-0123456789abcdef'"); err != nil {
		t.Fatal(err)
	}

	// Every provisioning session waits on the tenant's transaction.
	waiting, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range database.MaxAdminConns {
		wg.Go(func() { _ = p.Ensure(waiting, holder) })
	}
	// Until the server shows every provisioning session waiting on a lock.
	admin := openAs(t, s, s.AdminUser, s.AdminPassword, "postgres")
	for waitingSessions := 0; waitingSessions < database.MaxAdminConns; {
		if err := admin.QueryRowContext(waiting, "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND wait_event_type IN ('Lock', 'LWLock')",
			s.AdminUser).Scan(&waitingSessions); err != nil {
			t.Fatalf("the provisioning sessions never all waited: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's own view
	}

	measuring, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	sizes, err := p.Sizes(measuring)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sizes waited for the provisioning sessions the tenant holds: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sizes[holder.Database]; !ok {
		t.Errorf("sizes = %v, want the holder's database measured", sizes)
	}
	cancel()
	_ = tx.Rollback()
	wg.Wait()
}
