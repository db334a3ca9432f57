package backup_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
)

// Each step of a Job holds only what it needs: the step whose client tools read or write the
// tenant's databases gets the logins and nothing of the store (no store, no key, no location);
// the step that reads or writes the store gets no login. A step handed what it must not hold
// refuses to run.
func TestEachStepOfAJobHoldsOnlyWhatItNeeds(t *testing.T) {
	target := backup.Target{Engine: database.Postgres, Host: "db.example", Port: 5432, Database: "t_acme_app", Username: "t_acme", Password: "secret-password"}
	whole := backup.Plan{Objects: "s3://backups?region=eu", Key: "awskms:///alias/backups", TenantKey: []byte("tenant-key"),
		Location: "uid/backup/", Tenant: "acme", TenantUID: "uid", Backup: "nightly", MaxBytes: 1 << 20,
		Databases: []backup.Database{{Name: "app", Target: target}}}

	for _, tc := range []struct {
		op                  backup.Operation
		databases, store    backup.Operation
		databasesStepIsLast bool
	}{
		{op: backup.OpBackup, databases: backup.OpDump, store: backup.OpSeal},
		{op: backup.OpRestore, databases: backup.OpLoad, store: backup.OpFetch, databasesStepIsLast: true},
	} {
		t.Run("a "+string(tc.op)+"'s steps split its plan", func(t *testing.T) {
			g := NewWithT(t)
			plan := whole
			plan.Operation = tc.op
			first, second, err := plan.Steps()
			g.Expect(err).NotTo(HaveOccurred())
			data, store := first, second
			if tc.databasesStepIsLast {
				data, store = second, first
			}
			g.Expect(data.Operation).To(Equal(tc.databases))
			g.Expect(store.Operation).To(Equal(tc.store))

			g.Expect(data.Objects).To(BeEmpty())
			g.Expect(data.Key).To(BeEmpty())
			g.Expect(data.TenantKey).To(BeEmpty())
			g.Expect(data.Location).To(BeEmpty())
			g.Expect(data.Databases).To(Equal(whole.Databases))

			g.Expect(store.Objects).To(Equal(whole.Objects))
			g.Expect(store.TenantKey).To(Equal(whole.TenantKey))
			g.Expect(store.Location).To(Equal(whole.Location))
			g.Expect(store.Databases).To(Equal([]backup.Database{{Name: "app", Target: backup.Target{Engine: database.Postgres}}}), "a name and an engine, no login")

			dir := t.TempDir()
			leaky := data
			leaky.TenantKey = whole.TenantKey
			g.Expect(backup.RunJob(t.Context(), leaky, backup.Tools{}, dir, nil)).To(MatchError(ContainSubstring("must not hold")))
			leaky = store
			leaky.Databases = whole.Databases
			g.Expect(backup.RunJob(t.Context(), leaky, backup.Tools{}, dir, nil)).To(MatchError(ContainSubstring("must not hold")))
			g.Expect(backup.RunJob(t.Context(), data, backup.Tools{}, "", nil)).To(MatchError(ContainSubstring("needs the steps' directory")))
		})
	}
}

// The store's step trusts nothing the databases' step left but what its digest proves: a dump
// that is a link (to a file of the store's step, such as its plan) or a pipe is not read, and a
// record saying a dump is over the size limit is refused. Nothing is stored.
func TestTheStoresStepReadsOnlyTheDumpsItWasLeft(t *testing.T) {
	st := newStore(t)
	secretFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(secretFile, []byte(`{"tenantKey":"c2VjcmV0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	content := []byte("PGDMP a dump")
	sum := sha256.Sum256(content)
	for _, tc := range []struct {
		name    string
		leave   func(t *testing.T, file string)
		size    int64
		refused string
	}{{
		name:    "a link to a file of the store's step is not followed",
		leave:   func(t *testing.T, file string) { must(t, os.Symlink(secretFile, file)) },
		size:    int64(len(content)),
		refused: "not a regular file",
	}, {
		name:    "a pipe is not opened",
		leave:   func(t *testing.T, file string) { must(t, syscall.Mkfifo(file, 0o600)) },
		size:    int64(len(content)),
		refused: "not a regular file",
	}, {
		name:    "a dump the record says is over the limit is refused",
		leave:   func(t *testing.T, file string) { must(t, os.WriteFile(file, content, 0o600)) },
		size:    2 << 20,
		refused: "over the limit",
	}, {
		name:    "a dump that is not what the record says is refused",
		leave:   func(t *testing.T, file string) { must(t, os.WriteFile(file, []byte("PGDMP another dump"), 0o600)) },
		size:    int64(len(content)),
		refused: "no longer matches",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			tc.leave(t, filepath.Join(dir, "app.dump"))
			record := fmt.Sprintf(`{"started":"2026-12-07T03:00:00Z","databases":[{"name":"app","engine":"postgres","serverVersion":"15.18","object":"app.dump","size":%d,"sha256":"%s","storedSize":0}]}`,
				tc.size, hex.EncodeToString(sum[:]))
			must(t, os.WriteFile(filepath.Join(dir, backup.RecordName), []byte(record), 0o600))
			plan := backup.Plan{Operation: backup.OpSeal, Objects: st.objects, TenantKey: st.tenantKey, Location: location(t), MaxBytes: 1 << 20,
				Databases: []backup.Database{{Name: "app", Target: backup.Target{Engine: database.Postgres}}}}
			_, err := backup.Seal(testContext(t), st.Store, plan, dir)
			g.Expect(err).To(MatchError(ContainSubstring(tc.refused)))
			g.Expect(err.Error()).NotTo(ContainSubstring("c2VjcmV0"))
			g.Expect(st.keys(t, plan.Location)).To(BeEmpty(), "nothing is stored")
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
