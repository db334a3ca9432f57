package backup_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// Each release's client tools back up and restore the servers of every release the machine has
// (Debian 12's PostgreSQL 15 and MariaDB 10.11, and Debian 13's PostgreSQL 17 and MariaDB 11.8,
// which hack/install-databases.sh unpacks into bin/debian/trixie), and refuse, before dumping, a
// server newer than themselves, naming both versions. This is the backup image's promise: its
// clients (Debian 13's) dump every server of those versions and older.
func TestEachReleasesClientsAgainstEachReleasesServers(t *testing.T) {
	if servers[database.Postgres] == nil {
		t.Skip("no test servers in -short mode")
	}
	releases, err := dbtest.Releases()
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) < 2 {
		if v, set := os.LookupEnv("NEWER_DEBIAN"); set && v == "" {
			t.Skip("NEWER_DEBIAN is empty: only the machine's own servers")
		}
		t.Fatal("only the machine's own database servers: run hack/install-databases.sh, which unpacks a newer Debian release's into bin/debian")
	}
	type side struct {
		release dbtest.Release
		tools   backup.Tools
		// version is each engine's client release: PostgreSQL's major, MariaDB's major.minor.
		version map[database.Engine]string
		servers map[database.Engine]*dbtest.Instance
	}
	var sides []side
	for _, r := range releases {
		s := side{release: r, tools: releaseTools(t, r), servers: map[database.Engine]*dbtest.Instance{}}
		s.version = map[database.Engine]string{
			database.Postgres: clientRelease(t, s.tools.PgDump, `\(PostgreSQL\) (\d+)`),
			database.MySQL:    clientRelease(t, s.tools.MySQLDump, `(\d+\.\d+)\.\d+-MariaDB`),
		}
		if r == dbtest.Machine {
			s.servers = servers
		} else {
			for _, engine := range engines {
				start := r.StartPostgres
				if engine == database.MySQL {
					start = r.StartMariaDB
				}
				inst, err := start()
				if err != nil {
					t.Fatalf("%s's %s server: %v", r.Name, engine, err)
				}
				t.Cleanup(func() { _ = inst.Close() })
				s.servers[engine] = inst
			}
		}
		sides = append(sides, s)
	}
	if sides[0].version[database.Postgres] == sides[1].version[database.Postgres] {
		t.Fatalf("%s and %s have the same PostgreSQL (%s): nothing to compare", sides[0].release.Name, sides[1].release.Name, sides[0].version[database.Postgres])
	}

	for _, engine := range engines {
		for _, server := range sides {
			for _, client := range sides {
				inst := server.servers[engine]
				full, err := inst.Version(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				serverVersion := releaseOf(engine, full)
				clientVersion := client.version[engine]
				product := map[database.Engine]string{database.Postgres: "PostgreSQL", database.MySQL: "MariaDB"}[engine]
				name := fmt.Sprintf("%s %s's clients on a %s %s server (%s)", product, clientVersion, product, serverVersion, server.release.Name)
				t.Run(name, func(t *testing.T) {
					g := NewWithT(t)
					tn := newTenantOn(t, inst)
					tn.exec(t, schema[engine]...)
					tn.addNoise(t)
					want := tn.contents(t)
					st := newStore(t)
					plan := backup.Plan{Operation: backup.OpBackup, Location: location(t), TenantUID: st.tenantUID, TenantKey: st.tenantKey,
						Databases: []backup.Database{{Name: "app", Target: tn.target()}}}
					m, err := backup.Backup(testContext(t), st.Store, client.tools, plan)

					if newerRelease(serverVersion, clientVersion) {
						g.Expect(err).To(MatchError(And(
							ContainSubstring("newer than this image's"),
							ContainSubstring(serverVersion),
							ContainSubstring(clientVersion),
						)), "a server newer than the client is refused, naming both")
						g.Expect(st.keys(t, plan.Location)).To(BeEmpty(), "nothing is stored")
						return
					}
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(m.Databases).To(HaveLen(1))
					g.Expect(m.Databases[0].ServerVersion).To(HavePrefix(serverVersion))

					tn.exec(t, changes...)
					g.Expect(tn.contents(t)).NotTo(Equal(want))
					g.Expect(backup.Restore(testContext(t), st.Store, client.tools, st.restorePlan(plan.Location, tn.target()))).To(Succeed())
					g.Expect(tn.contents(t)).To(Equal(want), "the restore brings back what was backed up")
				})
			}
		}
	}
}

// releaseTools are a release's client tools, as a backup image of it carries them.
func releaseTools(t *testing.T, r dbtest.Release) backup.Tools {
	t.Helper()
	if r == dbtest.Machine {
		return clientTools(t)
	}
	pg, err := r.PostgresBin()
	if err != nil {
		t.Fatal(err)
	}
	tools := backup.Tools{
		PgDump:    filepath.Join(pg, "pg_dump"),
		PgRestore: filepath.Join(pg, "pg_restore"),
		Psql:      filepath.Join(pg, "psql"),
		MySQLDump: r.Program("mariadb-dump"),
		MySQL:     r.Program("mariadb"),
	}
	if tools.MySQLDump == "" || tools.MySQL == "" {
		t.Fatalf("%s has no mariadb-dump or mariadb: run hack/install-databases.sh again", r.Name)
	}
	return tools
}

// clientRelease reads a tool's release from its --version line.
func clientRelease(t *testing.T, tool, pattern string) string {
	t.Helper()
	out, err := exec.Command(tool, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", tool, err)
	}
	m := regexp.MustCompile(pattern).FindSubmatch(out)
	if m == nil {
		t.Fatalf("%s --version said %q", tool, out)
	}
	return string(m[1])
}

// releaseOf is the part of a server's version a client is matched against: PostgreSQL's major,
// MariaDB's major.minor.
func releaseOf(engine database.Engine, version string) string {
	parts := strings.SplitN(strings.Fields(version)[0], ".", 3)
	if engine == database.Postgres {
		return parts[0]
	}
	return parts[0] + "." + parts[1]
}

// newerRelease reports whether release a ("17", "11.8") comes after b.
func newerRelease(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		x, y := 0, 0
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x > y
		}
	}
	return false
}
