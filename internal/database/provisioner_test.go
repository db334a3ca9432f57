package database_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// instances holds one real server per engine for the whole package; -short leaves it empty and
// the tests that need a server skip.
var instances = map[database.Engine]*dbtest.Instance{}

var engines = []database.Engine{database.Postgres, database.MySQL}

func TestMain(m *testing.M) {
	os.Exit(runWithServers(m))
}

func runWithServers(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	started, stop, err := dbtest.StartEach()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	instances = started
	return m.Run()
}

func instance(t *testing.T, engine database.Engine) *dbtest.Instance {
	t.Helper()
	inst := instances[engine]
	if inst == nil {
		t.Skip("no test servers in -short mode")
	}
	return inst
}

func open(t *testing.T, s database.Server) database.Provisioner {
	t.Helper()
	p, err := database.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// uid stands for a tenant's UID.
func uid(t *testing.T) string {
	t.Helper()
	return randomHex(t, 4) + "-" + randomHex(t, 2) + "-" + randomHex(t, 2) + "-" + randomHex(t, 2) + "-" + randomHex(t, 6)
}

func password(t *testing.T) string {
	t.Helper()
	pw, err := database.GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	return pw
}

// newAccount names an account the way the tenant controller does, for a tenant of its own, and
// drops it when the test ends.
func newAccount(t *testing.T, engine database.Engine, p database.Provisioner, db string) database.Account {
	t.Helper()
	name, user := database.Names(engine, "t_", "t"+randomHex(t, 4), db)
	acct := database.Account{Database: name, Username: user, Password: password(t), Owner: uid(t)}
	dropOnCleanup(t, p, acct)
	return acct
}

func dropOnCleanup(t *testing.T, p database.Provisioner, acct database.Account) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Drop(ctx, acct); err != nil {
			t.Errorf("dropping %q: %v", acct.Database, err)
		}
	})
}

func ensure(t *testing.T, ctx context.Context, p database.Provisioner, acct database.Account) {
	t.Helper()
	if err := p.Ensure(ctx, acct); err != nil {
		t.Fatalf("Ensure(%q, %q): %v", acct.Database, acct.Username, err)
	}
}

func mustUse(t *testing.T, ctx context.Context, s database.Server, acct database.Account) {
	t.Helper()
	if err := dbtest.CanUse(ctx, s, acct); err != nil {
		t.Fatalf("login %q cannot use database %q: %v", acct.Username, acct.Database, err)
	}
}

func mustNotConnect(t *testing.T, ctx context.Context, s database.Server, username, password, dbname string) {
	t.Helper()
	if err := dbtest.CanConnect(ctx, s, username, password, dbname); err == nil {
		t.Fatalf("login %q reached database %q", username, dbname)
	}
}

// administrator creates an administrator of the test's own with the statements, run by the
// server's administrator with %[1]s the new one's name and %[2]s its password, and returns the
// server as the new one reaches it.
func administrator(t *testing.T, ctx context.Context, s database.Server, prefix string, statements ...string) database.Server {
	t.Helper()
	own := s
	own.AdminUser = prefix + "_" + randomHex(t, 4)
	own.AdminPassword = password(t)
	dbname := map[database.Engine]string{database.Postgres: "postgres"}[s.Engine]
	admin, err := dbtest.OpenDB(s, s.AdminUser, s.AdminPassword, dbname)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	for _, stmt := range statements {
		adminExec(t, ctx, admin, fmt.Sprintf(stmt, own.AdminUser, own.AdminPassword))
	}
	if s.Engine == database.Postgres {
		// Landlord takes PUBLIC's CONNECT on `postgres` (see TestATenantLoginRunsNoCodeInTheAdministratorsSession):
		// every other role that needs it is granted it by name, as an administrator would.
		adminExec(t, ctx, admin, "GRANT CONNECT ON DATABASE postgres TO "+own.AdminUser)
	}
	if s.Engine == database.MySQL {
		// The MariaDB user goes with the test; the server itself is thrown away after the run.
		t.Cleanup(func() {
			_, _ = admin.ExecContext(context.Background(), fmt.Sprintf("DROP USER '%s'@'%%'", own.AdminUser))
		})
	}
	return own
}

