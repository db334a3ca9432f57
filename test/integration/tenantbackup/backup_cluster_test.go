package tenantbackup_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/controller/tenantbackup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The backup store of the suite's operator: an S3 server and an AWS KMS key, both spoken to
// by the real AWS SDK.
var (
	backupStore *backup.Store
	backupS3    *secrettest.S3
)

// storeCredentials is the Secret of backups.envFromSecrets: the store's and the key's AWS
// credentials, which the Jobs get as their environment.
const storeCredentials = "backup-store-credentials"

func startBackupStore() (func(), error) {
	for k, v := range secrettest.AWSEnvironment {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	s3, err := secrettest.StartS3("backups")
	if err != nil {
		return nil, err
	}
	backupS3 = s3
	dir, err := os.MkdirTemp("", "landlord-kms-")
	if err != nil {
		s3.Close()
		return nil, err
	}
	kms := secrettest.StartAWSKMS(dir)
	key, err := kms.CreateKey(context.Background())
	if err != nil {
		return nil, err
	}
	opConfig.Backups.Objects = s3.URL("backups", "tenants/")
	opConfig.Backups.Key = key
	opConfig.Backups.Image = testenv.BackupImage
	opConfig.Backups.EnvFromSecrets = []string{storeCredentials}
	// Every Job's pod is held until its test releases it: what is true while a Job runs (a
	// restore waiting for its safety backup, the plan's Secret) lasts as long as the test
	// needs to see it, rather than the second a real Job takes.
	opConfig.Backups.PodAnnotations = map[string]string{localcluster.HoldAnnotation: "true"}
	opConfig.Backups.KeepAfterPurge = metav1.Duration{Duration: keepAfterPurge}
	if backupStore, err = backup.OpenStore(context.Background(), opConfig.Backups.Objects, opConfig.Backups.Key, ""); err != nil {
		return nil, err
	}
	return func() {
		_ = backupStore.Close()
		kms.Close()
		s3.Close()
		_ = os.RemoveAll(dir)
	}, nil
}

// createStoreCredentials creates the Secret of backups.envFromSecrets in the Jobs' namespace.
func createStoreCredentials(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opConfig.Backups.Namespace}}
	if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: opConfig.Backups.Namespace, Name: storeCredentials}, StringData: secrettest.AWSEnvironment}
	return k8s.Create(ctx, s)
}

// runJob releases the named Job's held pod, and waits until its container, `landlord job` over
// the Job's plan, has succeeded.
func runJob(t *testing.T, name string) {
	t.Helper()
	releaseJob(t, name)
	waitJobSucceeded(t, name)
}

// jobPod waits until the named Job has its one pod, and returns it.
func jobPod(g Gomega, job string) *corev1.Pod {
	var pod *corev1.Pod
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(context.Background(), pods, client.InNamespace(opConfig.Backups.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		pod = &pods.Items[0]
	}).WithTimeout(timeout).Should(Succeed())
	return pod
}

// releaseJob removes the hold of the named Job's pod: its container starts.
func releaseJob(t *testing.T, job string) {
	t.Helper()
	g := NewWithT(t)
	pod := jobPod(g, job)
	patch := []byte(`{"metadata":{"annotations":{"` + localcluster.HoldAnnotation + `":null}}}`)
	g.Expect(k8s.Patch(context.Background(), pod, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// waitJobSucceeded waits until the named Job's container has exited 0, and fails at once,
// quoting its last words, should it fail.
func waitJobSucceeded(t *testing.T, job string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		pod := &corev1.Pod{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(jobPod(g, job)), pod)).To(Succeed())
		if pod.Status.Phase == corev1.PodFailed {
			StopTrying(fmt.Sprintf("landlord job of %s failed: %+v", job, pod.Status.ContainerStatuses)).Now()
		}
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded))
	}).WithTimeout(2 * timeout).Should(Succeed())
}

