package database_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// TestSizesAreWhatTheServerReports: the usage sampler's one query per server returns, for each
// tenant database, the bytes the server itself reports for it, and follows the data as it grows.
func TestSizesAreWhatTheServerReports(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			s := instance(t, engine).Server
			ctx := testContext(t)
			p := open(t, s)
			acct := newAccount(t, engine, p, "sized")
			ensure(t, ctx, p, acct)
			other := newAccount(t, engine, p, "other")
			ensure(t, ctx, p, other)

			// What the server says, asked by its administrator the way a person would.
			reported := func(t *testing.T, db string) int64 {
				t.Helper()
				dbname := map[database.Engine]string{database.Postgres: "postgres"}[engine]
				admin, err := dbtest.OpenDB(s, s.AdminUser, s.AdminPassword, dbname)
				if err != nil {
					t.Fatal(err)
				}
				defer admin.Close()
				q := map[database.Engine]string{
					database.Postgres: "SELECT pg_database_size($1)",
					database.MySQL:    "SELECT CAST(COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) AS SIGNED) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
				}[engine]
				var n int64
				if err := admin.QueryRowContext(ctx, q, db).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			grow := func(t *testing.T, rows int) {
				t.Helper()
				db, err := dbtest.OpenDB(s, acct.Username, acct.Password, acct.Database)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				for _, stmt := range []string{
					"CREATE TABLE IF NOT EXISTS filler (id INT PRIMARY KEY, body TEXT)",
					fmt.Sprintf("INSERT INTO filler SELECT n, %s FROM (%s) AS g", map[database.Engine]string{
						database.Postgres: "repeat('x', 500) || n", database.MySQL: "CONCAT(REPEAT('x', 500), n)"}[engine], series(engine, rows)),
				} {
					if _, err := db.ExecContext(ctx, stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
				}
				if engine == database.MySQL {
					// InnoDB's lengths are refreshed by its statistics; ANALYZE is what refreshes them now.
					if _, err := db.ExecContext(ctx, "ANALYZE TABLE filler"); err != nil {
						t.Fatal(err)
					}
				}
			}
			sizes := func(t *testing.T) map[string]int64 {
				t.Helper()
				got, err := p.Sizes(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return got
			}

			t.Run("each tenant database is measured as the server measures it", func(t *testing.T) {
				grow(t, 2000)
				got := sizes(t)
				for _, db := range []string{acct.Database, other.Database} {
					if want := reported(t, db); got[db] != want {
						t.Errorf("Sizes()[%q] = %d, the server reports %d", db, got[db], want)
					}
				}
				if got[acct.Database] <= got[other.Database] {
					t.Errorf("the database with 2,000 rows (%d bytes) is not larger than the empty one (%d bytes)", got[acct.Database], got[other.Database])
				}
			})

			t.Run("a database that grows is measured larger", func(t *testing.T) {
				before := sizes(t)[acct.Database]
				grow(t, 0)
				db, err := dbtest.OpenDB(s, acct.Username, acct.Password, acct.Database)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if _, err := db.ExecContext(ctx, "CREATE TABLE more_filler AS SELECT * FROM filler"); err != nil {
					t.Fatal(err)
				}
				if engine == database.MySQL {
					if _, err := db.ExecContext(ctx, "ANALYZE TABLE more_filler"); err != nil {
						t.Fatal(err)
					}
				}
				after := sizes(t)[acct.Database]
				if after <= before {
					t.Errorf("size after copying the table = %d, before = %d", after, before)
				}
				if want := reported(t, acct.Database); after != want {
					t.Errorf("Sizes() = %d, the server reports %d", after, want)
				}
			})

			t.Run("the server's own databases are not reported", func(t *testing.T) {
				for name := range sizes(t) {
					if strings.HasPrefix(name, "template") || name == "mysql" || name == "information_schema" || name == "performance_schema" || name == "sys" {
						t.Errorf("Sizes() reports the server's own database %q", name)
					}
				}
			})
		})
	}
}

// series is a query of the numbers 1..n (none for 0) in the engine's dialect.
func series(engine database.Engine, n int) string {
	if engine == database.Postgres {
		return fmt.Sprintf("SELECT generate_series(1, %d) AS n", n)
	}
	return fmt.Sprintf("SELECT seq AS n FROM seq_1_to_%d", max(n, 1)) + map[bool]string{true: " WHERE 1 = 0", false: ""}[n == 0]
}
