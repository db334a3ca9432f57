package tenantbackup_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenantbackup"
	"github.com/landlord-dev/landlord/test/testenv"
)

// Migrations change tenants' data, so they are tested here, with the databases and the backup
// store: their Jobs really run (test/migrator, as the local cluster runs testenv.MigratorImage),
// against the tenant's own PostgreSQL and MariaDB databases.

// appManifests is a component of one Deployment running the template's image.
const appManifests = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 2
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: app
          image: {{ .Component.ImageRef }}
          securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`

// sqlStep is a migration that runs statements in one of the tenant's databases.
func sqlStep(name, db string, stmts ...string) tenancyv1alpha1.MigrationJob {
	return tenancyv1alpha1.MigrationJob{
		Name: name, Image: testenv.MigratorImage, Databases: []string{db},
		Args: append([]string{strings.TrimSuffix(dbPrefix(db), "_")}, stmts...),
	}
}

func dbPrefix(db string) string { return "DB_" + strings.ToUpper(db) + "_" }

// publishVersion creates a ComponentTemplate with migrations, removed when the test ends.
func publishVersion(t *testing.T, component, version string, m *tenancyv1alpha1.Migrations) {
	t.Helper()
	ct := &tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.ComponentTemplateName(component, version)},
		Spec: tenancyv1alpha1.ComponentTemplateSpec{
			Component: component, Version: version, Image: "registry.example.com/" + component, Manifests: appManifests, Migrations: m,
		},
	}
	NewWithT(t).Expect(k8s.Create(context.Background(), ct)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ct) })
}

func runs(component, version string, follow bool) func(*tenancyv1alpha1.Tenant) {
	return func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Components = append(t.Spec.Components, tenancyv1alpha1.Component{Name: component, Version: version, FollowRollouts: follow})
	}
}

// setVersion pins the tenant's (only) component to version.
func setVersion(t *testing.T, tenant, version string) {
	t.Helper()
	g := NewWithT(t)
	got := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: tenant}, got)).To(Succeed())
	got.Spec.Components[0].Version = version
	g.Expect(k8s.Update(context.Background(), got)).To(Succeed())
}

// componentStatus waits until the tenant's component status satisfies check, and returns it.
func componentStatus(t *testing.T, tenant string, check func(g Gomega, st tenancyv1alpha1.ComponentStatus, t *tenancyv1alpha1.Tenant)) tenancyv1alpha1.ComponentStatus {
	t.Helper()
	var out tenancyv1alpha1.ComponentStatus
	NewWithT(t).Eventually(func(g Gomega) {
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: tenant}, got)).To(Succeed())
		g.Expect(got.Status.Components).To(HaveLen(1))
		out = got.Status.Components[0]
		check(g, out, got)
	}).WithTimeout(2 * timeout).Should(Succeed())
	return out
}

// images are the images of the tenant's app pods, and of its Deployment.
func images(g Gomega, tenant string) (deployment string, pods []string) {
	ctx := context.Background()
	ns := opConfig.NamespaceName(tenant)
	d := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, d)).To(Succeed())
	list := &corev1.PodList{}
	g.Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": "app"})).To(Succeed())
	for _, p := range list.Items {
		pods = append(pods, p.Spec.Containers[0].Image)
	}
	return d.Spec.Template.Spec.Containers[0].Image, pods
}

// columns lists a table's columns in a tenant database, through the tenant's login.
func columns(g Gomega, tenant, db, table string) []string {
	conn := openAs(g, tenant, db)
	defer conn.Close()
	r, err := conn.Query("SELECT * FROM " + table + " WHERE 1 = 0")
	g.Expect(err).NotTo(HaveOccurred())
	defer r.Close()
	cols, err := r.Columns()
	g.Expect(err).NotTo(HaveOccurred())
	return cols
}

// holdLock takes a lock the migrations of this file wait for (a PostgreSQL advisory lock, a
// MariaDB named lock), in a session of the tenant's own, and returns its release.
func holdLock(t *testing.T, tenant, db string) func() {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	pool := openAs(g, tenant, db)
	conn, err := pool.Conn(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	take, release := "SELECT pg_advisory_lock(4242)", "SELECT pg_advisory_unlock(4242)"
	if db == "legacy" {
		take, release = "SELECT GET_LOCK('landlord-migration', 5)", "SELECT RELEASE_LOCK('landlord-migration')"
	}
	_, err = conn.ExecContext(ctx, take)
	g.Expect(err).NotTo(HaveOccurred())
	released := false
	free := func() {
		if released {
			return
		}
		released = true
		_, _ = conn.ExecContext(ctx, release)
		_ = conn.Close()
		_ = pool.Close()
	}
	t.Cleanup(free)
	return free
}

// releaseMigrationBackup lets the backup a tenant's move takes run (this suite holds every backup
// Job until a test releases it), and returns its name once it succeeded.
func releaseMigrationBackup(t, owner *testing.T, tenant string) string {
	t.Helper()
	st := componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
		g.Expect(st.Migration).NotTo(BeNil())
		g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationBackingUp), "migration: %+v", st.Migration)
		g.Expect(st.Migration.Backup).NotTo(BeEmpty())
	})
	owner.Cleanup(func() { deleteBackup(owner, st.Migration.Backup) })
	b := waitBackup(t, st.Migration.Backup, tenancyv1alpha1.BackupRunning)
	runJob(t, b.Status.Job)
	waitBackup(t, st.Migration.Backup, tenancyv1alpha1.BackupSucceeded)
	return st.Migration.Backup
}

// waitForLock is the statement a migration runs first to wait for holdLock's lock.
func waitForLock(db string) string {
	if db == "legacy" {
		return "SELECT GET_LOCK('landlord-migration', 300)"
	}
	return "SELECT pg_advisory_lock(4242)"
}

func TestAVersionsMigrationsChangeTheSchemaBeforeAnyOfItsPodsExist(t *testing.T) {
	ctx := context.Background()
	const component = "schema"
	publishVersion(t, component, "1.0", &tenancyv1alpha1.Migrations{Pre: []tenancyv1alpha1.MigrationJob{
		sqlStep("create-pg", "app", "CREATE TABLE items (id INT PRIMARY KEY)"),
		sqlStep("create-my", "legacy", "CREATE TABLE items (id INT PRIMARY KEY)"),
	}})
	publishVersion(t, component, "1.1", &tenancyv1alpha1.Migrations{Pre: []tenancyv1alpha1.MigrationJob{
		sqlStep("note-pg", "app", waitForLock("app"), "ALTER TABLE items ADD COLUMN note VARCHAR(64)"),
		sqlStep("note-my", "legacy", waitForLock("legacy"), "ALTER TABLE items ADD COLUMN note VARCHAR(64)"),
	}})
	suite := t
	const tenant = "mig-schema"
	created := newTenant(tenant, withDatabases, runs(component, "1.0", false))
	created.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "mig-schema-admin"}}
	createTenant(t, created)

	t.Run("a new tenant's component starts only once the migrations of its version ran", func(t *testing.T) {
		g := NewWithT(t)
		st := componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Ready).To(BeTrue())
		})
		g.Expect(st.Migration).NotTo(BeNil())
		g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationSucceeded))
		g.Expect(st.Migration.From).To(BeEmpty())
		g.Expect(st.Migration.Backup).To(BeEmpty(), "a new tenant has no data to back up")
		for _, db := range []string{"app", "legacy"} {
			g.Expect(columns(g, tenant, db, "items")).To(Equal([]string{"id"}))
		}
	})

	pgLock := holdLock(t, tenant, "app")
	myLock := holdLock(t, tenant, "legacy")
	setVersion(t, tenant, "1.1")

	var backup, job string
	t.Run("the databases are backed up first, then the pre migration runs while the old version serves", func(t *testing.T) {
		g := NewWithT(t)
		g.Consistently(func(g Gomega) {
			d, pods := images(g, tenant)
			g.Expect(d).To(Equal("registry.example.com/schema:1.0"))
			g.Expect(pods).To(HaveEach("registry.example.com/schema:1.0"))
		}).WithTimeout(time.Second).Should(Succeed())
		backup = releaseMigrationBackup(t, suite, tenant)
		st := componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, got *tenancyv1alpha1.Tenant) {
			g.Expect(st.Migration).NotTo(BeNil())
			g.Expect(st.Migration.Step).To(Equal("1.1/pre/note-pg"), "migration: %+v", st.Migration)
			c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ComponentsReadyCondition)
			g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ReasonMigrating))
		})
		g.Expect(st.Version).To(Equal("1.0"))
		g.Expect(st.Migration.From).To(Equal("1.0"))
		g.Expect(st.Migration.To).To(Equal("1.1"))
		g.Expect(st.Migration.Backup).To(Equal(backup))
		job = st.Migration.Job
		b := &tenancyv1alpha1.TenantBackup{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: backup}, b)).To(Succeed())
		g.Expect(b.Status.Phase).To(Equal(tenancyv1alpha1.BackupSucceeded), "the backup ended before any migration started")
		g.Expect(b.Spec.Databases).To(ConsistOf("app", "legacy"))

		g.Consistently(func(g Gomega) {
			d, pods := images(g, tenant)
			g.Expect(d).To(Equal("registry.example.com/schema:1.0"))
			g.Expect(pods).To(HaveLen(2))
			g.Expect(pods).To(HaveEach("registry.example.com/schema:1.0"))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	t.Run("a tenant user can neither change nor delete the migration's Job or pod", func(t *testing.T) {
		g := NewWithT(t)
		admin := env.Impersonate(t, "mig-schema-admin")
		ns := opConfig.NamespaceName(tenant)
		j := &batchv1.Job{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, j)).To(Succeed())
		patched := j.DeepCopy()
		patched.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
		err := admin.Update(ctx, patched)
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "update: %v", err)
		err = admin.Delete(ctx, j)
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "delete: %v", err)
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job})).To(Succeed())
		g.Expect(pods.Items).NotTo(BeEmpty())
		err = admin.Delete(ctx, &pods.Items[0])
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "deleting the migration's pod: %v", err)
		// The credentials reach it by reference to the tenant's own Secret, never by value.
		for _, e := range j.Spec.Template.Spec.Containers[0].Env {
			g.Expect(e.Value).To(BeEmpty(), "variable %s", e.Name)
			g.Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("db-app"))
		}
	})

	t.Run("each pre migration runs in turn, and none of the version's pods exists before the last ends", func(t *testing.T) {
		g := NewWithT(t)
		pgLock()
		componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Migration.Step).To(Equal("1.1/pre/note-my"), "migration: %+v", st.Migration)
		})
		g.Expect(columns(g, tenant, "app", "items")).To(Equal([]string{"id", "note"}))
		g.Consistently(func(g Gomega) {
			d, pods := images(g, tenant)
			g.Expect(d).To(Equal("registry.example.com/schema:1.0"))
			g.Expect(pods).To(HaveEach("registry.example.com/schema:1.0"))
		}).WithTimeout(time.Second).Should(Succeed())
		myLock()
		st := componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Version).To(Equal("1.1"))
			g.Expect(st.Ready).To(BeTrue())
		})
		g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationSucceeded))
		g.Expect(st.Migration.FinishedAt).NotTo(BeNil())
		g.Expect(st.Migration.Backup).To(Equal(backup))
		g.Expect(columns(g, tenant, "legacy", "items")).To(Equal([]string{"id", "note"}))
		testenv.WaitTenantCurrent(t, k8s, tenant, timeout)
	})
}

func TestAFailedMigrationKeepsTheVersionItRanHaltsTheRolloutAndItsBackupBringsTheDataBack(t *testing.T) {
	ctx := context.Background()
	const component = "failing"
	publishVersion(t, component, "1.0", nil)
	publishVersion(t, component, "1.1", &tenancyv1alpha1.Migrations{Pre: []tenancyv1alpha1.MigrationJob{
		sqlStep("half", "app", "INSERT INTO notes VALUES (9, 'written by the migration')", "ALTER TABLE missing ADD COLUMN x INT"),
	}})
	const tenant = "mig-fail"
	createTenant(t, newTenant(tenant, withDatabases, runs(component, "1.0", true), func(t *tenancyv1alpha1.Tenant) {
		t.Labels = map[string]string{"migrations-test": "failing"}
	}))
	execAs(NewWithT(t), tenant, "app", "CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(64))", "INSERT INTO notes VALUES (1, 'before')")

	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "failing-1.1"},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: component, Version: "1.1",
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"migrations-test": "failing"}}},
	}
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })

	backup := releaseMigrationBackup(t, t, tenant)
	var st tenancyv1alpha1.ComponentStatus
	t.Run("the tenant reports MigrationFailed naming the version, the Job and its last words", func(t *testing.T) {
		g := NewWithT(t)
		st = componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, got *tenancyv1alpha1.Tenant) {
			g.Expect(st.Migration).NotTo(BeNil())
			g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationFailed), "migration: %+v", st.Migration)
			stalled := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonMigrationFailed))
			g.Expect(stalled.Message).To(ContainSubstring("1.1/pre/half"))
			g.Expect(stalled.Message).To(ContainSubstring(st.Migration.Job))
			g.Expect(stalled.Message).To(ContainSubstring("missing"), "the migration's own error")
		})
		g.Expect(st.Version).To(Equal("1.0"))
		g.Expect(st.Reason).To(Equal(tenancyv1alpha1.ReasonMigrationFailed))
		// What LandlordMigrationsFailed alerts on.
		families, err := ctrlmetrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		failed := 0.0
		for _, f := range families {
			if f.GetName() != "landlord_migrations_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["component"] == component && labels["result"] == "failed" {
					failed = m.GetCounter().GetValue()
				}
			}
		}
		g.Expect(failed).To(BeNumerically(">=", 1), "landlord_migrations_total{component=%q,result=\"failed\"}", component)
		creds := credentials(g, tenant, "app")
		for _, secret := range []string{string(creds.Data[tenancyv1alpha1.CredentialsKeyPassword]), string(creds.Data[tenancyv1alpha1.CredentialsKeyURL])} {
			g.Expect(st.Migration.Message).NotTo(ContainSubstring(secret))
		}
	})

	t.Run("the workloads stay on the version they ran, with their pods", func(t *testing.T) {
		NewWithT(t).Consistently(func(g Gomega) {
			d, pods := images(g, tenant)
			g.Expect(d).To(Equal("registry.example.com/failing:1.0"))
			g.Expect(pods).To(HaveLen(2))
			g.Expect(pods).To(HaveEach("registry.example.com/failing:1.0"))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	t.Run("the rollout counts it as its version's failure and halts, naming the tenant", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &tenancyv1alpha1.ComponentRollout{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ro), got)).To(Succeed())
			g.Expect(got.Status.Failed).To(BeEquivalentTo(1))
			g.Expect(got.Status.Blocked).To(BeEquivalentTo(0))
			stalled := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Message).To(ContainSubstring(tenant))
			var failure *tenancyv1alpha1.RolloutFailure
			for _, w := range got.Status.Waves {
				for i := range w.Failed {
					if w.Failed[i].Tenant == tenant {
						failure = &w.Failed[i]
					}
				}
			}
			g.Expect(failure).NotTo(BeNil())
			g.Expect(failure.Reason).To(Equal(tenancyv1alpha1.ReasonMigrationFailed))
			g.Expect(failure.OwnCause).To(BeFalse())
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("the backup taken before it is kept, and only an explicit restore brings the data back", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(st.Migration.Backup).To(Equal(backup))
		g.Expect(rows(g, tenant, "app")).To(Equal([]string{"before", "written by the migration"}), "nothing is restored on its own")
		rs := createRestore(t, t, "mig-fail-back", backup, "")
		safety := waitBackup(t, tenantbackup.SafetyBackupName(rs.Name), tenancyv1alpha1.BackupRunning)
		runJob(t, safety.Status.Job)
		runJob(t, waitRestore(t, rs.Name, tenancyv1alpha1.BackupRunning).Status.Job)
		waitRestore(t, rs.Name, tenancyv1alpha1.BackupSucceeded)
		g.Expect(rows(g, tenant, "app")).To(Equal([]string{"before"}))
	})
}

func TestSkippingVersionsRunsEachVersionsMigrationsInOrder(t *testing.T) {
	const component = "skips"
	off := func(m *tenancyv1alpha1.Migrations) *tenancyv1alpha1.Migrations {
		m.Backup = tenancyv1alpha1.MigrationBackupOff
		return m
	}
	publishVersion(t, component, "1.0", off(&tenancyv1alpha1.Migrations{Pre: []tenancyv1alpha1.MigrationJob{
		sqlStep("log", "app", "CREATE TABLE log (n SERIAL PRIMARY KEY, version VARCHAR(8))"),
	}}))
	for _, v := range []string{"1.1", "1.2", "1.3"} {
		publishVersion(t, component, v, off(&tenancyv1alpha1.Migrations{Pre: []tenancyv1alpha1.MigrationJob{
			sqlStep("log", "app", fmt.Sprintf("INSERT INTO log (version) VALUES ('%s')", v)),
		}}))
	}
	logged := func(g Gomega, tenant string) []string {
		conn := openAs(g, tenant, "app")
		defer conn.Close()
		return strings.Split(queryString(g, conn, "SELECT COALESCE(string_agg(version, ',' ORDER BY n), '') FROM log"), ",")
	}

	t.Run("a tenant moved from 1.0 to 1.3 runs 1.1's, 1.2's and 1.3's", func(t *testing.T) {
		g := NewWithT(t)
		createTenant(t, newTenant("mig-skip", withDatabases, runs(component, "1.0", false)))
		setVersion(t, "mig-skip", "1.3")
		componentStatus(t, "mig-skip", func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Version).To(Equal("1.3"))
			g.Expect(st.Ready).To(BeTrue())
		})
		g.Expect(logged(g, "mig-skip")).To(Equal([]string{"1.1", "1.2", "1.3"}))
	})

	t.Run("a pool's spare created at 1.3 is claimable only once every version's migrations ran", func(t *testing.T) {
		g := NewWithT(t)
		spec := newTenant("unused", withDatabases, runs(component, "1.3", false)).Spec
		spec.Organization, spec.Email = "", ""
		claim := claimedSpare(t, "mig-pool", spec)
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: claim.Status.Tenant}, got)).To(Succeed())
		m := got.Status.Components[0].Migration
		g.Expect(m).NotTo(BeNil())
		g.Expect(m.Phase).To(Equal(tenancyv1alpha1.MigrationSucceeded))
		g.Expect(m.FinishedAt.Time).NotTo(BeTemporally(">", claim.Status.BoundTime.Time), "bound before its migrations ended")
		g.Expect(logged(g, claim.Status.Tenant)).To(Equal([]string{"1.1", "1.2", "1.3"}))
	})

	t.Run("a tenant created at 1.3 runs every version's before its component starts", func(t *testing.T) {
		g := NewWithT(t)
		createTenant(t, newTenant("mig-new", withDatabases, runs(component, "1.3", false)))
		g.Expect(logged(g, "mig-new")).To(Equal([]string{"1.1", "1.2", "1.3"}))
	})
}

// claimedSpare creates a pool of one spare from spec, claims it, and returns the claim once
// Bound; the pool, the claim and every tenant the pool made go when the test ends.
func claimedSpare(t *testing.T, pool string, spec tenancyv1alpha1.TenantSpec) *tenancyv1alpha1.TenantClaim {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	p := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec:       tenancyv1alpha1.TenantPoolSpec{Replicas: 1, Template: tenancyv1alpha1.TenantTemplate{Spec: spec}},
	}
	g.Expect(k8s.Create(ctx, p)).To(Succeed())
	claim := &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Name: pool + "-signup", Namespace: "default"},
		Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: pool, Organization: "Spare Inc.", Email: "ops@spare.example.com"},
	}
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, claim)
		_ = k8s.Delete(ctx, p)
		tenants := &tenancyv1alpha1.TenantList{}
		_ = k8s.List(ctx, tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: pool})
		var names []string
		for _, tn := range tenants.Items {
			names = append(names, tn.Name)
		}
		testenv.DeleteTenants(t, k8s, 2*timeout, names...)
	})
	g.Expect(k8s.Create(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimBound))
	}).WithTimeout(3 * timeout).Should(Succeed())
	return claim
}

func queryString(g Gomega, conn *sql.DB, q string) string {
	var s string
	g.Expect(conn.QueryRow(q).Scan(&s)).To(Succeed())
	return s
}

func TestAServerRunsNoMoreMigrationJobsAtOnceThanItsLimit(t *testing.T) {
	ctx := context.Background()
	// One place for this test's Jobs, above those the suite's earlier tests left held.
	setJobLimit(t, pgServer, 1+int32(heldJobsOn(NewWithT(t))[pgServer]))

	const component = "queued"
	publishVersion(t, component, "1.0", nil)
	publishVersion(t, component, "1.1", &tenancyv1alpha1.Migrations{Backup: tenancyv1alpha1.MigrationBackupOff, Pre: []tenancyv1alpha1.MigrationJob{
		sqlStep("wait", "app", waitForLock("app")),
	}})
	tenants := []string{"mig-queue-a", "mig-queue-b"}
	for _, name := range tenants {
		createTenant(t, newTenant(name, withDatabases, runs(component, "1.0", false)))
	}
	// Each tenant's migration waits for a lock in its own database: whichever runs holds the
	// server's one place until the test lets it end.
	releases := []func(){holdLock(t, tenants[0], "app"), holdLock(t, tenants[1], "app")}
	for _, name := range tenants {
		setVersion(t, name, "1.1")
	}

	t.Run("one tenant's migration runs while the other waits its turn, saying for what", func(t *testing.T) {
		var running, waiting string
		NewWithT(t).Eventually(func(g Gomega) {
			running, waiting = "", ""
			var seen []string
			defer func() { g.Expect(seen).To(BeNil(), "the migrations seen") }()
			for _, name := range tenants {
				got := &tenancyv1alpha1.Tenant{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
				g.Expect(got.Status.Components).To(HaveLen(1))
				m := got.Status.Components[0].Migration
				g.Expect(m).NotTo(BeNil())
				seen = append(seen, fmt.Sprintf("%s: %+v", name, *m))
				g.Expect(m.To).To(Equal("1.1"))
				switch {
				case m.Job != "":
					running = name
				case strings.Contains(m.Message, "Jobs (migrations, backups, restores) it allows at once"):
					waiting = name
				}
			}
			g.Expect(running).NotTo(BeEmpty())
			g.Expect(waiting).NotTo(BeEmpty())
			seen = nil
		}).WithTimeout(2 * timeout).Should(Succeed())
	})

	t.Run("once the Job ends, the next one runs, and both tenants move", func(t *testing.T) {
		for _, release := range releases {
			release()
		}
		for _, name := range tenants {
			componentStatus(t, name, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
				g.Expect(st.Version).To(Equal("1.1"))
				g.Expect(st.Ready).To(BeTrue())
				g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationSucceeded))
			})
		}
	})
}

func TestFencedWritersAreStoppedBeforeThePreMigrationAndPostMigrationsRunOnceTheVersionIsReady(t *testing.T) {
	ctx := context.Background()
	const component = "fenced"
	publishVersion(t, component, "1.0", &tenancyv1alpha1.Migrations{Pre: []tenancyv1alpha1.MigrationJob{
		sqlStep("log", "app", "CREATE TABLE steps (n SERIAL PRIMARY KEY, step VARCHAR(16))"),
	}})
	publishVersion(t, component, "1.1", &tenancyv1alpha1.Migrations{
		Backup: tenancyv1alpha1.MigrationBackupOff, FenceWriters: true,
		Pre:  []tenancyv1alpha1.MigrationJob{sqlStep("expand", "app", waitForLock("app"), "INSERT INTO steps (step) VALUES ('expand')")},
		Post: []tenancyv1alpha1.MigrationJob{sqlStep("contract", "app", "INSERT INTO steps (step) VALUES ('contract')")},
	})
	const tenant = "mig-fence"
	createTenant(t, newTenant(tenant, withDatabases, runs(component, "1.0", false)))
	release := holdLock(t, tenant, "app")
	setVersion(t, tenant, "1.1")
	ns := opConfig.NamespaceName(tenant)

	t.Run("the version it runs is scaled to zero, its pods gone, while the pre migration runs", func(t *testing.T) {
		componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Migration).NotTo(BeNil())
			g.Expect(st.Migration.Step).To(Equal("1.1/pre/expand"), "migration: %+v", st.Migration)
		})
		NewWithT(t).Consistently(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(0)))
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/fenced:1.0"))
			_, pods := images(g, tenant)
			g.Expect(pods).To(BeEmpty())
		}).WithTimeout(time.Second).Should(Succeed())
	})

	t.Run("the version moves once it ends, and the post migration runs once its pods are Ready", func(t *testing.T) {
		g := NewWithT(t)
		release()
		st := componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Version).To(Equal("1.1"))
			g.Expect(st.Ready).To(BeTrue())
		})
		g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationSucceeded))
		d, pods := images(g, tenant)
		g.Expect(d).To(Equal("registry.example.com/fenced:1.1"))
		g.Expect(pods).To(HaveLen(2))
		conn := openAs(g, tenant, "app")
		defer conn.Close()
		g.Expect(queryString(g, conn, "SELECT string_agg(step, ',' ORDER BY n) FROM steps")).To(Equal("expand,contract"))
		// The post migration's Job was made after the version's pods were Ready.
		jobs := &batchv1.JobList{}
		g.Expect(k8s.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{tenancyv1alpha1.MigrationLabel: migrationID(g, tenant)})).To(Succeed())
		var contract *batchv1.Job
		for i := range jobs.Items {
			if jobs.Items[i].Annotations["tenancy.landlord.dev/migration-step-name"] == "1.1/post/contract" {
				contract = &jobs.Items[i]
			}
		}
		g.Expect(contract).NotTo(BeNil())
		list := &corev1.PodList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": "app"})).To(Succeed())
		for _, p := range list.Items {
			ready := false
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready = !c.LastTransitionTime.After(contract.CreationTimestamp.Time)
				}
			}
			g.Expect(ready).To(BeTrue(), "pod %s was not Ready when the post migration's Job was made", p.Name)
		}
	})
}

// migrationID is the move ID of the tenant's component's last migration, from its Jobs' label.
func migrationID(g Gomega, tenant string) string {
	jobs := &batchv1.JobList{}
	g.Expect(k8s.List(context.Background(), jobs, client.InNamespace(opConfig.NamespaceName(tenant)), client.HasLabels{tenancyv1alpha1.MigrationLabel})).To(Succeed())
	ids := map[string]bool{}
	for _, j := range jobs.Items {
		ids[j.Labels[tenancyv1alpha1.MigrationLabel]] = true
	}
	g.Expect(ids).To(HaveLen(1), "the Jobs of one move are kept, those of the one before pruned")
	for id := range ids {
		return id
	}
	return ""
}

func TestAMigrationTheTenantsOwnQuotaNeverLetsRunIsNotTheVersionsFailure(t *testing.T) {
	ctx := context.Background()
	const component = "starved"
	publishVersion(t, component, "1.0", nil)
	step := sqlStep("never", "app", "SELECT 1")
	step.Timeout = &metav1.Duration{Duration: 5 * time.Second}
	publishVersion(t, component, "1.1", &tenancyv1alpha1.Migrations{Backup: tenancyv1alpha1.MigrationBackupOff, Pre: []tenancyv1alpha1.MigrationJob{step}})
	const tenant = "mig-starved"
	// Its two pods fill its quota: the migration's pod is refused.
	createTenant(t, newTenant(tenant, withDatabases, runs(component, "1.0", true), func(t *tenancyv1alpha1.Tenant) {
		t.Labels = map[string]string{"migrations-test": "starved"}
		t.Spec.Quota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}
	}))
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "starved-1.1"},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{Component: component, Version: "1.1",
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"migrations-test": "starved"}}},
	}
	NewWithT(t).Expect(k8s.Create(ctx, ro)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ro) })

	t.Run("the tenant reports MigrationNotStarted and stays on the version it ran", func(t *testing.T) {
		st := componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Migration).NotTo(BeNil())
			g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationFailed), "migration: %+v", st.Migration)
		})
		g := NewWithT(t)
		g.Expect(st.Migration.Reason).To(Equal(tenancyv1alpha1.ReasonMigrationNotStarted), "migration: %+v", st.Migration)
		g.Expect(st.Version).To(Equal("1.0"))
		g.Expect(st.Reason).To(Equal(tenancyv1alpha1.ReasonMigrationNotStarted))
	})

	t.Run("the rollout counts it as the tenant's own failure, not the version's", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &tenancyv1alpha1.ComponentRollout{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ro), got)).To(Succeed())
			g.Expect(got.Status.Blocked).To(BeEquivalentTo(1))
			g.Expect(got.Status.Failed).To(BeEquivalentTo(0))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("once there is room, a requested reconcile runs it again as a new attempt, and the tenant moves", func(t *testing.T) {
		g := NewWithT(t)
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tenant}, got)).To(Succeed())
		got.Spec.Quota = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		got.Annotations[tenancyv1alpha1.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
		g.Expect(k8s.Update(ctx, got)).To(Succeed())
		st := componentStatus(t, tenant, func(g Gomega, st tenancyv1alpha1.ComponentStatus, _ *tenancyv1alpha1.Tenant) {
			g.Expect(st.Version).To(Equal("1.1"), "migration: %+v", st.Migration)
			g.Expect(st.Ready).To(BeTrue())
		})
		g.Expect(st.Migration.Phase).To(Equal(tenancyv1alpha1.MigrationSucceeded))
		g.Expect(st.Migration.Attempts).To(BeEquivalentTo(2))
		g.Expect(st.Migration.Job).To(BeEmpty())
	})
}
