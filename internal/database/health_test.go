package database_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

// TestTheHealthCheckAnswersWhileEveryAdministratorSessionIsBusy: a server's check has a
// connection of its own. When every administrator session is busy (provisioning that waits on
// the server), the check used to wait for one of them, time out, and mark a working server
// unreachable, which stops every tenant's database work there. Not parallel: the blocker holds
// a lock over the whole server.
func TestTheHealthCheckAnswersWhileEveryAdministratorSessionIsBusy(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			s := instance(t, engine).Server
			ctx := testContext(t)
			p := open(t, s)
			// The provisioner's first session creates Landlord's bookkeeping, which the blocker
			// locks.
			ensure(t, ctx, p, newAccount(t, engine, p, "warm"))
			dbname := map[database.Engine]string{database.Postgres: "postgres", database.MySQL: ""}[engine]
			blocker, err := openAs(t, s, s.AdminUser, s.AdminPassword, dbname).Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Close()
			observer := openAs(t, s, s.AdminUser, s.AdminPassword, dbname)
			// Every provisioning reads Landlord's owners table (PostgreSQL) or writes the
			// server's catalogs (MariaDB), and waits while another session holds it.
			lock := map[database.Engine]struct {
				hold    []string
				release string
			}{
				database.Postgres: {[]string{"BEGIN", "LOCK TABLE landlord.owners IN ACCESS EXCLUSIVE MODE"}, "ROLLBACK"},
				database.MySQL:    {[]string{"FLUSH TABLES WITH READ LOCK"}, "UNLOCK TABLES"},
			}[engine]
			for _, stmt := range lock.hold {
				if _, err := blocker.ExecContext(ctx, stmt); err != nil {
					t.Fatal(err)
				}
			}
			released := false
			unblock := func() {
				if !released {
					released = true
					if _, err := blocker.ExecContext(context.WithoutCancel(ctx), lock.release); err != nil {
						t.Error(err)
					}
				}
			}
			defer unblock()

			done := make(chan error, 4)
			for i := range 4 {
				acct := newAccount(t, engine, p, "busy"+string(rune('a'+i)))
				go func() { done <- p.Ensure(ctx, acct) }()
			}
			// Every administrator session is waiting on the blocker's lock.
			waiting := map[database.Engine]string{
				database.Postgres: "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'landlord' AND wait_event_type = 'Lock'",
				database.MySQL:    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '" + s.AdminUser + "' AND STATE LIKE '%lock%'",
			}[engine]
			deadline := time.Now().Add(20 * time.Second)
			for n := 0; n < 4; {
				if err := observer.QueryRowContext(ctx, waiting).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d administrator sessions wait on the lock, want 4: the test would prove nothing", n)
				}
				time.Sleep(50 * time.Millisecond)
			}

			quick, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, err := p.Check(quick); err != nil {
				t.Fatalf("the check, with every administrator session busy: %v", err)
			}
			unblock()
			for range 4 {
				if err := <-done; err != nil {
					t.Errorf("provisioning, once the lock was released: %v", err)
				}
			}
		})
	}
}

// TestATenantLoginAtItsConnectionLimitLeavesTheServerToTheOthers: a tenant's login opens every
// session its limit allows, and one more is refused; another tenant is still provisioned and
// rotated, and the server's check still answers.
func TestATenantLoginAtItsConnectionLimitLeavesTheServerToTheOthers(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			s := instance(t, engine).Server
			s.ConnectionLimit = 5
			ctx := testContext(t)
			p := open(t, s)
			greedy := newAccount(t, engine, p, "greedy")
			ensure(t, ctx, p, greedy)
			db := openAs(t, s, greedy.Username, greedy.Password, greedy.Database)
			db.SetMaxOpenConns(10)
			var sessions []*sql.Conn
			defer func() {
				for _, c := range sessions {
					_ = c.Close()
				}
			}()
			for i := 0; i < int(s.ConnectionLimit); i++ {
				c, err := db.Conn(ctx)
				if err == nil {
					err = c.PingContext(ctx)
				}
				if err != nil {
					t.Fatalf("session %d of %d: %v", i+1, s.ConnectionLimit, err)
				}
				sessions = append(sessions, c)
			}
			if c, err := db.Conn(ctx); err == nil {
				if err := c.PingContext(ctx); err == nil {
					t.Fatalf("the login opened a session beyond its limit of %d", s.ConnectionLimit)
				}
				_ = c.Close()
			}

			other := newAccount(t, engine, p, "other")
			ensure(t, ctx, p, other)
			other.Password = password(t)
			ensure(t, ctx, p, other)
			mustUse(t, ctx, s, other)
			if _, err := p.Check(ctx); err != nil {
				t.Fatalf("the check, with a login at its limit: %v", err)
			}
		})
	}
}
