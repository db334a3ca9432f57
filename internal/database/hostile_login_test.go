package database_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// upgradedPostgres starts a PostgreSQL server of the test's own that looks upgraded from
// PostgreSQL 14 or older: PUBLIC may create objects in the public schema of `postgres` and
// `template1`, as every cluster initialised before 15 still allows. The package's shared server
// is left as PostgreSQL 15 makes it.
func upgradedPostgres(t *testing.T) database.Server {
	t.Helper()
	s := ownPostgres(t)
	ctx := testContext(t)
	for _, dbname := range []string{"postgres", "template1"} {
		db := openAs(t, s, s.AdminUser, s.AdminPassword, dbname)
		if _, err := db.ExecContext(ctx, "GRANT CREATE ON SCHEMA public TO PUBLIC"); err != nil {
			t.Fatal(err)
		}
		// A session left open on template1 would keep CREATE DATABASE from copying it.
		_ = db.Close()
	}
	return s
}

// ownPostgres starts a PostgreSQL server of the test's own, as initdb makes it, and stops it when
// the test ends.
func ownPostgres(t *testing.T) database.Server {
	t.Helper()
	instance(t, database.Postgres) // skips in -short mode, like every test that needs a server
	inst, err := dbtest.StartPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	return inst.Server
}

func openAs(t *testing.T, s database.Server, username, password, dbname string) *sql.DB {
	t.Helper()
	db, err := dbtest.OpenDB(s, username, password, dbname)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestATenantLoginRunsNoCodeInTheAdministratorsSession: a tenant's login, on a server where PUBLIC
// may create objects (every cluster upgraded from PostgreSQL 14 or older), plants functions and
// operators that PostgreSQL would prefer to the catalog's in a session with the default
// search_path, and an object in template1 that every new database would copy. Landlord's
// administrator session then provisions, rotates and drops databases: the planted code never
// runs, the tenant gains no membership, and new databases carry nothing planted.
func TestATenantLoginRunsNoCodeInTheAdministratorsSession(t *testing.T) {
	s := upgradedPostgres(t)
	ctx := testContext(t)
	admin := openAs(t, s, s.AdminUser, s.AdminPassword, "postgres")
	// The provisioner connects lazily: nothing reaches the server before the planting is done.
	p := open(t, s)
	victim := newAccount(t, database.Postgres, p, "victim")

	// The attacker is a tenant login provisioned before Landlord took PUBLIC's rights on
	// `postgres` and `template1` away (by an earlier release), so it plants while the server
	// still lets it.
	attacker := database.Account{Username: "t_evil_app", Database: "t_evil_app", Password: password(t), Owner: uid(t)}
	for _, stmt := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", attacker.Username, attacker.Password),
		fmt.Sprintf("CREATE DATABASE %s OWNER %s", attacker.Database, attacker.Username),
	} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	victimRole := pgx.Identifier{victim.Username}.Sanitize()
	// Each planted function records that it ran, as whom, and makes the attacker a member of the
	// victim's role and a superuser: what the administrator's rights would give it.
	payload := fmt.Sprintf(`
		INSERT INTO public.hijacked (who) VALUES (current_user);
		EXECUTE 'GRANT %s TO %s';
		EXECUTE 'ALTER ROLE %s SUPERUSER';`,
		strings.ReplaceAll(victimRole, "'", "''"), attacker.Username, attacker.Username)
	attackerPG := openAs(t, s, attacker.Username, attacker.Password, "postgres")
	for _, stmt := range []string{
		"CREATE TABLE public.hijacked (who text, at timestamptz DEFAULT now())",
		"GRANT INSERT, SELECT ON public.hijacked TO PUBLIC",
		// shobj_description(oid, 'pg_authid'): an untyped literal prefers text to name.
		`CREATE FUNCTION public.shobj_description(oid, text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN ` + payload +
			` RETURN pg_catalog.shobj_description($1, $2::name); END $$`,
		// rolname = $1 with a text argument: an operator on (name, text) is an exact match.
		`CREATE FUNCTION public.evil_eq(name, text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN ` + payload +
			` RETURN $1::text = $2; END $$`,
		"CREATE OPERATOR public.= (LEFTARG = name, RIGHTARG = text, FUNCTION = public.evil_eq)",
		`CREATE FUNCTION public.pg_get_userbyid(oid) RETURNS name LANGUAGE plpgsql AS $$ BEGIN ` + payload +
			` RETURN pg_catalog.pg_get_userbyid($1); END $$`,
	} {
		if _, err := attackerPG.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("planting %q: %v", stmt, err)
		}
	}
	attackerT1 := openAs(t, s, attacker.Username, attacker.Password, "template1")
	if _, err := attackerT1.ExecContext(ctx, "CREATE TABLE public.planted (note text)"); err != nil {
		t.Fatalf("planting a table in template1: %v", err)
	}
	_ = attackerPG.Close()
	_ = attackerT1.Close()

	// A new tenant's database, a rotation of the victim's password and a purge: every kind of
	// administrator session Landlord opens.
	ensure(t, ctx, p, victim)
	mustUse(t, ctx, s, victim)
	fresh := newAccount(t, database.Postgres, p, "fresh")
	ensure(t, ctx, p, fresh)
	mustUse(t, ctx, s, fresh)
	victim.Password = password(t)
	ensure(t, ctx, p, victim)
	mustUse(t, ctx, s, victim)
	purged := newAccount(t, database.Postgres, p, "purged")
	ensure(t, ctx, p, purged)
	if err := p.Drop(ctx, purged); err != nil {
		t.Fatal(err)
	}

	t.Run("the planted code never ran in the administrator's session", func(t *testing.T) {
		var n int
		if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM public.hijacked").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("the tenant's functions ran %d times in the administrator's session", n)
		}
	})

	t.Run("the attacker is neither a superuser nor a member of the victim's role", func(t *testing.T) {
		var super, member bool
		if err := admin.QueryRowContext(ctx, "SELECT rolsuper, pg_catalog.pg_has_role($1, $2, 'MEMBER') FROM pg_catalog.pg_roles WHERE rolname = $1",
			attacker.Username, victim.Username).Scan(&super, &member); err != nil {
			t.Fatal(err)
		}
		if super || member {
			t.Errorf("the attacker gained rights: superuser %t, member of the victim's role %t", super, member)
		}
		mustNotConnect(t, ctx, s, attacker.Username, attacker.Password, victim.Database)
	})

	t.Run("a new tenant database carries nothing planted in template1", func(t *testing.T) {
		db := openAs(t, s, fresh.Username, fresh.Password, fresh.Database)
		var planted bool
		if err := db.QueryRowContext(ctx, "SELECT pg_catalog.to_regclass('public.planted') IS NOT NULL").Scan(&planted); err != nil {
			t.Fatal(err)
		}
		if planted {
			t.Error("the new tenant's database holds the table planted in template1")
		}
	})

	t.Run("a tenant login cannot connect to postgres, template1 or a neighbour's database", func(t *testing.T) {
		for _, dbname := range []string{"postgres", "template1", victim.Database} {
			mustNotConnect(t, ctx, s, fresh.Username, fresh.Password, dbname)
			mustNotConnect(t, ctx, s, attacker.Username, attacker.Password, dbname)
		}
		// The administrator still can: Landlord's sessions need `postgres`.
		mustConnect(t, ctx, s, s.AdminUser, s.AdminPassword)
	})
}

