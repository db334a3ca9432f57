package backup_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// A Job backs a database up and restores it after the tenant changed it, each in its two steps
// as the Job's pod runs them: the rows and tables
// are those of the backup again, the table made since is gone, and the tenant's login still
// uses its database. The Job reaches the server over TLS, verified against the server's CA.
func TestRestoreBringsBackTheDatabaseAsItWasBackedUp(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			tools := clientTools(t)
			tn := newTenant(t, engine)
			tn.exec(t, schema[engine]...)
			want := tn.contents(t)
			st := newStore(t)

			plan := backup.Plan{Operation: backup.OpBackup, Objects: st.objects, Location: location(t),
				Tenant: "acme", TenantUID: st.tenantUID, Backup: "nightly", TenantKey: st.tenantKey,
				Databases: []backup.Database{{Name: "app", Target: tn.verifiedTarget()}}}
			var log bytes.Buffer
			g.Expect(runSteps(t, plan, tools, &log)).To(Succeed())
			g.Expect(log.String()).To(HavePrefix("dumped database app (" + string(engine)))
			g.Expect(log.String()).To(ContainSubstring("\nbacked up database app (" + string(engine)))
			g.Expect(strings.Count(log.String(), "\n")).To(Equal(2), "one line per database and step")

			tn.exec(t, changes...)
			g.Expect(tn.contents(t)).NotTo(Equal(want))

			plan.Operation = backup.OpRestore
			log.Reset()
			g.Expect(runSteps(t, plan, tools, &log)).To(Succeed())
			g.Expect(log.String()).To(HavePrefix("fetched database app from " + plan.Location + "app.dump"))
			g.Expect(log.String()).To(ContainSubstring("\nrestored database app ("))
			g.Expect(log.String()).NotTo(ContainSubstring(tn.acct.Password))
			g.Expect(tn.contents(t)).To(Equal(want))

			g.Expect(dbtest.CanUse(testContext(t), tn.inst.Server, tn.acct)).To(Succeed())
			if engine == database.Postgres {
				g.Expect(tn.strings(t, "SELECT has_database_privilege(current_database(), 'CREATE') AND has_database_privilege(current_database(), 'CONNECT')"+
					" AND has_database_privilege(current_database(), 'TEMPORARY')")).
					To(Equal([]string{`"true"`}), "the login keeps its rights on its database")
			}
		})
	}
}

// A backup restored into another tenant's database (another account on the same server) holds
// the same rows, and nothing of the source's login: every object is the clone's login's, and
// the source's login cannot reach the clone.
func TestCloneIntoAnotherAccountBelongsToThatAccountAlone(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			tools := clientTools(t)
			source := newTenant(t, engine)
			source.exec(t, schema[engine]...)
			want := source.contents(t)
			clone := newTenant(t, engine)
			st := newStore(t)
			plan, _ := backupOf(t, st, tools, source)

			restore := st.restorePlan(plan.Location, clone.target())
			restore.Clone = true
			g.Expect(backup.Restore(testContext(t), st.Store, tools, restore)).To(Succeed())

			g.Expect(clone.contents(t)).To(Equal(want))
			if engine == database.Postgres {
				g.Expect(clone.strings(t, "SELECT c.relname, pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"+
					" WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' AND pg_get_userbyid(c.relowner) <> current_user"+
					" UNION ALL SELECT p.proname, pg_get_userbyid(p.proowner) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"+
					" WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND pg_get_userbyid(p.proowner) <> current_user"+
					" UNION ALL SELECT nspname, pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'reports' AND pg_get_userbyid(nspowner) <> current_user")).
					To(BeEmpty(), "objects not owned by the clone's login")
				g.Expect(clone.strings(t, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ('public', 'reports')")).
					NotTo(Equal([]string{`"0"`}))
			} else {
				definers := clone.strings(t, "SELECT DEFINER FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ?"+
					" UNION ALL SELECT DEFINER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?"+
					" UNION ALL SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?"+
					" UNION ALL SELECT DEFINER FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?",
					clone.acct.Database, clone.acct.Database, clone.acct.Database, clone.acct.Database)
				g.Expect(definers).To(HaveLen(4), "a view, a trigger, a routine and an event")
				g.Expect(definers).To(HaveEach(`"` + clone.acct.Username + `@%"`))
				// An event would run the source's code as the clone's login on the server's own
				// schedule: a copy's events are made disabled, for the clone's tenant to enable.
				g.Expect(clone.strings(t, "SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?", clone.acct.Database)).
					To(Equal([]string{`"DISABLED"`}))
			}
			g.Expect(dbtest.CanConnect(testContext(t), source.inst.Server, source.acct.Username, source.acct.Password, clone.acct.Database)).
				NotTo(Succeed(), "the source's login reaches the clone")
			g.Expect(dbtest.CanUse(testContext(t), clone.inst.Server, clone.acct)).To(Succeed())
		})
	}
}

