package faults_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
	"github.com/landlord-dev/landlord/test/testenv"
)

const backupsScenario = "backups"

// backupsConfig is the fault suite's configuration with backups on: an S3 server and an AWS KMS
// emulator in this process, the Jobs' pods of Landlord's backup image (this tree's binary, run
// by the local cluster), held until the scenario releases them. It returns the file's path.
func backupsConfig(t *testing.T, exportDir string) string {
	t.Helper()
	g := NewWithT(t)
	for k, v := range secrettest.AWSEnvironment {
		t.Setenv(k, v)
	}
	s3, err := secrettest.StartS3("backups")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(s3.Close)
	kms := secrettest.StartAWSKMS(t.TempDir())
	t.Cleanup(kms.Close)
	key, err := kms.CreateKey(t.Context())
	g.Expect(err).NotTo(HaveOccurred())

	cfg := opConfig
	cfg.Backups.Objects = s3.URL("backups", "tenants/")
	cfg.Backups.Key = key
	cfg.Backups.Image = testenv.BackupImage
	cfg.Backups.EnvFromSecrets = []string{"faults-backup-store"}
	cfg.Backups.PodAnnotations = map[string]string{localcluster.HoldAnnotation: "true"}
	cfg.Backups.ExportAtPurge = "file://" + exportDir
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Backups.Namespace, Name: "faults-backup-store"}, StringData: secrettest.AWSEnvironment}
	g.Expect(client.IgnoreAlreadyExists(env.AdminClient.Create(context.Background(), creds))).To(Succeed())
	path, err := writeConfig("backups.yaml", cfg)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.Remove(path) })
	return path
}

// A backup and an in-place restore, the operator SIGKILLed while each Job is held (the backup's,
// the restore's safety backup's and the restore's own): the next operator takes each on from
// what the killed one recorded, never makes a second Job for any of them, and the restore
// brings back exactly what was backed up, the data written since kept in the safety backup, the
// tenant's login as it was. Every Job's two steps really run (the local cluster runs the backup
// image's pods against the real PostgreSQL server, the S3 server and the KMS emulator).
func TestSIGKILLAtEachStepOfABackupAndARestoreLosesNothing(t *testing.T) {
	const scenario, tenant = backupsScenario, "backups-1"
	ctx := context.Background()
	deleteLease(t)
	exportDir := t.TempDir()
	ops := &operators{t: t, scenario: scenario, args: []string{"--config=" + backupsConfig(t, exportDir)}}
	defer func() {
		logOperatorErrors(t, ops.procs...)
		if t.Failed() {
			t.Logf("tenants:\n%s", describeTenants(scenario))
		}
	}()
	ops.start()
	NewWithT(t).Expect(env.AdminClient.Create(ctx, newTenant(scenario, tenant, tenancyv1alpha1.EnginePostgres))).To(Succeed())
	testenv.WaitTenantCurrent(t, env.AdminClient, tenant, convergeTimeout)
	execApp(NewWithT(t), tenant, "CREATE TABLE items (id INT PRIMARY KEY)", "INSERT INTO items VALUES (1), (2)")
	if t.Failed() {
		return
	}

	t.Run("killed while the backup's Job runs, the next operator follows that Job to the end", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.AdminClient.Create(ctx, &tenancyv1alpha1.TenantBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "before", Labels: map[string]string{scenarioLabel: scenario}},
			Spec:       tenancyv1alpha1.TenantBackupSpec{Tenant: tenant},
		})).To(Succeed())
		job := waitBackupJob(t, "before")
		ops.kill("while the backup's Job is held")
		ops.start()
		releaseBackupJob(t, job)
		waitBackupPhase(t, "before", tenancyv1alpha1.BackupSucceeded)
		g.Expect(backupJobs(g)).To(ConsistOf(job), "one Job, the killed operator's")
	})
	if t.Failed() {
		return
	}

	execApp(NewWithT(t), tenant, "INSERT INTO items VALUES (3)")
	t.Run("killed during the restore's safety backup and again during the restore, the data is the backup's", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.AdminClient.Create(ctx, &tenancyv1alpha1.TenantRestore{
			ObjectMeta: metav1.ObjectMeta{Name: "back", Labels: map[string]string{scenarioLabel: scenario}},
			Spec:       tenancyv1alpha1.TenantRestoreSpec{Backup: "before"},
		})).To(Succeed())
		safetyJob := waitBackupJob(t, "back-safety")
		ops.kill("while the restore's safety backup's Job is held")
		ops.start()
		releaseBackupJob(t, safetyJob)
		waitBackupPhase(t, "back-safety", tenancyv1alpha1.BackupSucceeded)

		restoreJob := waitRestoreJob(t, "back")
		ops.kill("while the restore's Job is held")
		ops.start()
		releaseBackupJob(t, restoreJob)
		g.Eventually(func(g Gomega) {
			r := &tenancyv1alpha1.TenantRestore{}
			g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: "back"}, r)).To(Succeed())
			g.Expect(r.Status.Phase).To(Equal(tenancyv1alpha1.BackupSucceeded), "restore %+v", r.Status)
		}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed())

		g.Expect(itemIDs(g, tenant)).To(Equal([]int{1, 2}), "the backup's rows, the one written since gone")
		g.Expect(backupJobs(g)).To(ConsistOf(append(backupJobNames(g, "before", "back-safety"), restoreJob)),
			"one Job for each, whatever the kills")
		safety := &tenancyv1alpha1.TenantBackup{}
		g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: "back-safety"}, safety)).To(Succeed())
		g.Expect(safety.Status.Size).To(BeNumerically(">", 0), "the safety backup holds the data written since")
	})

	if t.Failed() {
		return
	}

	t.Run("killed as the purge records its final export, the export ends whole", func(t *testing.T) {
		g := NewWithT(t)
		recorded := watchTenant(t, tenant)
		got := getTenant(g, tenant)
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.State, got.Spec.PurgeConfirmation = tenancyv1alpha1.StatePurged, tenant
		g.Expect(env.AdminClient.Patch(ctx, got, patch)).To(Succeed())
		recorded.until(func(tn *tenancyv1alpha1.Tenant) bool { return tn.Status.Purge != nil && tn.Status.Purge.Export != nil })
		ops.kill("as soon as the purge recorded which backup it exports, and where")
		t.Logf("the export's record when its operator was killed: %+v", *getTenant(g, tenant).Status.Purge.Export)
		ops.start()
		var export *tenancyv1alpha1.PurgeExport
		g.Eventually(func(g Gomega) {
			export = getTenant(g, tenant).Status.Purge.Export
			g.Expect(export.Completed).NotTo(BeNil(), "export %+v", export)
		}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed())
		g.Expect(export.Backup).To(Equal("back-safety"), "the newest succeeded backup")
		folder := filepath.Join(exportDir, export.Folder)
		g.Expect(os.ReadFile(filepath.Join(folder, "manifest.json"))).To(ContainSubstring(string(got.UID)))
		dump, err := os.ReadFile(filepath.Join(folder, "app.dump"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(dump)).To(HavePrefix("PGDMP"), "a plain pg_dump archive")
	})

	checkInvariants(t, scenario)
}