// endPod ends the held pod of the Job as though its container had exited with code, without
// running it: it writes the pod's end as a kubelet would. The played path, for the ends a
// real Job does not come to on demand (a container killed, one that exits 0 having written
// nothing).
func endPod(t *testing.T, job string, code int32) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		pod := jobPod(g, job)
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(pod.Annotations).To(HaveKey(localcluster.HoldAnnotation), "a released pod's end is its container's")
		now := metav1.Now()
		ended := &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Completed", StartedAt: now, FinishedAt: now}
		pod.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			pod.Status.Phase, ended.Reason = corev1.PodFailed, "Error"
		}
		for i := range pod.Status.ContainerStatuses {
			pod.Status.ContainerStatuses[i].Ready = false
			pod.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: ended}
		}
		g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
}

func waitBackup(t *testing.T, name string, phase tenancyv1alpha1.BackupPhase) *tenancyv1alpha1.TenantBackup {
	t.Helper()
	b := &tenancyv1alpha1.TenantBackup{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, b)).To(Succeed())
		g.Expect(b.Status.Phase).To(Equal(phase), "conditions: %+v", b.Status.Conditions)
	}).WithTimeout(timeout).Should(Succeed())
	return b
}

func waitRestore(t *testing.T, name string, phase tenancyv1alpha1.BackupPhase) *tenancyv1alpha1.TenantRestore {
	t.Helper()
	r := &tenancyv1alpha1.TenantRestore{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, r)).To(Succeed())
		g.Expect(r.Status.Phase).To(Equal(phase), "conditions: %+v", r.Status.Conditions)
	}).WithTimeout(timeout).Should(Succeed())
	return r
}

// createBackup creates a TenantBackup, deleted when owner (a test whose subtests share it) ends.
func createBackup(t, owner *testing.T, name, tenant string) {
	t.Helper()
	b := &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.TenantBackupSpec{Tenant: tenant}}
	NewWithT(t).Expect(k8s.Create(context.Background(), b)).To(Succeed())
	owner.Cleanup(func() { deleteBackup(owner, name) })
}

// createRestore creates a TenantRestore of backup into tenant ("" for the backup's own),
// deleted with its safety backup when owner (a test whose subtests share it) ends.
func createRestore(t, owner *testing.T, name, backup, tenant string) *tenancyv1alpha1.TenantRestore {
	t.Helper()
	ctx := context.Background()
	rs := &tenancyv1alpha1.TenantRestore{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.TenantRestoreSpec{Backup: backup, Tenant: tenant}}
	NewWithT(t).Expect(k8s.Create(ctx, rs)).To(Succeed())
	owner.Cleanup(func() {
		_ = k8s.Delete(ctx, rs)
		deleteBackup(owner, tenantbackup.SafetyBackupName(name))
	})
	return rs
}

// waitRestoreStalled waits until the restore stalls with the reason and a message holding msg,
// and checks that it started nothing.
func waitRestoreStalled(t *testing.T, name, reason, msg string) *tenancyv1alpha1.TenantRestore {
	t.Helper()
	rs := &tenancyv1alpha1.TenantRestore{}
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, rs)).To(Succeed())
		stalled := meta.FindStatusCondition(rs.Status.Conditions, tenancyv1alpha1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(reason))
		g.Expect(stalled.Message).To(ContainSubstring(msg))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(rs.Status.Job).To(BeEmpty(), "a refused restore started a Job")
	return rs
}

// deleteBackup deletes a TenantBackup and waits until it is gone: its finalizer has deleted it
// from the store.
func deleteBackup(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	b := &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Delete(ctx, b); apierrors.IsNotFound(err) {
		return
	}
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(b), b))
	}).WithTimeout(timeout).Should(BeTrue())
}

// openAs connects to a tenant database (withDatabases: "app" on PostgreSQL, "legacy" on
// MariaDB) as the tenant's own login.
func openAs(g Gomega, tenant, db string) *sql.DB {
	acct := testenv.AccountOf(credentials(g, tenant, db))
	engine := tenancyv1alpha1.EnginePostgres
	if db == "legacy" {
		engine = tenancyv1alpha1.EngineMySQL
	}
	conn, err := dbtest.OpenDB(servers[database.Engine(engine)].Server, acct.Username, acct.Password, acct.Database)
	g.Expect(err).NotTo(HaveOccurred())
	return conn
}

