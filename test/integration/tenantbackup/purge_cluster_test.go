package tenantbackup_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/controller/backupjobs"
)

// keepAfterPurge is the suite operator's backups.keepAfterPurge: short, because the suite's clock
// never goes back (its tickers would stop), and a clock far ahead of the API server's would
// have schedules made later find a run missed since their creation.
const keepAfterPurge = 10 * time.Second

// takeBackup creates a backup of the tenant, plays its Job, and returns it once it succeeded,
// with the plan its Job was handed.
func takeBackup(t *testing.T, name, tenant string) (*tenancyv1alpha1.TenantBackup, backup.Plan) {
	t.Helper()
	g := NewWithT(t)
	createBackup(t, t, name, tenant)
	b := waitBackup(t, name, tenancyv1alpha1.BackupRunning)
	s := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.Backups.Namespace, Name: b.Status.Job}, s)).To(Succeed())
	var plan backup.Plan
	g.Expect(json.Unmarshal(s.Data[backupjobs.StepKey(backup.OpSeal)], &plan)).To(Succeed())
	runJob(t, b.Status.Job)
	return waitBackup(t, name, tenancyv1alpha1.BackupSucceeded), plan
}

// purge sets the tenant Purged, as an administrator does.
func purge(t *testing.T, name string) {
	t.Helper()
	g := NewWithT(t)
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.State, tenant.Spec.PurgeConfirmation = tenancyv1alpha1.StatePurged, name
	g.Expect(k8s.Patch(context.Background(), tenant, patch)).To(Succeed())
}