// waitBackupJob waits until the backup has its Job, and returns the Job's name.
func waitBackupJob(t *testing.T, name string) string {
	t.Helper()
	b := &tenancyv1alpha1.TenantBackup{}
	return waitJobOf(t, name, b, func() string { return b.Status.Job })
}

// waitRestoreJob waits until the restore has its Job, and returns the Job's name.
func waitRestoreJob(t *testing.T, name string) string {
	t.Helper()
	r := &tenancyv1alpha1.TenantRestore{}
	return waitJobOf(t, name, r, func() string { return r.Status.Job })
}

// waitJobOf reads the named object into obj until job, which reads its status, names a Job.
func waitJobOf(t *testing.T, name string, obj client.Object, job func() string) string {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Name: name}, obj)).To(Succeed())
		g.Expect(job()).NotTo(BeEmpty())
	}).WithTimeout(convergeTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return job()
}

// backupJobNames are the named backups' Jobs.
func backupJobNames(g Gomega, names ...string) []string {
	var out []string
	for _, name := range names {
		b := &tenancyv1alpha1.TenantBackup{}
		g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Name: name}, b)).To(Succeed())
		out = append(out, b.Status.Job)
	}
	return out
}

func waitBackupPhase(t *testing.T, name string, phase tenancyv1alpha1.BackupPhase) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		b := &tenancyv1alpha1.TenantBackup{}
		g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Name: name}, b)).To(Succeed())
		g.Expect(b.Status.Phase).To(Equal(phase), "backup %s: %+v", name, b.Status)
	}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed())
}

// releaseBackupJob removes the hold of the Job's pod: its steps start.
func releaseBackupJob(t *testing.T, job string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(env.AdminClient.List(context.Background(), pods, client.InNamespace(opConfig.Backups.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		patch := []byte(`{"metadata":{"annotations":{"` + localcluster.HoldAnnotation + `":null}}}`)
		g.Expect(env.AdminClient.Patch(context.Background(), &pods.Items[0], client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	}).WithTimeout(convergeTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// backupJobs are the names of every backup and restore Job in the Jobs' namespace.
func backupJobs(g Gomega) []string {
	list := &batchv1.JobList{}
	g.Expect(env.AdminClient.List(context.Background(), list, client.InNamespace(opConfig.Backups.Namespace), client.HasLabels{tenancyv1alpha1.BackupJobLabel})).To(Succeed())
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	return names
}

// itemIDs are the ids in the tenant's items table.
func itemIDs(g Gomega, tenant string) []int {
	conn := openApp(g, tenant)
	defer conn.Close()
	rows, err := conn.Query("SELECT id FROM items ORDER BY id")
	g.Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		g.Expect(rows.Scan(&id)).To(Succeed())
		ids = append(ids, id)
	}
	return ids
}
