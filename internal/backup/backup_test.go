package backup_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
)

// A dump larger than the plan allows fails with a message naming the database and the limit,
// and leaves nothing in the store: no manifest, and no part of the dump.
func TestBackupOverTheSizeLimitLeavesNothing(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			tools := clientTools(t)
			tn := newTenant(t, engine)
			tn.exec(t, schema[engine]...)
			tn.addNoise(t)
			st := newStore(t)
			const limit = 16 << 10
			plan := backup.Plan{Operation: backup.OpBackup, Location: location(t), MaxBytes: limit, TenantKey: st.tenantKey,
				Databases: []backup.Database{{Name: "app", Target: tn.target()}}}

			_, err := backup.Backup(testContext(t), st.Store, tools, plan)
			g.Expect(err).To(MatchError(And(ContainSubstring("database app"), ContainSubstring(fmt.Sprint(limit)))))
			g.Expect(err.Error()).NotTo(ContainSubstring(tn.acct.Password))
			_, err = st.Manifest(testContext(t), plan.Location)
			g.Expect(err).To(MatchError(backup.ErrNoManifest))
			g.Expect(st.keys(t, plan.Location)).To(BeEmpty())
		})
	}
}

// The manifest is written only once every database is dumped: a backup whose second database
// fails removes the first one's dump and writes no manifest, so it is no backup at all.
func TestBackupWhoseSecondDatabaseFailsLeavesNoManifest(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			tools := clientTools(t)
			tn := newTenant(t, engine)
			tn.exec(t, schema[engine]...)
			st := newStore(t)
			broken := tn.target()
			broken.Password = "not-" + randomHex(t, 8)
			plan := backup.Plan{Operation: backup.OpBackup, Location: location(t), TenantKey: st.tenantKey,
				Databases: []backup.Database{{Name: "app", Target: tn.target()}, {Name: "reports", Target: broken}}}

			_, err := backup.Backup(testContext(t), st.Store, tools, plan)
			g.Expect(err).To(MatchError(ContainSubstring("database reports")))
			g.Expect(err.Error()).NotTo(ContainSubstring(broken.Password))
			_, err = st.Manifest(testContext(t), plan.Location)
			g.Expect(err).To(MatchError(backup.ErrNoManifest))
			g.Expect(st.keys(t, plan.Location)).To(BeEmpty(), "the first database's dump is removed")
		})
	}
}

// A whole backup holds one object per database and the manifest; its manifest says what the
// dumps are; a second run of the same Job finds it whole and leaves it; and Delete removes it
// all, leaving the backups beside it.
func TestBackupIsWholeUntilDeleted(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	tn := newTenant(t, engines[0])
	tn.exec(t, schema[engines[0]]...)
	st := newStore(t)
	plan, m := backupOf(t, st, tools, tn)
	other, _ := backupOf(t, st, tools, tn)

	g.Expect(st.keys(t, plan.Location)).To(ConsistOf(plan.Location+"app.dump", plan.Location+backup.ManifestName))
	g.Expect(m.Format).To(Equal(2))
	g.Expect(m.Tenant).To(Equal("acme"))
	g.Expect(m.Databases).To(HaveLen(1))
	e := m.Databases[0]
	g.Expect(e.Name).To(Equal("app"))
	g.Expect(e.Object).To(Equal("app.dump"))
	g.Expect(e.SHA256).To(HaveLen(64))
	g.Expect(e.Size).To(BeNumerically(">", 0))
	g.Expect(e.StoredSize).To(BeNumerically("==", len(st.raw(t, plan.Location+"app.dump"))))
	g.Expect(e.StoredSize).To(BeNumerically(">", e.Size), "the envelope's header and tags")
	g.Expect(m.Finished).NotTo(BeTemporally("<", m.Started))

	stored := st.raw(t, plan.Location+"app.dump")
	again, err := backup.Backup(testContext(t), st.Store, tools, plan)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(m))
	g.Expect(st.raw(t, plan.Location+"app.dump")).To(Equal(stored), "the whole backup is not taken again")

	g.Expect(st.Delete(testContext(t), plan.Location)).To(Succeed())
	_, err = st.Manifest(testContext(t), plan.Location)
	g.Expect(err).To(MatchError(backup.ErrNoManifest))
	g.Expect(st.keys(t, plan.Location)).To(BeEmpty())
	g.Expect(st.keys(t, other.Location)).To(HaveLen(2))

	g.Expect(st.Delete(testContext(t), "")).To(MatchError(ContainSubstring("must be a folder")), "the whole bucket")
}

