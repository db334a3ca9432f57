package database_test

import (
	"slices"
	"testing"

	"github.com/landlord-dev/landlord/internal/database"
)

// Landlord takes from PUBLIC what would let a tenant's login into a PostgreSQL server's shared
// databases (CONNECT and TEMPORARY on postgres and template1, CREATE on postgres's public schema).
// An administrator that neither owns them nor is a superuser (a managed service's) cannot, and
// PostgreSQL says so with a warning alone: the server used to look confined. Check now reports
// what PUBLIC keeps once a tenant is placed, for the DatabaseServer's status, and nothing once it
// is taken.
func TestCheckReportsWhatPUBLICKeepsOnTheSharedDatabases(t *testing.T) {
	t.Run("an administrator that owns nothing shared leaves PUBLIC its rights, and Check names them", func(t *testing.T) {
		ctx := testContext(t)
		s := upgradedPostgres(t)
		s = administrator(t, ctx, s, "limited", "CREATE ROLE %[1]s LOGIN CREATEROLE CREATEDB PASSWORD '%[2]s'")
		p := open(t, s)
		ensure(t, ctx, p, newAccount(t, database.Postgres, p, "confined"))
		info, err := p.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"CONNECT on database postgres", "CONNECT on database template1", "CREATE on schema public of database postgres"} {
			if !slices.Contains(info.Unconfined, want) {
				t.Errorf("Unconfined = %q, want it to name %q", info.Unconfined, want)
			}
		}
	})
	t.Run("a superuser takes them at the first placement, and Check names none", func(t *testing.T) {
		ctx := testContext(t)
		p := open(t, upgradedPostgres(t))
		ensure(t, ctx, p, newAccount(t, database.Postgres, p, "confined"))
		info, err := p.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(info.Unconfined) > 0 {
			t.Errorf("Unconfined = %q, want none", info.Unconfined)
		}
	})
}