// A restore that cannot be right is refused before any database is changed: a dump of another
// engine, of another major version of the server, or of a database the backup does not hold.
func TestRestoreRefusesADumpTheTargetCannotTake(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			tools := clientTools(t)
			other := database.MySQL
			if engine == database.MySQL {
				other = database.Postgres
			}
			tn := newTenant(t, engine)
			tn.exec(t, schema[engine]...)
			elsewhere := newTenant(t, other)
			st := newStore(t)
			plan, m := backupOf(t, st, tools, tn)
			tn.exec(t, changes...)
			before := tn.contents(t)
			realVersion := m.Databases[0].ServerVersion
			otherMajor := map[database.Engine]string{database.Postgres: "9.6.24", database.MySQL: "10.6.16-MariaDB-0+deb12u1"}[engine]

			for _, tc := range []struct {
				name    string
				restore backup.Plan
				edit    func(*backup.Manifest)
				want    []string
			}{{
				name:    "a dump into a server of the other engine is refused, naming both",
				restore: st.restorePlan(plan.Location, elsewhere.target()),
				want:    []string{"database app", "a " + string(engine) + " dump", "a " + string(other) + " server"},
			}, {
				name:    "a dump of another major version is refused, naming both versions",
				restore: st.restorePlan(plan.Location, tn.target()),
				edit:    func(m *backup.Manifest) { m.Databases[0].ServerVersion = otherMajor },
				want:    []string{"database app", otherMajor, realVersion},
			}, {
				name: "a database the backup does not hold is refused, naming it",
				restore: backup.Plan{Operation: backup.OpRestore, Location: plan.Location, TenantKey: st.tenantKey,
					Databases: []backup.Database{{Name: "reports", Target: tn.target()}}},
				want: []string{"database reports", "holds no dump of it (it holds app)"},
			}} {
				t.Run(tc.name, func(t *testing.T) {
					g := NewWithT(t)
					if tc.edit != nil {
						manifest := st.raw(t, plan.Location+backup.ManifestName)
						defer st.putRaw(t, plan.Location+backup.ManifestName, manifest)
						edited := *m
						edited.Databases = append([]backup.DumpEntry(nil), m.Databases...)
						tc.edit(&edited)
						data, err := json.Marshal(edited)
						g.Expect(err).NotTo(HaveOccurred())
						st.putRaw(t, plan.Location+backup.ManifestName, data)
					}
					err := backup.Restore(testContext(t), st.Store, tools, tc.restore)
					g.Expect(err).To(HaveOccurred())
					for _, w := range tc.want {
						g.Expect(err.Error()).To(ContainSubstring(w))
					}
					g.Expect(tn.contents(t)).To(Equal(before))
				})
			}
		})
	}
}

// A PostgreSQL restore replaces the database's content in one transaction: one that fails
// half-way (here on a schema the server's administrator made where the dump makes one) leaves
// the database as it was, the tenant's objects and rows included, and says why.
func TestPostgresRestoreThatFailsHalfWayChangesNothing(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	tn := newTenant(t, database.Postgres)
	tn.exec(t, schema[database.Postgres]...)
	tn.addNoise(t) // psql stops while pg_restore still has more to write than the pipe holds
	st := newStore(t)
	plan, _ := backupOf(t, st, tools, tn)
	tn.exec(t, changes...)
	tn.exec(t, "DROP SCHEMA reports CASCADE")
	admin, err := dbtest.OpenDB(tn.inst.Server, tn.inst.Server.AdminUser, tn.inst.Server.AdminPassword, tn.acct.Database)
	g.Expect(err).NotTo(HaveOccurred())
	defer admin.Close()
	_, err = admin.ExecContext(testContext(t), "CREATE SCHEMA reports")
	g.Expect(err).NotTo(HaveOccurred())
	before := tn.contents(t)

	err = backup.Restore(testContext(t), st.Store, tools, st.restorePlan(plan.Location, tn.target()))
	g.Expect(err).To(MatchError(And(ContainSubstring("database app"), ContainSubstring("psql"), ContainSubstring(`schema "reports" already exists`))))
	g.Expect(tn.contents(t)).To(Equal(before))
}

// A MariaDB restore empties the database and loads the dump in one session of the client: a
// client that cannot run (here, one that exits at once, as one refused a login at its connection
// limit does) leaves every table and row where it was.
func TestMariaDBRestoreWhoseClientCannotRunChangesNothing(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	tn := newTenant(t, database.MySQL)
	tn.exec(t, schema[database.MySQL]...)
	st := newStore(t)
	plan, _ := backupOf(t, st, tools, tn)
	tn.exec(t, changes...)
	before := tn.contents(t)

	tools.MySQL = "/bin/false"
	g.Expect(backup.Restore(testContext(t), st.Store, tools, st.restorePlan(plan.Location, tn.target()))).NotTo(Succeed())
	g.Expect(tn.contents(t)).To(Equal(before))
}

// A dump is the tenant's data, read back by MariaDB's client: a command of the client in it (a
// crafted name that broke out of its quoting, CVE-2024-21096's way) or a LOAD DATA LOCAL must
// reach nothing of the Job's machine.
func TestARestoredMySQLDumpCannotRunCommandsOrReadTheJobsFiles(t *testing.T) {
	tools := clientTools(t)
	tn := newTenant(t, database.MySQL)
	secret := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(secret, []byte("the Job's plan"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, script string }{
		{"a shell command", "\\! touch " + secret + ".pwned\n"},
		{"a file sourced", "\\. " + secret + "\n"},
		{"a file loaded as data", "CREATE TABLE stolen (line TEXT);\nLOAD DATA LOCAL INFILE '" + secret + "' INTO TABLE stolen;\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := backup.RestoreMySQLScript(testContext(t), tools, tn.target(), tc.script)
			if err == nil {
				t.Fatal("the script ran")
			}
			if _, statErr := os.Stat(secret + ".pwned"); statErr == nil {
				t.Fatal("the shell command ran")
			}
			if strings.Contains(err.Error(), "the Job's plan") {
				t.Fatalf("the file's content reached the error: %v", err)
			}
		})
	}
}
