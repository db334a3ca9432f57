package tenantbackup_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// An export is the way out of Landlord: a customer's data handed over at offboarding, or a
// restore in a disaster with nothing of Landlord's left. What it promises (docs/tenant-backups.md,
// Exporting a backup) is that the engines' own tools restore it, as they are, with no key and
// no plan: this test does exactly that, into databases Landlord never made.
func TestAnExportedBackupRestoresWithTheEnginesOwnTools(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	createTenant(t, newTenant("ex-acme", withDatabases))
	for _, db := range []string{"app", "legacy"} {
		execAs(g, "ex-acme", db,
			"CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(64))",
			"INSERT INTO notes VALUES (1, 'handed over'), (2, 'intact')")
	}
	createBackup(t, t, "ex-acme-final", "ex-acme")
	runJob(t, waitBackup(t, "ex-acme-final", tenancyv1alpha1.BackupRunning).Status.Job)
	b := waitBackup(t, "ex-acme-final", tenancyv1alpha1.BackupSucceeded)

	dir := t.TempDir()
	m, err := backup.Export(ctx, backupStore, b.Status.Location, backup.DirSink(dir))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Databases).To(HaveLen(2))
	g.Expect(filepath.Join(dir, "manifest.json")).To(BeAnExistingFile())
	tools := backup.FindTools()

	t.Run("pg_restore loads the PostgreSQL dump into a database of its own", func(t *testing.T) {
		g := NewWithT(t)
		s := servers[database.Postgres].Server
		admin, err := dbtest.OpenDB(s, s.AdminUser, s.AdminPassword, "postgres")
		g.Expect(err).NotTo(HaveOccurred())
		defer admin.Close()
		_, err = admin.Exec("CREATE DATABASE exported_app")
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE exported_app WITH (FORCE)") })
		cmd := exec.CommandContext(ctx, tools.PgRestore, "--no-owner", "--no-acl", "--exit-on-error",
			"--host", s.Host, "--port", strconv.Itoa(int(s.Port)), "--username", s.AdminUser, "--dbname", "exported_app",
			filepath.Join(dir, "app.dump"))
		cmd.Env = append(os.Environ(), "PGPASSWORD="+s.AdminPassword, "PGSSLMODE=disable")
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		g.Expect(notesIn(g, s, "exported_app")).To(Equal([]string{"handed over", "intact"}))
	})

	t.Run("mariadb loads the MariaDB dump into a database of its own", func(t *testing.T) {
		g := NewWithT(t)
		s := servers[database.MySQL].Server
		admin, err := dbtest.OpenDB(s, s.AdminUser, s.AdminPassword, "")
		g.Expect(err).NotTo(HaveOccurred())
		defer admin.Close()
		_, err = admin.Exec("CREATE DATABASE exported_legacy")
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE exported_legacy") })
		dump, err := os.Open(filepath.Join(dir, "legacy.sql"))
		g.Expect(err).NotTo(HaveOccurred())
		defer dump.Close()
		cmd := exec.CommandContext(ctx, tools.MySQL, "--protocol=TCP", "--host="+s.Host, "--port="+strconv.Itoa(int(s.Port)),
			"--user="+s.AdminUser, "--skip-ssl", "exported_legacy")
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+s.AdminPassword)
		cmd.Stdin = dump
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		g.Expect(notesIn(g, s, "exported_legacy")).To(Equal([]string{"handed over", "intact"}))
	})
}

// notesIn reads the notes table of a database as the server's administrator.
func notesIn(g Gomega, s database.Server, db string) []string {
	conn, err := dbtest.OpenDB(s, s.AdminUser, s.AdminPassword, db)
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	return notes(g, conn)
}