// A stored dump that was changed in any way, or moved to another place in the store, is
// refused before the target is touched, with a message naming the database and the object.
func TestRestoreRefusesATamperedDump(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			tools := clientTools(t)
			tn := newTenant(t, engine)
			tn.exec(t, schema[engine]...)
			st := newStore(t)
			plan, _ := backupOf(t, st, tools, tn)
			tn.exec(t, changes...)
			before := tn.contents(t)
			dumpKey := plan.Location + "app.dump"
			stored := st.raw(t, dumpKey)
			manifest := st.raw(t, plan.Location+backup.ManifestName)

			for _, tc := range []struct {
				name string
				// tamper changes the store and returns the backup's location to restore from.
				tamper func(t *testing.T) string
			}{{
				name: "a dump with one byte flipped is refused",
				tamper: func(t *testing.T) string {
					flipped := append([]byte(nil), stored...)
					flipped[len(flipped)/2] ^= 0x01
					st.putRaw(t, dumpKey, flipped)
					return plan.Location
				},
			}, {
				name: "a dump cut short is refused",
				tamper: func(t *testing.T) string {
					st.putRaw(t, dumpKey, stored[:len(stored)-100])
					return plan.Location
				},
			}, {
				name: "a dump overwritten by something else is refused",
				tamper: func(t *testing.T) string {
					st.putRaw(t, dumpKey, []byte("-- a script that drops everything\n"))
					return plan.Location
				},
			}, {
				name: "a backup moved to another place in the store is refused",
				tamper: func(t *testing.T) string {
					moved := location(t)
					st.putRaw(t, moved+"app.dump", stored)
					st.putRaw(t, moved+backup.ManifestName, manifest)
					return moved
				},
			}} {
				t.Run(tc.name, func(t *testing.T) {
					g := NewWithT(t)
					from := tc.tamper(t)
					defer st.putRaw(t, dumpKey, stored)
					err := backup.Restore(testContext(t), st.Store, tools, st.restorePlan(from, tn.target()))
					g.Expect(err).To(MatchError(And(ContainSubstring("database app"), ContainSubstring(from+"app.dump"))))
					g.Expect(err.Error()).NotTo(ContainSubstring(tn.acct.Password))
					g.Expect(tn.contents(t)).To(Equal(before), "the target was changed")
				})
			}
		})
	}
}

// A Job reaches its server under each TLS mode a DatabaseServer can ask for, and under
// verify-full refuses a server its CA bundle does not vouch for.
func TestBackupReachesTheServerUnderEachTLSMode(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			tools := clientTools(t)
			tn := newTenant(t, engine)
			tn.exec(t, schema[engine]...)
			st := newStore(t)
			otherCA := servers[database.MySQL].CA
			if engine == database.MySQL {
				otherCA = servers[database.Postgres].CA
			}
			for _, tc := range []struct {
				name string
				tls  database.TLSMode
				ca   []byte
				fail bool
			}{
				{name: "without TLS", tls: database.TLSDisable},
				{name: "encrypted without verifying", tls: database.TLSRequire},
				{name: "verified against the server's CA", tls: database.TLSVerifyFull, ca: tn.inst.CA},
				{name: "verified against another CA, which fails", tls: database.TLSVerifyFull, ca: otherCA, fail: true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					g := NewWithT(t)
					target := tn.target()
					target.TLS, target.CABundle = tc.tls, tc.ca
					plan := backup.Plan{Location: location(t), TenantKey: st.tenantKey, Databases: []backup.Database{{Name: "app", Target: target}}}
					m, err := backup.Backup(testContext(t), st.Store, tools, plan)
					if tc.fail {
						g.Expect(err).To(MatchError(ContainSubstring("certificate")))
						g.Expect(st.keys(t, plan.Location)).To(BeEmpty())
						return
					}
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(m.Databases).To(HaveLen(1))
				})
			}
		})
	}
}

// A server newer than the image's client is refused before anything is written, saying so: the
// client here is one that reports an older release than the real server's (a script, since the
// machine has one PostgreSQL and one MariaDB release), and would fail the test were it run to dump.
func TestBackupOfAServerNewerThanItsClientFailsFirstSayingWhy(t *testing.T) {
	for _, tc := range []struct {
		engine  database.Engine
		version string
		says    string
	}{
		{database.Postgres, "pg_dump (PostgreSQL) 12.22", "newer than this image's old-client (PostgreSQL 12)"},
		{database.MySQL, "mariadb-dump  Ver 10.19 Distrib 10.5.27-MariaDB, for debian-linux-gnu (x86_64)", "newer than this image's old-client (MariaDB 10.5)"},
	} {
		t.Run(string(tc.engine), func(t *testing.T) {
			g := NewWithT(t)
			tools := clientTools(t)
			old := filepath.Join(t.TempDir(), "old-client")
			script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '" + tc.version + "'; exit 0; fi\necho 'ran to dump' >&2; exit 3\n"
			g.Expect(os.WriteFile(old, []byte(script), 0o755)).To(Succeed())
			if tc.engine == database.Postgres {
				tools.PgDump = old
			} else {
				tools.MySQLDump = old
			}
			tn := newTenant(t, tc.engine)
			st := newStore(t)
			plan := backup.Plan{Operation: backup.OpBackup, Location: location(t), TenantKey: st.tenantKey,
				Databases: []backup.Database{{Name: "app", Target: tn.target()}}}
			_, err := backup.Backup(testContext(t), st.Store, tools, plan)
			g.Expect(err).To(MatchError(ContainSubstring(tc.says)))
			g.Expect(err.Error()).NotTo(ContainSubstring("ran to dump"))
			g.Expect(st.keys(t, plan.Location)).To(BeEmpty())
		})
	}
}