// TestATenantLoginCannotReachLandlordsBookkeepingOnMySQL: on MySQL and MariaDB, Landlord's
// administrator session reads `mysql`.`user`, information_schema and its own `landlord` schema,
// selects no default database, and calls only built-in functions, which a stored function cannot
// shadow. What a tenant's login could change there decides who owns what, so it may change
// nothing.
func TestATenantLoginCannotReachLandlordsBookkeepingOnMySQL(t *testing.T) {
	inst := instance(t, database.MySQL)
	s := inst.Server
	ctx := testContext(t)
	p := open(t, s)
	acct := newAccount(t, database.MySQL, p, "probe")
	ensure(t, ctx, p, acct)
	db := openAs(t, s, acct.Username, acct.Password, acct.Database)
	for _, stmt := range []string{
		"INSERT INTO `landlord`.`owners` (kind, name, tenant) VALUES ('database', 'x', 'y')",
		"UPDATE `landlord`.`owners` SET tenant = 'y'",
		"SELECT * FROM `landlord`.`owners`",
		"CREATE FUNCTION `landlord`.`version`() RETURNS TEXT RETURN 'x'",
		"CREATE TABLE `landlord`.`planted` (a INT)",
		"CREATE DATABASE `landlord2`",
		"UPDATE mysql.global_priv SET Priv = '{}'",
		"CREATE DEFINER = '" + s.AdminUser + "'@'%' PROCEDURE p() SELECT 1",
	} {
		_, err := db.ExecContext(ctx, stmt)
		var myErr *mysql.MySQLError
		if !errors.As(err, &myErr) || !slices.Contains(accessDenied, myErr.Number) {
			t.Errorf("%q: got %v, want a refusal for want of privileges", stmt, err)
		}
	}
}

