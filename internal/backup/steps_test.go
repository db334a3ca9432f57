package backup_test

import (
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
