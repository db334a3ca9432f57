package main

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// landlordctl backup export reads the TenantBackup from the cluster and the store from the
// operator's configuration, and writes the dumps a real pg_dump wrote, checked, as files or a
// tar stream; a backup that has not succeeded is refused, and so is a configuration with no
// backup store.
func TestBackupExportWritesASucceededBackupsDumpsFromTheConfiguredStore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, kubeconfig := sharedCluster(t)
	pg, err := dbtest.StartPostgres()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = pg.Close() })
	s3, key := secrettest.StartAWS(t, "backups")
	objects := s3.URL("backups", "landlord/")

	// A real backup of a real database, as a Job takes it.
	p, err := database.Open(pg.Server)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = p.Close() })
	acct := database.Account{Database: "t_export", Username: "t_export", Password: "export-pass-1", Owner: "owner-export"}
	g.Expect(p.Ensure(ctx, acct)).To(Succeed())
	db, err := dbtest.OpenDB(pg.Server, acct.Username, acct.Password, acct.Database)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = db.ExecContext(ctx, "CREATE TABLE notes (id int PRIMARY KEY, body text); INSERT INTO notes VALUES (1, 'kept')")
	g.Expect(err).NotTo(HaveOccurred())
	_ = db.Close()
	store, err := backup.OpenStore(ctx, objects, key, "")
	g.Expect(err).NotTo(HaveOccurred())
	const tenantUID = "0c8e5e0a-5b7d-4e8e-9f6e-2d9a1b7c3e11"
	tenantKey, err := store.TenantKey(ctx, tenantUID, true)
	g.Expect(err).NotTo(HaveOccurred())
	location := tenantUID + "/export-1/"
	m, err := backup.Backup(ctx, store, backup.FindTools(), backup.Plan{Operation: backup.OpBackup, Location: location,
		Tenant: "exported", TenantUID: tenantUID, Backup: "exported-1", TenantKey: tenantKey,
		Databases: []backup.Database{{Name: "app", Target: backup.Target{Engine: database.Postgres, Host: pg.Server.Host, Port: pg.Server.Port,
			TLS: pg.Server.TLS, Database: acct.Database, Username: acct.Username, Password: acct.Password}}}})
	g.Expect(err).NotTo(HaveOccurred())

	// The TenantBackup as the operator left it; this suite's operator has no backup store and
	// leaves a succeeded backup as it is.
	b := &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: "exported-1"}, Spec: tenancyv1alpha1.TenantBackupSpec{Tenant: "exported"}}
	g.Expect(c.Create(ctx, b)).To(Succeed())
	t.Cleanup(func() {
		_ = c.Get(ctx, client.ObjectKeyFromObject(b), b)
		b.Finalizers = nil
		_ = c.Update(ctx, b)
		_ = c.Delete(ctx, b)
	})
	setPhase := func(phase tenancyv1alpha1.BackupPhase) {
		g.Eventually(func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				return err
			}
			b.Status.Phase, b.Status.Location, b.Status.TenantUID = phase, location, tenantUID
			return c.Status().Update(ctx, b)
		}).Should(Succeed())
	}
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	body, err := yaml.Marshal(map[string]any{"backups": map[string]any{"objects": objects, "key": key, "image": "landlord:test"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(cfgFile, body, 0o600)).To(Succeed())

	t.Run("a backup that has not succeeded is refused", func(t *testing.T) {
		setPhase(tenancyv1alpha1.BackupRunning)
		_, _, err := run(t, "landlordctl", "--kubeconfig", kubeconfig, "--config", cfgFile, "backup", "export", "exported-1", "-o", filepath.Join(t.TempDir(), "x"))
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("only a succeeded backup is whole")))
	})

	setPhase(tenancyv1alpha1.BackupSucceeded)
	t.Run("into a directory: the dump pg_dump wrote, and the manifest", func(t *testing.T) {
		g := NewWithT(t)
		dir := filepath.Join(t.TempDir(), "acme")
		_, stderr, err := run(t, "landlordctl", "--kubeconfig", kubeconfig, "--config", cfgFile, "backup", "export", "exported-1", "-o", dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stderr).To(ContainSubstring("exported 1 database(s) of tenant exported"))
		dump, err := os.ReadFile(filepath.Join(dir, "app.dump"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(int64(len(dump))).To(Equal(m.Databases[0].Size))
		g.Expect(string(dump[:5])).To(Equal("PGDMP"), "pg_dump's custom format")
		g.Expect(filepath.Join(dir, backup.ManifestName)).To(BeAnExistingFile())
	})

	t.Run("as a tar stream on stdout", func(t *testing.T) {
		g := NewWithT(t)
		stdout, _, err := run(t, "landlordctl", "--kubeconfig", kubeconfig, "--config", cfgFile, "backup", "export", "exported-1", "-o", "-")
		g.Expect(err).NotTo(HaveOccurred())
		tr := tar.NewReader(bytes.NewReader([]byte(stdout)))
		var names []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			g.Expect(err).NotTo(HaveOccurred())
			names = append(names, h.Name)
		}
		g.Expect(names).To(Equal([]string{"exported-1/app.dump", "exported-1/" + backup.ManifestName}))
	})

	t.Run("a configuration with no backup store is refused, naming what is missing", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "config.yaml")
		NewWithT(t).Expect(os.WriteFile(empty, []byte("{}\n"), 0o600)).To(Succeed())
		_, _, err := run(t, "landlordctl", "--kubeconfig", kubeconfig, "--config", empty, "backup", "export", "exported-1", "-o", "-")
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("backups.objects")))
		if err != nil && strings.Contains(err.Error(), key) {
			t.Error("the error names the key's URL")
		}
	})
}
