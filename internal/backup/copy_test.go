package backup_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// A database copied to another server of the same engine, as a move between servers copies
// it, holds every row of its source, table by table, on a server of the same version or a newer
// one (Debian 12's to Debian 13's); a copy to an older server is refused before the target is
// touched; and the tenant's login uses its copy as it used its source.
func TestACopyToAnotherServerHoldsEveryRow(t *testing.T) {
	if servers[database.Postgres] == nil {
		t.Skip("no test servers in -short mode")
	}
	releases, err := dbtest.Releases()
	if err != nil {
		t.Fatal(err)
	}
	older, newest := releases[0], releases[len(releases)-1]
	// The newest release's clients are as new as every server here.
	tools := releaseTools(t, newest)
	serversOf := map[string]map[database.Engine]*dbtest.Instance{older.Name: servers}
	if newest != older {
		serversOf[newest.Name] = map[database.Engine]*dbtest.Instance{}
		for _, engine := range engines {
			start := newest.StartPostgres
			if engine == database.MySQL {
				start = newest.StartMariaDB
			}
			inst, err := start()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inst.Close() })
			serversOf[newest.Name][engine] = inst
		}
	}
	for _, engine := range engines {
		for _, tc := range []struct {
			from, to string
			refused  bool
		}{
			{from: older.Name, to: older.Name},
			{from: older.Name, to: newest.Name},
			{from: newest.Name, to: older.Name, refused: newest != older},
		} {
			name := fmt.Sprintf("%s from %s's server to %s's", engine, tc.from, tc.to)
			if tc.refused {
				name += " is refused: the target is older"
			}
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				source := newTenantOn(t, serversOf[tc.from][engine])
				source.exec(t, schema[engine]...)
				source.addNoise(t)
				target := newTenantOn(t, serversOf[tc.to][engine])
				target.exec(t, "CREATE TABLE stale (id INT PRIMARY KEY)", "INSERT INTO stale VALUES (1)")
				before := target.contents(t)

				rep, err := backup.Copy(testContext(t), tools, source.target(), target.target(), t.TempDir())
				if tc.refused {
					g.Expect(err).To(MatchError(ContainSubstring("same or a newer version")))
					g.Expect(target.contents(t)).To(Equal(before), "the target is untouched")
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(rep.Bytes).To(BeNumerically(">", 0))
				g.Expect(rep.Tables).To(ContainElement(HaveField("Rows", BeEquivalentTo(2000))))
				want, err := backup.Contents(testContext(t), source.target())
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(rep.Tables).To(Equal(want))
				g.Expect(target.contents(t)).To(Equal(source.contents(t)), "tables, rows, routines, triggers and events alike")
				g.Expect(dbtest.CanUse(testContext(t), target.inst.Server, target.acct)).To(Succeed())
			})
		}
	}
}

// A Job's copy step copies each database of its plan to the database named in its place,
// through the plan as the Job reads it (JSON); a copy plan that names a store or a key, or
// places a database under another's name, is refused before anything is read.
func TestACopyJobCopiesEachDatabaseToItsPlace(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	engine := engines[0]
	source := newTenant(t, engine)
	source.exec(t, schema[engine]...)
	target := newTenant(t, engine)
	plan := backup.Plan{Operation: backup.OpCopy,
		Databases: []backup.Database{{Name: "app", Target: source.target()}},
		CopyTo:    []backup.Database{{Name: "app", Target: target.target()}}}
	data, err := json.Marshal(plan)
	g.Expect(err).NotTo(HaveOccurred())
	var read backup.Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	g.Expect(dec.Decode(&read)).To(Succeed())

	var log bytes.Buffer
	g.Expect(backup.RunJob(testContext(t), read, tools, t.TempDir(), &log)).To(Succeed())
	g.Expect(log.String()).To(HavePrefix("copied database app from " + source.acct.Database))
	g.Expect(log.String()).NotTo(ContainSubstring(source.acct.Password))
	g.Expect(target.contents(t)).To(Equal(source.contents(t)))

	for _, tc := range []struct {
		name    string
		change  func(p *backup.Plan)
		refused string
	}{
		{"a key", func(p *backup.Plan) { p.TenantKey = []byte("key") }, "must not hold"},
		{"another database's place", func(p *backup.Plan) { p.CopyTo[0].Name = "legacy" }, "to legacy's place"},
		{"no place", func(p *backup.Plan) { p.CopyTo = nil }, "1 databases and 0 to copy them to"},
	} {
		t.Run("a copy plan naming "+tc.name+" is refused", func(t *testing.T) {
			bad := read
			bad.CopyTo = append([]backup.Database(nil), read.CopyTo...)
			tc.change(&bad)
			NewWithT(t).Expect(backup.RunJob(testContext(t), bad, tools, t.TempDir(), &log)).To(MatchError(ContainSubstring(tc.refused)))
		})
	}
}