// poke changes an annotation of the tenant: what a requeue after the kept backups' expiry does
// on the real clock, once the suite's clock has been stepped past it.
func poke(t *testing.T, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"test.landlord.dev/poke":"` + time.Now().Format(time.RFC3339Nano) + `"}}}`)
	NewWithT(t).Expect(k8s.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// Finding: a Purged tenant's backups lived for ever, under a key shared by every tenant.
// Now each tenant's backups are sealed under a data key of its own, handed to its Jobs alone; a
// purge keeps the backups for backups.keepAfterPurge, then deletes them and
// destroys the key, and the tenant's status.purge records what went, where and when.
func TestAPurgedTenantsBackupsGoAndItsKeyIsDestroyed(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	createTenant(t, newTenant("bk-purged", withDatabases))
	other := newTenant("bk-kept", withDatabases)
	createTenant(t, other)
	for _, tn := range []string{"bk-purged", "bk-kept"} {
		for _, db := range []string{"app", "legacy"} {
			execAs(g, tn, db, "CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(64))", "INSERT INTO notes VALUES (1, 'data of "+tn+"')")
		}
	}
	first, plan := takeBackup(t, "bk-purged-1", "bk-purged")
	second, _ := takeBackup(t, "bk-purged-2", "bk-purged")
	kept, otherPlan := takeBackup(t, "bk-kept-1", "bk-kept")
	uid := first.Status.TenantUID

	t.Run("a backup's Job is handed its tenant's data key and no key-encryption key", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(plan.Key).To(BeEmpty())
		g.Expect(plan.TenantKey).NotTo(BeEmpty())
		g.Expect(otherPlan.TenantKey).NotTo(Equal(plan.TenantKey), "each tenant has a key of its own")
		key, err := backupStore.TenantKey(ctx, uid, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(key).To(Equal(plan.TenantKey))
		g.Expect(first.Status.Format).To(BeEquivalentTo(backup.ManifestFormat), "a restore reads how the backup is sealed from its status, never from the store")
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-purged"}, tenant)).To(Succeed())
		g.Expect(controllerutil.ContainsFinalizer(tenant, tenancyv1alpha1.BackupsFinalizer)).To(BeTrue(), "a tenant with backups is purged of them before it goes")
	})

	purge(t, "bk-purged")
	purgedAt := suiteClock.Now()

	t.Run("before anything is deleted, the newest backup is exported where the platform hands it over, and the record names it", func(t *testing.T) {
		g := NewWithT(t)
		var ex *tenancyv1alpha1.PurgeExport
		g.Eventually(func(g Gomega) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-purged"}, tenant)).To(Succeed())
			g.Expect(tenant.Status.Purge).NotTo(BeNil())
			ex = tenant.Status.Purge.Export
			g.Expect(ex).NotTo(BeNil())
			g.Expect(ex.Completed).NotTo(BeNil())
			g.Expect(tenant.Status.Purge.KeyDestroyed).To(BeNil())
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(ex.Backup).To(Equal(second.Name), "the newest backup that succeeded")
		g.Expect(ex.Databases).To(BeEquivalentTo(2))
		g.Expect(ex.Location).To(Equal("file://" + exportDir))
		g.Expect(ex.Folder).To(Equal("bk-purged-" + uid + "/"))
		for _, f := range []string{"app.dump", "legacy.sql", "manifest.json"} {
			g.Expect(filepath.Join(exportDir, ex.Folder, f)).To(BeAnExistingFile())
		}
		m := &backup.Manifest{}
		body, err := os.ReadFile(filepath.Join(exportDir, ex.Folder, "manifest.json"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(json.Unmarshal(body, m)).To(Succeed())
		g.Expect(m.TenantUID).To(Equal(uid))
		for _, b := range []*tenancyv1alpha1.TenantBackup{first, second} {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), &tenancyv1alpha1.TenantBackup{})).To(Succeed(), "deleted before keepAfterPurge")
		}
	})

	t.Run("the backups and the key are kept for keepAfterPurge, and the record says until when", func(t *testing.T) {
		g := NewWithT(t)
		var rec *tenancyv1alpha1.PurgeRecord
		g.Eventually(func(g Gomega) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-purged"}, tenant)).To(Succeed())
			rec = tenant.Status.Purge
			g.Expect(rec).NotTo(BeNil())
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(rec.KeepUntil).NotTo(BeNil())
		g.Expect(rec.KeepUntil.Time).To(BeTemporally("~", purgedAt.Add(keepAfterPurge), time.Second))
		g.Expect(rec.BackupCount).To(BeEquivalentTo(2))
		g.Expect(rec.Backups).To(ConsistOf(
			HaveField("Name", first.Name), HaveField("Name", second.Name)))
		g.Expect(rec.Store).To(Equal("s3://backups?prefix=tenants%2F"), "where the backups were, without the endpoint or any credential of the store's URL")
		g.Expect(rec.KeyDestroyed).To(BeNil())
		for _, b := range []*tenancyv1alpha1.TenantBackup{first, second} {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), &tenancyv1alpha1.TenantBackup{})).To(Succeed())
			_, err := backupStore.Manifest(ctx, b.Status.Location)
			g.Expect(err).NotTo(HaveOccurred())
		}
		_, err := backupStore.TenantKey(ctx, uid, false)
		g.Expect(err).NotTo(HaveOccurred())
	})

	t.Run("once keepAfterPurge has passed, the backups are deleted, then the key is destroyed", func(t *testing.T) {
		g := NewWithT(t)
		suiteClock.Step(keepAfterPurge + time.Second)
		poke(t, "bk-purged")
		var rec *tenancyv1alpha1.PurgeRecord
		g.Eventually(func(g Gomega) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-purged"}, tenant)).To(Succeed())
			rec = tenant.Status.Purge
			g.Expect(rec.Completed).NotTo(BeNil())
			g.Expect(controllerutil.ContainsFinalizer(tenant, tenancyv1alpha1.BackupsFinalizer)).To(BeFalse())
		}).WithTimeout(2 * timeout).Should(Succeed())
		g.Expect(rec.KeyDestroyed).NotTo(BeNil())
		for _, b := range rec.Backups {
			g.Expect(b.Deleted).NotTo(BeNil(), b.Name)
		}
		for _, b := range []*tenancyv1alpha1.TenantBackup{first, second} {
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(b), &tenancyv1alpha1.TenantBackup{}))).To(BeTrue(), b.Name)
			_, err := backupStore.Manifest(ctx, b.Status.Location)
			g.Expect(err).To(MatchError(backup.ErrNoManifest))
			g.Expect(backupS3.Object("backups", "tenants/"+b.Status.Location+"app.dump")).To(BeNil())
		}
		_, err := backupStore.TenantKey(ctx, uid, false)
		g.Expect(err).To(MatchError(backup.ErrKeyDestroyed))
		g.Expect(string(backupS3.Object("backups", "tenants/keys/"+uid))).To(Equal("landlord-tenant-key-destroyed\n"), "a tombstone, which holds no key")
	})

	t.Run("another tenant's backups and key are untouched", func(t *testing.T) {
		g := NewWithT(t)
		_, err := backupStore.Manifest(ctx, kept.Status.Location)
		g.Expect(err).NotTo(HaveOccurred())
		key, err := backupStore.TenantKey(ctx, kept.Status.TenantUID, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(key).To(Equal(otherPlan.TenantKey))
	})

	t.Run("no backup of the purged tenant is taken again, nor a key made for it", func(t *testing.T) {
		g := NewWithT(t)
		createBackup(t, t, "bk-purged-late", "bk-purged")
		g.Eventually(func(g Gomega) {
			b := &tenancyv1alpha1.TenantBackup{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-purged-late"}, b)).To(Succeed())
			g.Expect(b.Status.Conditions).To(ContainElement(And(HaveField("Type", tenancyv1alpha1.StalledCondition), HaveField("Reason", tenancyv1alpha1.ReasonBackupRefused))))
			g.Expect(b.Status.Job).To(BeEmpty())
		}).WithTimeout(timeout).Should(Succeed())
		_, err := backupStore.TenantKey(ctx, uid, true)
		g.Expect(err).To(MatchError(backup.ErrKeyDestroyed))
	})

	t.Run("a tenant deleted without being Purged keeps its backups and its key", func(t *testing.T) {
		g := NewWithT(t)
		deleteTenant(t, other.Name)
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(kept), &tenancyv1alpha1.TenantBackup{})).To(Succeed())
		_, err := backupStore.TenantKey(ctx, kept.Status.TenantUID, false)
		g.Expect(err).NotTo(HaveOccurred())
	})
}