// adminExec runs one administrator statement, again while PostgreSQL answers "tuple concurrently
// updated": the parallel subtests' provisioners change the same ACLs (the `postgres` database's,
// when they confine the server) and PostgreSQL refuses the second writer rather than waiting.
func adminExec(t *testing.T, ctx context.Context, admin *sql.DB, stmt string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		_, err := admin.ExecContext(ctx, stmt)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "tuple concurrently updated") || attempt == 20 {
			t.Fatalf("%s: %v", strings.SplitN(stmt, " PASSWORD ", 2)[0], err)
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
}

func TestProvisioner(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			inst := instance(t, engine)
			s := inst.Server
			p := open(t, s)

			t.Run("ensure creates a database its login can use", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "orders")
				ensure(t, ctx, p, acct)
				mustUse(t, ctx, s, acct)
			})

			t.Run("ensure is idempotent", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "twice")
				ensure(t, ctx, p, acct)
				mustUse(t, ctx, s, acct)
				ensure(t, ctx, p, acct)
				mustUse(t, ctx, s, acct)
			})

			t.Run("concurrent ensures of one account all succeed", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "racy")
				// Separate provisioners stand for separate Landlord replicas: nothing in the
				// process can order their statements.
				errs := make([]error, 4)
				var wg sync.WaitGroup
				for i := range errs {
					replica := open(t, s)
					wg.Go(func() { errs[i] = replica.Ensure(ctx, acct) })
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("replica %d: %v", i, err)
					}
				}
				mustUse(t, ctx, s, acct)
			})

			t.Run("ensure converges a changed password", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				old := newAccount(t, engine, p, "converge")
				ensure(t, ctx, p, old)
				changed := old
				changed.Password = password(t)
				ensure(t, ctx, p, changed)
				mustNotConnect(t, ctx, s, old.Username, old.Password, old.Database)
				mustUse(t, ctx, s, changed)
			})

			t.Run("a new password and a disconnect fence the login's open sessions off its database", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "fenced")
				ensure(t, ctx, p, acct)
				db, err := dbtest.OpenDB(s, acct.Username, acct.Password, acct.Database)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				db.SetMaxOpenConns(1)
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if err := conn.PingContext(ctx); err != nil {
					t.Fatalf("the login's session did not open: %v", err)
				}
				fenced := acct
				fenced.Password = password(t)
				ensure(t, ctx, p, fenced)
				if err := p.Disconnect(ctx, fenced); err != nil {
					t.Fatal(err)
				}
				// The session opened before the fence is gone, and no new one opens with the
				// password the tenant's applications hold.
				if _, err := conn.ExecContext(ctx, "SELECT 1"); err == nil {
					t.Fatal("the session opened before the fence still runs statements")
				}
				mustNotConnect(t, ctx, s, acct.Username, acct.Password, acct.Database)
				mustUse(t, ctx, s, fenced)
			})

			t.Run("disconnect leaves another tenant's login alone", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "notmine")
				ensure(t, ctx, p, acct)
				other := acct
				other.Owner = uid(t)
				var foreign *database.ForeignError
				if err := p.Disconnect(ctx, other); !errors.As(err, &foreign) {
					t.Fatalf("Disconnect of a login marked as another tenant's: got %v, want a *ForeignError", err)
				}
			})

			t.Run("no password reaches the server log, which holds the statements", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "logged")
				acct.Password = "never-logged-" + randomHex(t, 8)
				ensure(t, ctx, p, acct)
				changed := acct
				changed.Password = "never-logged-" + randomHex(t, 8)
				ensure(t, ctx, p, changed)
				log, err := inst.Log()
				if err != nil {
					t.Fatal(err)
				}
				// The server logs every statement (dbtest turns that on), so the check below
				// can fail: PostgreSQL logs the login's statements, with a verifier in place of
				// the password; MariaDB logs the session's, which turns its own log off before
				// any account statement.
				if !strings.Contains(log, acct.Username) && !strings.Contains(log, "sql_log_off") {
					t.Fatalf("the server log does not hold the statements that created login %s", acct.Username)
				}
				for _, secret := range []string{acct.Password, changed.Password} {
					if strings.Contains(log, secret) {
						t.Errorf("the server log contains a password")
					}
				}
			})

			t.Run("one tenant's login cannot reach another tenant's database", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				a := newAccount(t, engine, p, "main")
				b := newAccount(t, engine, p, "main")
				ensure(t, ctx, p, a)
				ensure(t, ctx, p, b)
				mustUse(t, ctx, s, a)
				mustUse(t, ctx, s, b)
				mustNotConnect(t, ctx, s, a.Username, a.Password, b.Database)
				mustNotConnect(t, ctx, s, b.Username, b.Password, a.Database)
			})

			t.Run("hostile names are created, used and dropped", func(t *testing.T) {
				t.Parallel()
				hostile := []struct {
					name     string
					acct     database.Account
					password string
				}{
					{name: "single quotes", acct: database.Account{Database: "it's", Username: "o'brien"}},
					{name: "double quotes", acct: database.Account{Database: `say "hi"`, Username: `the "user"`}},
					{name: "backticks", acct: database.Account{Database: "back`tick", Username: "back`tick"}},
					{name: "backslashes", acct: database.Account{Database: `back\slash`, Username: `back\slash`}},
					{name: "a trailing backslash", acct: database.Account{Database: `ends\`, Username: `ends\`}},
					{name: "wildcards", acct: database.Account{Database: "100%_off", Username: "50%_user"}},
					{name: "statement separators", acct: database.Account{Database: "x; DROP DATABASE y; --", Username: "u; DROP USER z; --"}},
					{name: "quotes that close a literal", acct: database.Account{Database: `'); DROP TABLE t; --`, Username: `' OR '1'='1`}},
					{name: "spaces", acct: database.Account{Database: "with spaces", Username: "user with spaces"}},
					{name: "non-ASCII letters", acct: database.Account{Database: "ünïcødé", Username: "ユーザー"}},
					{name: "a password that needs quoting", acct: database.Account{Database: "pw_quoting", Username: "pw_quoting"},
						password: `it's a \'back\\slash\' "?" ` + "`x`"},
				}
				for _, tc := range hostile {
					t.Run(tc.name, func(t *testing.T) {
						ctx := testContext(t)
						acct := tc.acct
						acct.Password, acct.Owner = tc.password, uid(t)
						if acct.Password == "" {
							acct.Password = password(t)
						}
						dropOnCleanup(t, p, acct)
						ensure(t, ctx, p, acct)
						mustUse(t, ctx, s, acct)
						if err := p.Drop(ctx, acct); err != nil {
							t.Fatal(err)
						}
						mustNotConnect(t, ctx, s, acct.Username, acct.Password, acct.Database)
						mustNotConnect(t, ctx, s, s.AdminUser, s.AdminPassword, acct.Database)
					})
				}
			})

			t.Run("a grant on a name with wildcard characters covers no other database", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				prefix := "w" + randomHex(t, 4)
				// Each grantee's name, read as a MySQL grant pattern without escaping, would
				// also match the other database of its pair.
				pairs := [][2]string{
					{prefix + "a_b", prefix + "axb"},
					{prefix + "p%", prefix + "pzz"},
					{prefix + `c\d`, prefix + "cd"},
				}
				for i, pair := range pairs {
					grantee := database.Account{Database: pair[0], Username: fmt.Sprintf("%s_g%d", prefix, i), Password: password(t), Owner: uid(t)}
					other := database.Account{Database: pair[1], Username: fmt.Sprintf("%s_o%d", prefix, i), Password: password(t), Owner: uid(t)}
					for _, acct := range []database.Account{grantee, other} {
						dropOnCleanup(t, p, acct)
						ensure(t, ctx, p, acct)
					}
					mustUse(t, ctx, s, grantee)
					mustNotConnect(t, ctx, s, grantee.Username, grantee.Password, other.Database)
				}
			})

			t.Run("drop removes the database and the login and may be repeated", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "dropped")
				ensure(t, ctx, p, acct)
				mustUse(t, ctx, s, acct)
				for range 2 {
					if err := p.Drop(ctx, acct); err != nil {
						t.Fatal(err)
					}
				}
				mustNotConnect(t, ctx, s, acct.Username, acct.Password, acct.Database)
				mustNotConnect(t, ctx, s, s.AdminUser, s.AdminPassword, acct.Database)
			})

			t.Run("holds reports the database and its login until they are dropped", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "held")
				holds := func() bool {
					t.Helper()
					held, err := p.Holds(ctx, acct)
					if err != nil {
						t.Fatal(err)
					}
					return held
				}
				if holds() {
					t.Fatal("holds reports an account that was never ensured")
				}
				ensure(t, ctx, p, acct)
				if !holds() {
					t.Fatal("holds does not report the ensured account")
				}
				if err := p.Drop(ctx, acct); err != nil {
					t.Fatal(err)
				}
				if holds() {
					t.Fatal("holds reports the dropped account")
				}
			})

			t.Run("drop ends the tenant's open sessions", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "busy")
				ensure(t, ctx, p, acct)
				mustUse(t, ctx, s, acct)
				db, err := dbtest.OpenDB(s, acct.Username, acct.Password, acct.Database)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				// An open transaction that has read a table holds its locks until it ends.
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback() }()
				var n int
				if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM landlord_probe").Scan(&n); err != nil {
					t.Fatal(err)
				}
				dropCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
				defer cancel()
				if err := p.Drop(dropCtx, acct); err != nil {
					t.Fatal(err)
				}
				mustNotConnect(t, ctx, s, s.AdminUser, s.AdminPassword, acct.Database)
			})

			t.Run("a check reports the server's version and connection slots", func(t *testing.T) {
				t.Parallel()
				info, err := p.Check(testContext(t))
				if err != nil {
					t.Fatal(err)
				}
				want := map[database.Engine]string{database.Postgres: "15", database.MySQL: "MariaDB"}[engine]
				if !strings.Contains(info.Version, want) {
					t.Errorf("version %q does not mention %q", info.Version, want)
				}
				// The PostgreSQL test server runs with max_connections=100 and keeps 3 for superusers;
				// MariaDB has its default, 151.
				wantReserved := map[database.Engine]int{database.Postgres: 3, database.MySQL: 0}[engine]
				if wantMax := map[database.Engine]int{database.Postgres: 100, database.MySQL: 151}[engine]; info.MaxConnections != wantMax || info.Reserved != wantReserved {
					t.Errorf("connection slots %d, reserved %d; want %d and %d", info.MaxConnections, info.Reserved, wantMax, wantReserved)
				}
			})

			if engine == database.MySQL {
				// As on managed MariaDB and MySQL services: every privilege but SUPER, so the
				// session cannot turn the query log off, and provisioning goes on without it.
				t.Run("an administrator without SUPER can provision", func(t *testing.T) {
					t.Parallel()
					ctx := testContext(t)
					limited := administrator(t, ctx, s, "limited",
						"CREATE USER '%[1]s'@'%%' IDENTIFIED BY '%[2]s'",
						"GRANT ALL PRIVILEGES ON *.* TO '%[1]s'@'%%' WITH GRANT OPTION",
						"REVOKE SUPER ON *.* FROM '%[1]s'@'%%'")
					own, err := dbtest.OpenDB(limited, limited.AdminUser, limited.AdminPassword, "")
					if err != nil {
						t.Fatal(err)
					}
					defer own.Close()
					if _, err := own.ExecContext(ctx, "SET SESSION sql_log_off = ON"); err == nil {
						t.Fatal("the administrator without SUPER may turn the query log off: the test would not cover provisioning without it")
					}
					lp := open(t, limited)
					acct := newAccount(t, engine, lp, "limited")
					ensure(t, ctx, lp, acct)
					mustUse(t, ctx, s, acct)
					acct.Password = password(t)
					ensure(t, ctx, lp, acct)
					mustUse(t, ctx, s, acct)
				})
			}

			if engine == database.Postgres {
				t.Run("an administrator with CREATEROLE and CREATEDB but not SUPERUSER can provision", func(t *testing.T) {
					t.Parallel()
					ctx := testContext(t)
					// Landlord's owners table, which the server's administrator created, is granted to
					// it as docs/upgrading.md says.
					ensure(t, ctx, p, newAccount(t, engine, p, "tablemaker"))
					limited := administrator(t, ctx, s, "limited", "CREATE ROLE %[1]s LOGIN CREATEROLE CREATEDB PASSWORD '%[2]s'",
						"GRANT USAGE ON SCHEMA landlord TO %[1]s", "GRANT SELECT, INSERT, UPDATE, DELETE ON landlord.owners TO %[1]s")
					lp := open(t, limited)
					acct := newAccount(t, engine, lp, "limited")
					ensure(t, ctx, lp, acct)
					ensure(t, ctx, lp, acct)
					mustUse(t, ctx, s, acct)
					acct.Password = password(t)
					ensure(t, ctx, lp, acct)
					mustUse(t, ctx, s, acct)
					if err := lp.Drop(ctx, acct); err != nil {
						t.Fatal(err)
					}
					mustNotConnect(t, ctx, s, s.AdminUser, s.AdminPassword, acct.Database)
				})

				t.Run("passwords with quotes and backslashes survive standard_conforming_strings off", func(t *testing.T) {
					t.Parallel()
					ctx := testContext(t)
					legacy := administrator(t, ctx, s, "legacy",
						"CREATE ROLE %[1]s LOGIN SUPERUSER PASSWORD '%[2]s'",
						"ALTER ROLE %[1]s SET standard_conforming_strings = off")
					lp := open(t, legacy)
					acct := newAccount(t, engine, lp, "legacy")
					acct.Password = `a'b\c\\d''\'`
					ensure(t, ctx, lp, acct)
					mustUse(t, ctx, s, acct)
				})
			}
		})
	}
}