// accessDenied are the MySQL and MariaDB errors that refuse a statement for want of privileges
// (ER_DBACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR, ER_SPECIFIC_ACCESS_DENIED_ERROR), so
// that a statement failing for another reason, a typo, proves nothing.
var accessDenied = []uint16{1044, 1142, 1227}

// TestATenantLoginHoldingLandlordsLocksBlocksNoProvisioning: Landlord serialises the work on one
// account with locks on the server (advisory locks on PostgreSQL, named locks on MySQL and
// MariaDB) that any login may take. A tenant's login holding them under the names Landlord once
// derived from the account alone must not stop another tenant's provisioning, rotation or purge.
func TestATenantLoginHoldingLandlordsLocksBlocksNoProvisioning(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			s := instance(t, engine).Server
			ctx := testContext(t)
			if engine == database.Postgres {
				// On a server whose `postgres` PUBLIC may still connect to: one the administrator
				// neither owns nor is superuser of, so Landlord cannot confine it.
				s = upgradedPostgres(t)
				s = administrator(t, ctx, s, "limited", "CREATE ROLE %[1]s LOGIN CREATEROLE CREATEDB PASSWORD '%[2]s'")
			}
			p := open(t, s)
			attacker := newAccount(t, engine, p, "locker")
			ensure(t, ctx, p, attacker)
			victim := newAccount(t, engine, p, "victim")

			dbname := map[database.Engine]string{database.Postgres: "postgres", database.MySQL: attacker.Database}[engine]
			db := openAs(t, s, attacker.Username, attacker.Password, dbname)
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			login := map[database.Engine]string{database.Postgres: "role/", database.MySQL: "user/"}[engine] + victim.Username
			for _, name := range []string{"database/" + victim.Database, login} {
				var took bool
				switch engine {
				case database.Postgres:
					sum := sha256.Sum256([]byte("landlord/" + name))
					err = conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1), true", int64(binary.BigEndian.Uint64(sum[:8]))).Scan(new(bool), &took)
				case database.MySQL:
					sum := sha256.Sum256([]byte(name))
					err = conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0) = 1", "landlord/"+hex.EncodeToString(sum[:16])).Scan(&took)
				}
				if err != nil || !took {
					t.Fatalf("the tenant's login could not take lock %s (%v): the test would prove nothing", name, err)
				}
			}

			// Well inside the 30 seconds a lock is waited for.
			quick, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			ensure(t, quick, p, victim)
			victim.Password = password(t)
			ensure(t, quick, p, victim)
			mustUse(t, quick, s, victim)
			if err := p.Drop(quick, victim); err != nil {
				t.Fatalf("purging the victim's database: %v", err)
			}
		})
	}
}

