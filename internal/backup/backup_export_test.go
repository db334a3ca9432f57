package backup_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
)

// An export is the customer's data for any tool: each dump decrypted as its engine's tool wrote
// it, restored here by the engines' own clients (no Landlord code) into another database, which
// then holds what the backed-up one held.
func TestAnExportedBackupRestoresWithTheEnginesOwnTools(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			tools := clientTools(t)
			tn := newTenant(t, engine)
			tn.exec(t, schema[engine]...)
			want := tn.contents(t)
			st := newStore(t)
			plan, m := backupOf(t, st, tools, tn)
			// The export reads the tenant's key through the store's key-encryption key, as an
			// administrator's landlordctl does: nothing of a Job's plan.
			dir := filepath.Join(t.TempDir(), "export")
			got, err := backup.Export(testContext(t), st.Store, plan.Location, backup.DirSink(dir))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(m))
			file := filepath.Join(dir, backup.ExportName(m.Databases[0]))
			info, err := os.Stat(file)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(info.Size()).To(Equal(m.Databases[0].Size))
			g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "a customer's data in the clear")
			var manifest backup.Manifest
			body, err := os.ReadFile(filepath.Join(dir, backup.ManifestName))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(json.Unmarshal(body, &manifest)).To(Succeed())
			g.Expect(manifest.TenantUID).To(Equal(st.tenantUID))

			into := newTenant(t, engine)
			s := into.inst.Server
			var cmd *exec.Cmd
			if engine == database.Postgres {
				cmd = exec.Command(tools.PgRestore, "--no-owner", "--no-acl", "--exit-on-error", "-d", into.acct.Database, file)
				cmd.Env = []string{"PGHOST=" + s.Host, "PGPORT=" + strconv.Itoa(int(s.Port)), "PGUSER=" + into.acct.Username,
					"PGPASSWORD=" + into.acct.Password, "PGSSLMODE=disable", "HOME=" + t.TempDir()}
			} else {
				// Its views, routines and triggers name the backed-up login as their definer: an
				// administrator loads them (docs/tenant-backups.md says how else).
				f, err := os.Open(file)
				g.Expect(err).NotTo(HaveOccurred())
				defer f.Close()
				cmd = exec.Command(tools.MySQL, "--no-defaults", "--protocol=TCP", "--host="+s.Host, "--port="+strconv.Itoa(int(s.Port)),
					"--user="+s.AdminUser, "--skip-ssl", into.acct.Database)
				cmd.Env = []string{"MYSQL_PWD=" + s.AdminPassword, "HOME=" + t.TempDir()}
				cmd.Stdin = f
			}
			out, err := cmd.CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), "%s", out)
			g.Expect(into.contents(t)).To(Equal(want))
		})
	}
}

// As a tar stream, the same files, and the same bytes for the same backup.
func TestAnExportAsATarStreamHoldsTheSameFiles(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	tn := newTenant(t, database.Postgres)
	tn.exec(t, schema[database.Postgres]...)
	st := newStore(t)
	plan, m := backupOf(t, st, tools, tn)
	export := func() []byte {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		_, err := backup.Export(testContext(t), st.Store, plan.Location, backup.TarSink{W: tw, Dir: "acme", ModTime: m.Finished})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tw.Close()).To(Succeed())
		return buf.Bytes()
	}
	first := export()
	g.Expect(export()).To(Equal(first))
	tr := tar.NewReader(bytes.NewReader(first))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		names = append(names, h.Name)
	}
	g.Expect(names).To(Equal([]string{"acme/app.dump", "acme/" + backup.ManifestName}))
}

// The manifest is read from the store, where a Job taken over could have rewritten it: a name
// that would write outside the export's directory is refused, and nothing is written there.
func TestAnExportRefusesAManifestWhoseNamesLeaveItsDirectory(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	tn := newTenant(t, database.Postgres)
	st := newStore(t)
	plan, m := backupOf(t, st, tools, tn)
	for _, name := range []string{"../escape", "/tmp/escape", ".hidden", "a/b"} {
		forged := *m
		forged.Databases = []backup.DumpEntry{m.Databases[0]}
		forged.Databases[0].Name = name
		body, err := json.Marshal(forged)
		g.Expect(err).NotTo(HaveOccurred())
		st.putRaw(t, plan.Location+backup.ManifestName, body)
		parent := t.TempDir()
		_, err = backup.Export(testContext(t), st.Store, plan.Location, backup.DirSink(filepath.Join(parent, "export")))
		g.Expect(err).To(MatchError(ContainSubstring("which no tenant's database is")), name)
		entries, err := os.ReadDir(parent)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(entries).To(BeEmpty(), "nothing written for %q", name)
	}
}