// rows reads the notes table of a tenant database through the tenant's own login.
func rows(g Gomega, tenant string, db string) []string {
	conn := openAs(g, tenant, db)
	defer conn.Close()
	return notes(g, conn)
}

// notes reads the bodies of the notes table, in order of id.
func notes(g Gomega, conn *sql.DB) []string {
	r, err := conn.Query("SELECT body FROM notes ORDER BY id")
	g.Expect(err).NotTo(HaveOccurred())
	defer r.Close()
	var out []string
	for r.Next() {
		var s string
		g.Expect(r.Scan(&s)).To(Succeed())
		out = append(out, s)
	}
	g.Expect(r.Err()).NotTo(HaveOccurred())
	return out
}

// execAs runs statements in a tenant database through the tenant's own login.
func execAs(g Gomega, tenant, db string, stmts ...string) {
	conn := openAs(g, tenant, db)
	defer conn.Close()
	for _, s := range stmts {
		_, err := conn.Exec(s)
		g.Expect(err).NotTo(HaveOccurred(), s)
	}
}

func TestATenantsDatabasesAreBackedUpAndRestored(t *testing.T) {
	ctx := context.Background()
	suite := t
	createTenant(t, newTenant("bk-acme", withDatabases))
	for _, db := range []string{"app", "legacy"} {
		execAs(NewWithT(t), "bk-acme", db,
			"CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(64))",
			"INSERT INTO notes VALUES (1, 'kept'), (2, 'edited later')")
	}
	// A hostile tenant's trap: a check whose function, run as any other login (a copy restored
	// into another tenant runs the data's checks as that tenant's login), sets that login's
	// password to one the hostile tenant knows.
	own := testenv.AccountOf(credentials(NewWithT(t), "bk-acme", "app")).Username
	execAs(NewWithT(t), "bk-acme", "app",
		`CREATE FUNCTION take_login() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN
			IF current_user <> '`+own+`' THEN EXECUTE format('ALTER ROLE %I PASSWORD %L', current_user, 'known-to-acme'); END IF;
			RETURN true; END $$`,
		"CREATE TABLE trap (i int CHECK (take_login()))",
		"INSERT INTO trap VALUES (1)")

	t.Run("a backup runs as a Job whose plan only it reads, and succeeds once its manifest is in the store", func(t *testing.T) {
		g := NewWithT(t)
		createBackup(t, suite, "bk-acme-1", "bk-acme")
		b := waitBackup(t, "bk-acme-1", tenancyv1alpha1.BackupRunning)
		job := &batchv1.Job{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.Backups.Namespace, Name: b.Status.Job}, job)).To(Succeed())
		g.Expect(metav1.IsControlledBy(job, b)).To(BeTrue(), "the Job is the backup's")
		plan := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.Backups.Namespace, Name: b.Status.Job}, plan)).To(Succeed())
		g.Expect(metav1.IsControlledBy(plan, b)).To(BeTrue(), "the plan's Secret is the backup's")

		runJob(t, b.Status.Job)
		b = waitBackup(t, "bk-acme-1", tenancyv1alpha1.BackupSucceeded)
		g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(b.Status.Databases).To(HaveLen(2))
		for _, d := range b.Status.Databases {
			g.Expect(d.Size).To(BeNumerically(">", 0))
			g.Expect(d.SHA256).To(HaveLen(64))
		}
		m, err := backupStore.Manifest(ctx, b.Status.Location)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(m.TenantUID).To(Equal(b.Status.TenantUID))
		// The passwords go with the Job's end; the Job stays, for its logs.
		g.Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(plan), plan))
		}).WithTimeout(timeout).Should(BeTrue())
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
	})

	for _, db := range []string{"app", "legacy"} {
		execAs(NewWithT(t), "bk-acme", db, "UPDATE notes SET body = 'changed' WHERE id = 2", "INSERT INTO notes VALUES (3, 'after the backup')")
	}

	t.Run("a restore into the tenant backed up takes a safety backup first, then puts the data back as it was", func(t *testing.T) {
		g := NewWithT(t)
		rs := createRestore(t, suite, "bk-acme-back", "bk-acme-1", "")
		safety := waitBackup(t, tenantbackup.SafetyBackupName(rs.Name), tenancyv1alpha1.BackupRunning)
		// Nothing is written before the data it replaces is kept.
		g.Expect(waitRestore(t, rs.Name, tenancyv1alpha1.BackupPending).Status.Job).To(BeEmpty())
		runJob(t, safety.Status.Job)
		waitBackup(t, safety.Name, tenancyv1alpha1.BackupSucceeded)

		rs = waitRestore(t, rs.Name, tenancyv1alpha1.BackupRunning)
		runJob(t, rs.Status.Job)
		waitRestore(t, rs.Name, tenancyv1alpha1.BackupSucceeded)
		for _, db := range []string{"app", "legacy"} {
			g.Expect(rows(g, "bk-acme", db)).To(Equal([]string{"kept", "edited later"}), db)
		}
	})

	t.Run("a restore made again under the same name takes a safety backup of its own time, or waits", func(t *testing.T) {
		g := NewWithT(t)
		rs := &tenancyv1alpha1.TenantRestore{ObjectMeta: metav1.ObjectMeta{Name: "bk-acme-back"}}
		g.Expect(k8s.Delete(ctx, rs)).To(Succeed())
		g.Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(rs), rs)) }).WithTimeout(timeout).Should(BeTrue())
		// (Deleted with the first one's safety backup, by the first one's cleanup.)
		g.Expect(k8s.Create(ctx, &tenancyv1alpha1.TenantRestore{ObjectMeta: metav1.ObjectMeta{Name: "bk-acme-back"}, Spec: tenancyv1alpha1.TenantRestoreSpec{Backup: "bk-acme-1"}})).To(Succeed())
		// The earlier restore's safety backup stands for nothing of now.
		waitRestoreStalled(t, "bk-acme-back", tenancyv1alpha1.ReasonBackupRefused, "is not this restore's safety backup")
		// Once it is deleted, this restore takes its own, under the same name.
		rs = &tenancyv1alpha1.TenantRestore{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-acme-back"}, rs)).To(Succeed())
		g.Expect(k8s.Delete(ctx, &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: tenantbackup.SafetyBackupName("bk-acme-back")}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			safety := &tenancyv1alpha1.TenantBackup{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tenantbackup.SafetyBackupName("bk-acme-back")}, safety)).To(Succeed())
			g.Expect(safety.Labels).To(HaveKeyWithValue(tenantbackup.SafetyBackupUIDLabel, string(rs.UID)))
			g.Expect(safety.Status.Phase).To(Equal(tenancyv1alpha1.BackupRunning))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a copy goes only into a tenant that accepts copies of the tenant backed up", func(t *testing.T) {
		g := NewWithT(t)
		createTenant(suite, newTenant("bk-staging", withDatabases))
		createRestore(t, suite, "bk-acme-copy", "bk-acme-1", "bk-staging")
		rs := waitRestoreStalled(t, "bk-acme-copy", tenancyv1alpha1.ReasonBackupRefused, "does not accept copies of tenant bk-acme")
		g.Expect(rs.Status.SafetyBackup).To(BeEmpty())
	})

	t.Run("a copy replaces the accepting tenant's data after a safety backup, under its own logins, whose password the copy's code cannot keep", func(t *testing.T) {
		g := NewWithT(t)
		source := &tenancyv1alpha1.TenantBackup{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-acme-1"}, source)).To(Succeed())
		staging := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-staging"}, staging)).To(Succeed())
		orig := staging.DeepCopy()
		staging.Annotations = map[string]string{tenancyv1alpha1.AcceptCopyFromAnnotation: source.Status.TenantUID}
		g.Expect(k8s.Patch(ctx, staging, client.MergeFrom(orig))).To(Succeed())

		safety := waitBackup(t, tenantbackup.SafetyBackupName("bk-acme-copy"), tenancyv1alpha1.BackupRunning)
		g.Expect(safety.Spec.Tenant).To(Equal("bk-staging"))
		runJob(t, safety.Status.Job)
		waitBackup(t, safety.Name, tenancyv1alpha1.BackupSucceeded)
		rs := waitRestore(t, "bk-acme-copy", tenancyv1alpha1.BackupRunning)
		runJob(t, rs.Status.Job)
		waitRestore(t, rs.Name, tenancyv1alpha1.BackupSucceeded)
		for _, db := range []string{"app", "legacy"} {
			g.Expect(rows(g, "bk-staging", db)).To(Equal([]string{"kept", "edited later"}), db)
			g.Expect(testenv.AccountOf(credentials(g, "bk-staging", db)).Username).NotTo(Equal(testenv.AccountOf(credentials(g, "bk-acme", db)).Username))
		}
		// The trap ran as the copy's login during the load; the login's password is Landlord's
		// again once the restore is done.
		g.Expect(dbtest.CanUse(ctx, servers[database.Postgres].Server, testenv.AccountOf(credentials(g, "bk-staging", "app")))).To(Succeed())
	})

	t.Run("deleting a backup whose Job runs stops the Job before the store is cleaned", func(t *testing.T) {
		g := NewWithT(t)
		createBackup(t, suite, "bk-acme-dropped", "bk-acme")
		b := waitBackup(t, "bk-acme-dropped", tenancyv1alpha1.BackupRunning)
		// The container starts as the backup is deleted: it is stopped (SIGTERM: it removes
		// what it wrote) before its pod goes, and the store is cleaned once the Job is gone.
		releaseJob(t, b.Status.Job)
		deleteBackup(t, b.Name)
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx, pods, client.InNamespace(opConfig.Backups.Namespace), client.MatchingLabels{batchv1.JobNameLabel: b.Status.Job})).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty(), "a pod outlived its backup")
		_, err := backupStore.Manifest(ctx, b.Status.Location)
		g.Expect(err).To(MatchError(backup.ErrNoManifest), "a pod outlived its backup and wrote it to the store")
	})

	t.Run("a restore whose tenant is deleted while its Job runs ends, and says its logins were not set back", func(t *testing.T) {
		g := NewWithT(t)
		source := &tenancyv1alpha1.TenantBackup{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-acme-1"}, source)).To(Succeed())
		createTenant(suite, newTenant("bk-gone", withDatabases, func(t *tenancyv1alpha1.Tenant) {
			t.Annotations = map[string]string{tenancyv1alpha1.AcceptCopyFromAnnotation: source.Status.TenantUID}
		}))
		rs := createRestore(t, suite, "bk-acme-gone", "bk-acme-1", "bk-gone")
		safety := waitBackup(t, tenantbackup.SafetyBackupName(rs.Name), tenancyv1alpha1.BackupRunning)
		runJob(t, safety.Status.Job)
		rs = waitRestore(t, rs.Name, tenancyv1alpha1.BackupRunning)
		deleteTenant(t, "bk-gone")
		// Played: what a real Job makes of databases whose tenant is going depends on how far
		// the deletion went when it connected; this tests what the restore says of a Job that
		// ended after its tenant went.
		endPod(t, rs.Status.Job, 0)
		rs = waitRestore(t, rs.Name, tenancyv1alpha1.BackupSucceeded)
		g.Expect(meta.FindStatusCondition(rs.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message).To(ContainSubstring("the logins were not set back: tenant bk-gone is gone"))
		g.Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.Backups.Namespace, Name: rs.Status.Job}, &corev1.Secret{}))
		}).WithTimeout(timeout).Should(BeTrue(), "the plan's passwords outlived the restore")
	})

	t.Run("a restore into a tenant that does not exist yet starts once it does", func(t *testing.T) {
		g := NewWithT(t)
		rs := createRestore(t, suite, "bk-acme-later", "bk-acme-1", "bk-later")
		waitRestoreStalled(t, rs.Name, tenancyv1alpha1.ReasonTenantNotFound, "tenant bk-later does not exist")
		source := &tenancyv1alpha1.TenantBackup{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-acme-1"}, source)).To(Succeed())
		createTenant(suite, newTenant("bk-later", withDatabases, func(t *tenancyv1alpha1.Tenant) {
			t.Annotations = map[string]string{tenancyv1alpha1.AcceptCopyFromAnnotation: source.Status.TenantUID}
		}))
		waitBackup(t, tenantbackup.SafetyBackupName(rs.Name), tenancyv1alpha1.BackupRunning)
	})

	t.Run("a Job that fails leaves a failed backup and nothing of it in the store", func(t *testing.T) {
		g := NewWithT(t)
		createBackup(t, suite, "bk-acme-killed", "bk-acme")
		b := waitBackup(t, "bk-acme-killed", tenancyv1alpha1.BackupRunning)
		// Played: a container killed (137, as by the OOM killer), which the real Job is not on demand.
		endPod(t, b.Status.Job, 137)
		b = waitBackup(t, "bk-acme-killed", tenancyv1alpha1.BackupFailed)
		g.Expect(meta.FindStatusCondition(b.Status.Conditions, tenancyv1alpha1.StalledCondition).Reason).To(Equal(tenancyv1alpha1.ReasonJobFailed))
		_, err := backupStore.Manifest(ctx, b.Status.Location)
		g.Expect(err).To(MatchError(backup.ErrNoManifest))
	})

	t.Run("a Job that ends without writing its manifest is no backup", func(t *testing.T) {
		g := NewWithT(t)
		createBackup(t, suite, "bk-acme-empty", "bk-acme")
		b := waitBackup(t, "bk-acme-empty", tenancyv1alpha1.BackupRunning)
		// Played: the real Job writes its manifest whenever it exits 0.
		endPod(t, b.Status.Job, 0)
		b = waitBackup(t, "bk-acme-empty", tenancyv1alpha1.BackupFailed)
		g.Expect(meta.FindStatusCondition(b.Status.Conditions, tenancyv1alpha1.ReadyCondition).Message).To(ContainSubstring("without writing the backup's manifest"))
	})

	t.Run("a restore of a failed backup is refused, naming it", func(t *testing.T) {
		createRestore(t, t, "bk-acme-from-failed", "bk-acme-killed", "")
		waitRestoreStalled(t, "bk-acme-from-failed", tenancyv1alpha1.ReasonBackupMismatch, "bk-acme-killed failed")
	})

	t.Run("deleting a backup deletes it from the store", func(t *testing.T) {
		g := NewWithT(t)
		b := &tenancyv1alpha1.TenantBackup{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-acme-1"}, b)).To(Succeed())
		deleteBackup(t, "bk-acme-1")
		_, err := backupStore.Manifest(ctx, b.Status.Location)
		g.Expect(err).To(MatchError(backup.ErrNoManifest))
	})
}

// TestTwoRestoresIntoOneTenantTakeTurns: two restores into one tenant at once would interleave
// their drops and loads. Both take their safety backups; then one runs while the other waits,
// and the other runs once the first has ended, even when both become ready in the same instant.
func TestTwoRestoresIntoOneTenantTakeTurns(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	suite := t
	createTenant(t, newTenant("bk-turns", withDatabases))
	createBackup(t, suite, "bk-turns-1", "bk-turns")
	runJob(t, waitBackup(t, "bk-turns-1", tenancyv1alpha1.BackupRunning).Status.Job)
	waitBackup(t, "bk-turns-1", tenancyv1alpha1.BackupSucceeded)

	names := []string{"bk-turns-a", "bk-turns-b"}
	for _, name := range names {
		createRestore(t, suite, name, "bk-turns-1", "")
	}
	// Both safety backups are released together and end within moments of each other: both
	// restores are ready to start at once.
	var safetyJobs []string
	for _, name := range names {
		safetyJobs = append(safetyJobs, waitBackup(t, tenantbackup.SafetyBackupName(name), tenancyv1alpha1.BackupRunning).Status.Job)
	}
	for _, job := range safetyJobs {
		releaseJob(t, job)
	}
	for _, job := range safetyJobs {
		waitJobSucceeded(t, job)
	}

	running := func(g Gomega) (first, waiting *tenancyv1alpha1.TenantRestore) {
		var open []*tenancyv1alpha1.TenantRestore
		for _, name := range names {
			rs := &tenancyv1alpha1.TenantRestore{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, rs)).To(Succeed())
			if rs.Status.Job != "" && rs.Status.Phase != tenancyv1alpha1.BackupSucceeded {
				first = rs
			} else if rs.Status.Phase != tenancyv1alpha1.BackupSucceeded {
				waiting = rs
			}
			open = append(open, rs)
		}
		jobs := &batchv1.JobList{}
		g.Expect(k8s.List(ctx, jobs, client.InNamespace(opConfig.Backups.Namespace))).To(Succeed())
		restoring := 0
		for _, j := range jobs.Items {
			for _, rs := range open {
				if metav1.IsControlledBy(&j, rs) && j.Status.CompletionTime == nil && j.Status.Failed == 0 {
					restoring++
				}
			}
		}
		NewWithT(t).Expect(restoring).To(BeNumerically("<=", 1), "restore Jobs writing into one tenant at once")
		return first, waiting
	}
	var first *tenancyv1alpha1.TenantRestore
	g.Eventually(func(g Gomega) {
		var waiting *tenancyv1alpha1.TenantRestore
		first, waiting = running(g)
		g.Expect(first).NotTo(BeNil())
		g.Expect(waiting).NotTo(BeNil())
		cond := meta.FindStatusCondition(waiting.Status.Conditions, tenancyv1alpha1.ReconcilingCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(tenancyv1alpha1.ReasonRestoreWaiting))
		g.Expect(cond.Message).To(ContainSubstring(first.Name))
	}).WithTimeout(timeout).Should(Succeed())
	// The one waiting does not start while the first runs.
	g.Consistently(func(g Gomega) { running(g) }).WithTimeout(2 * time.Second).Should(Succeed())

	runJob(t, first.Status.Job)
	waitRestore(t, first.Name, tenancyv1alpha1.BackupSucceeded)
	second := names[0]
	if second == first.Name {
		second = names[1]
	}
	runJob(t, waitRestore(t, second, tenancyv1alpha1.BackupRunning).Status.Job)
	waitRestore(t, second, tenancyv1alpha1.BackupSucceeded)
}