// TestOutage stops the servers, so it must not run alongside the tests above.
func TestOutage(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			inst := instance(t, engine)
			s := inst.Server
			p := open(t, s)
			ctx := testContext(t)
			if _, err := p.Check(ctx); err != nil {
				t.Fatal(err)
			}

			if err := inst.Stop(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inst.Start() }) // harmless when already running

			t.Run("an unreachable server fails promptly without revealing passwords", func(t *testing.T) {
				acct := database.Account{Database: "outage", Username: "outage", Password: password(t), Owner: uid(t)}
				calls := map[string]func() error{
					"version": func() error { _, err := p.Check(ctx); return err },
					"ensure":  func() error { return p.Ensure(ctx, acct) },
					"drop":    func() error { return p.Drop(ctx, acct) },
				}
				for name, call := range calls {
					start := time.Now()
					err := call()
					if err == nil {
						t.Fatalf("%s succeeded against a stopped server", name)
					}
					if took := time.Since(start); took > 6*time.Second {
						t.Errorf("%s took %s to fail, longer than the connect timeout", name, took)
					}
					for _, secret := range []string{s.AdminPassword, acct.Password} {
						if strings.Contains(err.Error(), secret) {
							t.Errorf("%s error %q contains a password", name, err)
						}
					}
				}
			})

			t.Run("the same provisioner works again once the server is back", func(t *testing.T) {
				if err := inst.Start(); err != nil {
					t.Fatal(err)
				}
				if _, err := p.Check(ctx); err != nil {
					t.Fatal(err)
				}
				acct := newAccount(t, engine, p, "after")
				ensure(t, ctx, p, acct)
				mustUse(t, ctx, s, acct)
			})
		})
	}
}

func mustConnect(t *testing.T, ctx context.Context, s database.Server, username, password string) {
	t.Helper()
	dbname := map[database.Engine]string{database.Postgres: "postgres"}[s.Engine]
	if err := dbtest.CanConnect(ctx, s, username, password, dbname); err != nil {
		t.Fatalf("login %q no longer works with its own password: %v", username, err)
	}
}
