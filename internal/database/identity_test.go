package database_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// adminDB is the server's administrator connection, for looking at what the provisioner did.
func adminDB(t *testing.T, s database.Server) *sql.DB {
	t.Helper()
	dbname := map[database.Engine]string{database.Postgres: "postgres"}[s.Engine]
	db, err := dbtest.OpenDB(s, s.AdminUser, s.AdminPassword, dbname)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// mustBeForeign checks that err refuses the account's database or login as another's, naming
// owner ("" for one Landlord did not create).
func mustBeForeign(t *testing.T, err error, owner string) {
	t.Helper()
	var foreign *database.ForeignError
	if !errors.As(err, &foreign) {
		t.Fatalf("got %v, want a *database.ForeignError", err)
	}
	if foreign.Owner != owner {
		t.Fatalf("the refusal names owner %q, want %q: %v", foreign.Owner, owner, err)
	}
}

// TestIdentity covers what makes a database and its login one tenant's: Landlord's marker on the
// server, written when it creates them and read back before it uses, changes or drops them.
func TestIdentity(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			inst := instance(t, engine)
			s := inst.Server
			p := open(t, s)
			admin := adminDB(t, s)

			// A tenant/database pair whose names spell an existing login must not take it over.
			t.Run("an existing login Landlord did not create is refused and keeps its password", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				other := administrator(t, ctx, s, "spelled", map[database.Engine][]string{
					database.Postgres: {"CREATE ROLE %[1]s LOGIN CREATEROLE CREATEDB PASSWORD '%[2]s'"},
					database.MySQL:    {"CREATE USER '%[1]s'@'%%' IDENTIFIED BY '%[2]s'", "GRANT ALL PRIVILEGES ON *.* TO '%[1]s'@'%%'"},
				}[engine]...)
				acct := database.Account{Database: other.AdminUser, Username: other.AdminUser, Password: password(t), Owner: uid(t)}
				mustBeForeign(t, p.Ensure(ctx, acct), "")
				mustBeForeign(t, p.Drop(ctx, acct), "")
				mustConnect(t, ctx, s, other.AdminUser, other.AdminPassword)
			})

			if engine == database.MySQL {
				t.Run("a user of the computed name from another host is refused too", func(t *testing.T) {
					t.Parallel()
					ctx := testContext(t)
					acct := newAccount(t, engine, p, "local")
					if _, err := admin.ExecContext(ctx, "CREATE USER '"+acct.Username+"'@'localhost' IDENTIFIED BY 'theirs'"); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP USER '"+acct.Username+"'@'localhost'") })
					mustBeForeign(t, p.Ensure(ctx, acct), "")
				})
			}

			t.Run("an existing database Landlord did not create is refused and left alone", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "theirs")
				if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+acct.Database); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _, _ = admin.ExecContext(context.Background(), "DROP DATABASE "+acct.Database) })
				mustBeForeign(t, p.Ensure(ctx, acct), "")
				mustBeForeign(t, p.Drop(ctx, acct), "")
				mustNotConnect(t, ctx, s, acct.Username, acct.Password, acct.Database)
				mustConnect(t, ctx, s, s.AdminUser, s.AdminPassword)
				var n int
				if err := admin.QueryRowContext(ctx, map[database.Engine]string{
					database.Postgres: "SELECT COUNT(*) FROM pg_database WHERE datname = $1",
					database.MySQL:    "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
				}[engine], acct.Database).Scan(&n); err != nil || n != 1 {
					t.Fatalf("the database Landlord did not create is gone (%d, %v)", n, err)
				}
			})

			t.Run("another tenant's database is neither used, changed nor dropped, even under the same names", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				a := newAccount(t, engine, p, "collide")
				ensure(t, ctx, p, a)
				mustUse(t, ctx, s, a)
				b := a
				b.Owner, b.Password = uid(t), password(t)
				mustBeForeign(t, p.Ensure(ctx, b), a.Owner)
				mustBeForeign(t, p.Drop(ctx, b), a.Owner)
				mustUse(t, ctx, s, a)
				mustNotConnect(t, ctx, s, b.Username, b.Password, b.Database)
			})

			t.Run("a tenant adopting another's data by its UID takes it over, and the earlier owner no longer can", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				// Not newAccount: the earlier owner's drop at the end would be refused.
				name, user := database.Names(engine, "t_", "t"+randomHex(t, 4), "adopted")
				earlier := database.Account{Database: name, Username: user, Password: password(t), Owner: uid(t)}
				ensure(t, ctx, p, earlier)
				mustUse(t, ctx, s, earlier)
				heir := earlier
				heir.Owner, heir.Adopt = uid(t), earlier.Owner
				ensure(t, ctx, p, heir)
				mustUse(t, ctx, s, heir)
				heir.Adopt = ""
				dropOnCleanup(t, p, heir)
				mustBeForeign(t, p.Drop(ctx, earlier), heir.Owner)
			})

			// A tenant that adopts another's database on a server that does not hold it (a
			// DatabaseServer of the same name pointing at another machine) would otherwise get an
			// empty database under the adopted password, and the data would be stranded.
			t.Run("data to adopt that is not on the server is refused, not created empty", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				name, user := database.Names(engine, "t_", "t"+randomHex(t, 4), "elsewhere")
				heir := database.Account{Database: name, Username: user, Password: password(t), Owner: uid(t), Adopt: uid(t), MustExist: true}
				var missing *database.MissingError
				if err := p.Ensure(ctx, heir); !errors.As(err, &missing) {
					t.Fatalf("got %v, want a *database.MissingError", err)
				}
				mustNotConnect(t, ctx, s, heir.Username, heir.Password, heir.Database)
				var n int
				if err := admin.QueryRowContext(ctx, map[database.Engine]string{
					database.Postgres: "SELECT COUNT(*) FROM pg_database WHERE datname = $1",
					database.MySQL:    "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
				}[engine], heir.Database).Scan(&n); err != nil || n != 0 {
					t.Fatalf("a database was created for the data to adopt (%d, %v)", n, err)
				}
			})

			t.Run("an unmarked account is marked only when the caller vouches for it", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				acct := newAccount(t, engine, p, "legacy")
				ensure(t, ctx, p, acct)
				unmark(t, ctx, admin, engine, acct)
				mustBeForeign(t, p.Ensure(ctx, acct), "")
				legacy := acct
				legacy.AdoptUnmarked = true
				ensure(t, ctx, p, legacy)
				ensure(t, ctx, p, acct)
				mustUse(t, ctx, s, acct)
			})

			t.Run("logins are created without privileges beyond their database and with the server's connection limit", func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				limited := s
				limited.ConnectionLimit = 7
				lp := open(t, limited)
				acct := newAccount(t, engine, lp, "plain")
				ensure(t, ctx, lp, acct)
				mustUse(t, ctx, s, acct)
				switch engine {
				case database.Postgres:
					var super, createDB, createRole, replication, bypassRLS bool
					var limit int
					var verifier string
					if err := admin.QueryRowContext(ctx, "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolconnlimit, rolpassword FROM pg_authid WHERE rolname = $1",
						acct.Username).Scan(&super, &createDB, &createRole, &replication, &bypassRLS, &limit, &verifier); err != nil {
						t.Fatal(err)
					}
					if super || createDB || createRole || replication || bypassRLS {
						t.Errorf("login has attributes super=%v createdb=%v createrole=%v replication=%v bypassrls=%v", super, createDB, createRole, replication, bypassRLS)
					}
					if limit != 7 {
						t.Errorf("connection limit %d, want 7", limit)
					}
					// The server received a verifier computed by Landlord, never the password.
					if !strings.HasPrefix(verifier, "SCRAM-SHA-256$4096:") {
						t.Errorf("stored password is %.14q..., want a SCRAM-SHA-256 verifier", verifier)
					}
				case database.MySQL:
					var limit int
					if err := admin.QueryRowContext(ctx, "SELECT max_user_connections FROM mysql.user WHERE User = ? AND Host = '%'", acct.Username).Scan(&limit); err != nil {
						t.Fatal(err)
					}
					if limit != 7 {
						t.Errorf("connection limit %d, want 7", limit)
					}
				}
			})

			if engine == database.Postgres {
				// The login owns its database, so it may rewrite the database's comment, though
				// not its own: the login's marker is what Landlord trusts.
				t.Run("a marker a tenant's own login forges on its database changes nothing", func(t *testing.T) {
					t.Parallel()
					ctx := testContext(t)
					acct := newAccount(t, engine, p, "forged")
					ensure(t, ctx, p, acct)
					own, err := dbtest.OpenDB(s, acct.Username, acct.Password, acct.Database)
					if err != nil {
						t.Fatal(err)
					}
					defer own.Close()
					if _, err := own.ExecContext(ctx, "COMMENT ON DATABASE "+acct.Database+" IS 'landlord:tenant="+uid(t)+"'"); err != nil {
						t.Fatal(err)
					}
					if _, err := own.ExecContext(ctx, "COMMENT ON ROLE "+acct.Username+" IS 'landlord:tenant="+uid(t)+"'"); err == nil {
						t.Fatal("the login rewrote its own marker")
					}
					ensure(t, ctx, p, acct)
					mustUse(t, ctx, s, acct)
					var comment, owner string
					if err := admin.QueryRowContext(ctx, "SELECT coalesce(shobj_description(d.oid, 'pg_database'), ''), o.tenant FROM pg_database d, landlord.owners o"+
						" WHERE d.datname = $1 AND o.kind = 'database' AND o.name = d.datname", acct.Database).Scan(&comment, &owner); err != nil {
						t.Fatal(err)
					}
					if comment != "" || owner != acct.Owner {
						t.Errorf("after Ensure the database's comment is %q and its marker names %q, want no comment and %q", comment, owner, acct.Owner)
					}
				})

				// CREATE DATABASE cannot run in the transaction that creates and marks the login.
				t.Run("a database left unmarked by an interrupted ensure is recognised by its owner", func(t *testing.T) {
					t.Parallel()
					ctx := testContext(t)
					acct := newAccount(t, engine, p, "interrupted")
					ensure(t, ctx, p, acct)
					if _, err := admin.ExecContext(ctx, "DELETE FROM landlord.owners WHERE kind = 'database' AND name = $1", acct.Database); err != nil {
						t.Fatal(err)
					}
					ensure(t, ctx, p, acct)
					mustUse(t, ctx, s, acct)
				})
			}
		})
	}
}

// unmark removes Landlord's markers from an account, as a release that did not write them left it.
func unmark(t *testing.T, ctx context.Context, admin *sql.DB, engine database.Engine, acct database.Account) {
	t.Helper()
	stmts := map[database.Engine][]string{
		database.Postgres: {"DELETE FROM landlord.owners WHERE name IN ('" + acct.Database + "', '" + acct.Username + "')"},
		database.MySQL:    {"DELETE FROM landlord.owners WHERE name IN ('" + acct.Database + "', '" + acct.Username + "')"},
	}[engine]
	for _, stmt := range stmts {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
}