func TestABackupIsRefusedWhereTheDataIsNotTheTenantsToCopy(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("bk-moved", withDatabases))
	for _, tc := range []struct {
		name, backup, tenant string
		before               func(g Gomega)
		reason, message      string
	}{
		{
			name: "a tenant that does not exist", backup: "bk-nobody", tenant: "bk-nobody",
			reason: tenancyv1alpha1.ReasonTenantNotFound, message: "tenant bk-nobody does not exist",
		},
		{
			name: "a tenant moved to another cluster", backup: "bk-moved-1", tenant: "bk-moved",
			before: func(g Gomega) {
				tenant := &tenancyv1alpha1.Tenant{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "bk-moved"}, tenant)).To(Succeed())
				orig := tenant.DeepCopy()
				tenant.Annotations = map[string]string{tenancyv1alpha1.MovedToAnnotation: "https://eu-2.example.com"}
				g.Expect(k8s.Patch(ctx, tenant, client.MergeFrom(orig))).To(Succeed())
			},
			reason: tenancyv1alpha1.ReasonBackupRefused, message: "was moved to https://eu-2.example.com",
		},
	} {
		t.Run(tc.name+" is not backed up, and the backup says why", func(t *testing.T) {
			g := NewWithT(t)
			if tc.before != nil {
				tc.before(g)
			}
			createBackup(t, t, tc.backup, tc.tenant)
			g.Eventually(func(g Gomega) {
				b := &tenancyv1alpha1.TenantBackup{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tc.backup}, b)).To(Succeed())
				g.Expect(b.Status.Phase).To(Equal(tenancyv1alpha1.BackupPending))
				stalled := meta.FindStatusCondition(b.Status.Conditions, tenancyv1alpha1.StalledCondition)
				g.Expect(stalled).NotTo(BeNil())
				g.Expect(stalled.Reason).To(Equal(tc.reason))
				g.Expect(stalled.Message).To(ContainSubstring(tc.message))
				g.Expect(b.Status.Job).To(BeEmpty())
			}).WithTimeout(timeout).Should(Succeed())
		})
	}
}