// TestNoTenantLoginReadsAnotherTenantsUID: which tenant owns a database or login is Landlord's
// bookkeeping, and every login on a shared server reads PostgreSQL's shared catalogs (object
// comments included) from its own database. The owners' UIDs must not be among what it reads,
// neither for accounts Landlord creates nor for those an earlier release marked with comments,
// which keep their owner.
func TestNoTenantLoginReadsAnotherTenantsUID(t *testing.T) {
	s := instance(t, database.Postgres).Server
	ctx := testContext(t)
	admin := openAs(t, s, s.AdminUser, s.AdminPassword, "postgres")
	p := open(t, s)
	fresh := newAccount(t, database.Postgres, p, "fresh")
	ensure(t, ctx, p, fresh)
	// An account an earlier release created: its markers are the comments of its login and
	// database.
	earlier := newAccount(t, database.Postgres, p, "earlier")
	ensure(t, ctx, p, earlier)
	marker := "'landlord:tenant=" + earlier.Owner + "'"
	for _, stmt := range []string{
		"DELETE FROM landlord.owners WHERE name IN ('" + earlier.Database + "', '" + earlier.Username + "')",
		"COMMENT ON DATABASE " + earlier.Database + " IS " + marker,
		"COMMENT ON ROLE " + earlier.Username + " IS " + marker,
	} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	earlier.Password = password(t)
	ensure(t, ctx, p, earlier)
	mustUse(t, ctx, s, earlier)

	t.Run("a login reads no UID in the server's shared catalogs", func(t *testing.T) {
		db := openAs(t, s, fresh.Username, fresh.Password, fresh.Database)
		rows, err := db.QueryContext(ctx, "SELECT description FROM pg_catalog.pg_shdescription")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var d string
			if err := rows.Scan(&d); err != nil {
				t.Fatal(err)
			}
			for _, owner := range []string{fresh.Owner, earlier.Owner} {
				if strings.Contains(d, owner) {
					t.Errorf("a tenant's login reads the comment %q, which names a tenant's UID", d)
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("an account marked by an earlier release keeps its owner", func(t *testing.T) {
		other := earlier
		other.Owner, other.Password = uid(t), password(t)
		mustBeForeign(t, p.Ensure(ctx, other), earlier.Owner)
	})

	// Once the markers are in the table, an administrator that may not use it must say so rather
	// than take every moved account for one Landlord did not create.
	t.Run("an administrator that may not use the owners table is refused with the grants it needs", func(t *testing.T) {
		limited := administrator(t, ctx, s, "nogrant", "CREATE ROLE %[1]s LOGIN CREATEROLE CREATEDB PASSWORD '%[2]s'")
		err := open(t, limited).Ensure(ctx, fresh)
		var foreign *database.ForeignError
		if err == nil || errors.As(err, &foreign) || !strings.Contains(err.Error(), "GRANT") {
			t.Fatalf("got %v, want an error naming the grants on landlord.owners", err)
		}
	})
}

// TestAnAdministratorWithoutTheOwnersTableProvisionsWithMarkersInComments: only the owner of
// `postgres` or a superuser may create Landlord's table there; another administrator, on a server
// where no table exists yet, keeps the markers in comments as before.
func TestAnAdministratorWithoutTheOwnersTableProvisionsWithMarkersInComments(t *testing.T) {
	s := ownPostgres(t)
	ctx := testContext(t)
	limited := administrator(t, ctx, s, "nomarks", "CREATE ROLE %[1]s LOGIN CREATEROLE CREATEDB PASSWORD '%[2]s'")
	lp := open(t, limited)
	acct := newAccount(t, database.Postgres, lp, "commented")
	ensure(t, ctx, lp, acct)
	mustUse(t, ctx, s, acct)
	other := acct
	other.Owner, other.Password = uid(t), password(t)
	mustBeForeign(t, lp.Ensure(ctx, other), acct.Owner)
}

// TestAnOwnersTableAnotherAdministratorControlsIsNotTrusted: an administrator less privileged
// than Landlord's, allowed to create in `postgres`, creates the owners table first and puts a
// trigger on it that would run with the rights of whoever writes a marker. Landlord's
// superuser administrator must refuse the table, not write to it.
func TestAnOwnersTableAnotherAdministratorControlsIsNotTrusted(t *testing.T) {
	s := ownPostgres(t)
	ctx := testContext(t)
	limited := administrator(t, ctx, s, "planter", "CREATE ROLE %[1]s LOGIN CREATEROLE CREATEDB PASSWORD '%[2]s'", "GRANT CREATE ON DATABASE postgres TO %[1]s")
	// Its provisioner runs first and creates the schema and table, as its own. The server goes
	// with the test, so its account is not dropped.
	ensure(t, ctx, open(t, limited), database.Account{Username: "t_first_app", Database: "t_first_app", Password: password(t), Owner: uid(t)})
	planter := openAs(t, s, limited.AdminUser, limited.AdminPassword, "postgres")
	for _, stmt := range []string{
		"CREATE FUNCTION landlord.escalate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'ALTER ROLE " + limited.AdminUser + " SUPERUSER'; RETURN NEW; END $$",
		"CREATE TRIGGER escalate BEFORE INSERT OR UPDATE ON landlord.owners FOR EACH ROW EXECUTE FUNCTION landlord.escalate()",
	} {
		if _, err := planter.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	p := open(t, s)
	victim := database.Account{Username: "t_victim_app", Database: "t_victim_app", Password: password(t), Owner: uid(t)}
	if err := p.Ensure(ctx, victim); err == nil || !strings.Contains(err.Error(), "landlord.owners") {
		t.Errorf("Landlord's administrator used an owners table another administrator controls: %v", err)
	}
	admin := openAs(t, s, s.AdminUser, s.AdminPassword, "postgres")
	var super bool
	if err := admin.QueryRowContext(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = $1", limited.AdminUser).Scan(&super); err != nil {
		t.Fatal(err)
	}
	if super {
		t.Error("the other administrator made itself a superuser through Landlord's session")
	}
}
