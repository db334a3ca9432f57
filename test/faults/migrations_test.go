package faults_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// The migration scenario's components: each version runs one Deployment of two replicas. 1.1's
// pods count as available only after minReadySeconds, which holds its rollout long enough for a
// kill to land in it.
const (
	migrationsScenario = "migrations"
	migratedComponent  = "faults-migrated"
	failingComponent   = "faults-migfail"
	// rolloutHold is 1.1's minReadySeconds.
	rolloutHold = 10
	// preLock and postLock are the PostgreSQL advisory locks 1.1's pre and post migrations wait
	// for first: the test holds them to keep a migration's Job running.
	preLock, postLock = 4242, 4243
	// migrationTimeout bounds each wait for a step of a move: a Job's process starting, a
	// Deployment rolling out, an operator electing itself; the rest is slack for a loaded
	// two-core machine.
	migrationTimeout = time.Minute
)

// componentManifests is a version's Deployment of two replicas, running the template's image.
func componentManifests(minReadySeconds int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 2
  minReadySeconds: %d
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
`, minReadySeconds)
}

// logged is the statement a migration runs to say it ran: a row in the tenant's migration_log.
func logged(step string) string {
	return fmt.Sprintf("INSERT INTO migration_log (step) VALUES ('%s')", step)
}

// sqlMigration runs statements in the tenant's database "app" (test/migrator).
func sqlMigration(name string, stmts ...string) tenancyv1alpha1.MigrationJob {
	return tenancyv1alpha1.MigrationJob{
		Name: name, Image: testenv.MigratorImage, Databases: []string{"app"},
		Args: append([]string{strings.TrimSuffix(migrations.DatabaseEnvPrefix("app"), "_")}, stmts...),
	}
}

// publishComponent publishes versions 1.0 and 1.1 of a component. 1.0's migration creates the
// log and the items table; 1.1 fences the writers and runs pre and post. The fault suite
// configures no backup store (backups.objects), so no backup could be taken: the migrations
// say Off.
func publishComponent(t *testing.T, component string, pre, post []tenancyv1alpha1.MigrationJob) {
	t.Helper()
	versions := map[string]*tenancyv1alpha1.Migrations{
		"1.0": {Backup: tenancyv1alpha1.MigrationBackupOff, Pre: []tenancyv1alpha1.MigrationJob{sqlMigration("schema",
			"CREATE TABLE migration_log (n SERIAL PRIMARY KEY, step VARCHAR(64) NOT NULL)",
			"CREATE TABLE items (id INT PRIMARY KEY)",
			logged("1.0/pre/schema"))}},
		"1.1": {Backup: tenancyv1alpha1.MigrationBackupOff, FenceWriters: true, Pre: pre, Post: post},
	}
	for version, m := range versions {
		hold := 0
		if version == "1.1" {
			hold = rolloutHold
		}
		ct := &tenancyv1alpha1.ComponentTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.ComponentTemplateName(component, version)},
			Spec: tenancyv1alpha1.ComponentTemplateSpec{
				Component: component, Version: version, Image: "registry.example.com/" + component,
				Manifests: componentManifests(hold), Migrations: m,
			},
		}
		NewWithT(t).Expect(env.AdminClient.Create(context.Background(), ct)).To(Succeed())
	}
}

// newComponentTenant is a scenario's tenant with a PostgreSQL database "app" and the component
// at 1.0.
func newComponentTenant(scenario, name, component string) *tenancyv1alpha1.Tenant {
	tenant := newTenant(scenario, name, tenancyv1alpha1.EnginePostgres)
	tenant.Spec.Components = []tenancyv1alpha1.Component{{Name: component, Version: "1.0"}}
	return tenant
}

// moveTo pins the tenant's only component to a version, as its administrator would.
func moveTo(t *testing.T, tenant, component, version string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"components":[{"name":%q,"version":%q}]}}`, component, version)
	NewWithT(t).Expect(env.AdminClient.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenant}},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// componentOf is the tenant's only component status entry.
func componentOf(g Gomega, tenant string) tenancyv1alpha1.ComponentStatus {
	got := getTenant(g, tenant)
	g.Expect(got.Status.Components).To(HaveLen(1))
	return got.Status.Components[0]
}

// migrationOf is the tenant's component's migration, which must be recorded.
func migrationOf(g Gomega, tenant string) tenancyv1alpha1.MigrationStatus {
	st := componentOf(g, tenant)
	g.Expect(st.Migration).NotTo(BeNil(), "component %s has no migration status", st.Name)
	return *st.Migration
}

// waitMigration waits until the tenant's migration satisfies check, and returns it.
func waitMigration(t *testing.T, tenant string, check func(g Gomega, m tenancyv1alpha1.MigrationStatus)) tenancyv1alpha1.MigrationStatus {
	t.Helper()
	var out tenancyv1alpha1.MigrationStatus
	NewWithT(t).Eventually(func(g Gomega) {
		out = migrationOf(g, tenant)
		check(g, out)
	}).WithTimeout(migrationTimeout).WithPolling(50*time.Millisecond).Should(Succeed(), "tenant %s", tenant)
	return out
}

// deployment is the tenant's component's Deployment.
func deployment(g Gomega, tenant string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Namespace: namespaceOf(tenant), Name: "app"}, d)).To(Succeed())
	return d
}

// appPods are the pods of the tenant's component, terminating ones included.
func appPods(g Gomega, tenant string) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(env.AdminClient.List(context.Background(), pods, client.InNamespace(namespaceOf(tenant)), client.MatchingLabels{"app": "app"})).To(Succeed())
	return pods.Items
}

// migrationJobs are the migration Jobs in the tenant's namespace.
func migrationJobs(g Gomega, tenant string) []batchv1.Job {
	jobs := &batchv1.JobList{}
	g.Expect(env.AdminClient.List(context.Background(), jobs, client.InNamespace(namespaceOf(tenant)), client.HasLabels{tenancyv1alpha1.MigrationLabel})).To(Succeed())
	return jobs.Items
}

// jobRunning is whether the Job has a pod that started and has not ended.
func jobRunning(g Gomega, tenant, name string) bool {
	j := &batchv1.Job{}
	g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Namespace: namespaceOf(tenant), Name: name}, j)).To(Succeed())
	finished, _, _ := migrations.Outcome(j)
	return !finished && j.Status.Active > 0 && j.Status.Ready != nil && *j.Status.Ready > 0
}

// waitJobEnded waits until a Job ended, with no operator watching, and says whether it failed.
func waitJobEnded(t *testing.T, tenant, name string) (failed bool) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) bool {
		j := &batchv1.Job{}
		g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Namespace: namespaceOf(tenant), Name: name}, j)).To(Succeed())
		var finished bool
		finished, failed, _ = migrations.Outcome(j)
		return finished
	}).WithTimeout(migrationTimeout).WithPolling(100 * time.Millisecond).Should(BeTrue())
	return failed
}

// openApp connects to the tenant's database "app" as the tenant's own login.
func openApp(g Gomega, tenant string) *sql.DB {
	got := getTenant(g, tenant)
	g.Expect(got.Status.Databases).To(HaveLen(1))
	d := got.Status.Databases[0]
	s := &corev1.Secret{}
	g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Namespace: namespaceOf(tenant), Name: d.SecretName}, s)).To(Succeed())
	acct := testenv.AccountOf(s)
	conn, err := dbtest.OpenDB(servers[d.Server].Server, acct.Username, acct.Password, acct.Database)
	g.Expect(err).NotTo(HaveOccurred())
	return conn
}

// execApp runs statements in the tenant's database "app".
func execApp(g Gomega, tenant string, stmts ...string) {
	conn := openApp(g, tenant)
	defer conn.Close()
	for _, s := range stmts {
		_, err := conn.Exec(s)
		g.Expect(err).NotTo(HaveOccurred(), s)
	}
}

// migrationLog is what the tenant's migrations logged, in the order they ran.
func migrationLog(g Gomega, tenant string) []string {
	conn := openApp(g, tenant)
	defer conn.Close()
	r, err := conn.Query("SELECT step FROM migration_log ORDER BY n")
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

// itemColumns are the columns of the tenant's items table.
func itemColumns(g Gomega, tenant string) []string {
	conn := openApp(g, tenant)
	defer conn.Close()
	r, err := conn.Query("SELECT * FROM items WHERE 1 = 0")
	g.Expect(err).NotTo(HaveOccurred())
	defer r.Close()
	cols, err := r.Columns()
	g.Expect(err).NotTo(HaveOccurred())
	return cols
}

// holdAdvisoryLock takes a PostgreSQL advisory lock in a session of the tenant's own, which a
// migration that starts by taking it waits for; it returns its release.
func holdAdvisoryLock(t *testing.T, tenant string, key int) func() {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	pool := openApp(g, tenant)
	conn, err := pool.Conn(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", key)
	g.Expect(err).NotTo(HaveOccurred())
	var once sync.Once
	release := func() {
		once.Do(func() {
			_, _ = conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", key)
			_ = conn.Close()
			_ = pool.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// waitsForLock is the statement a migration runs first, to wait for holdAdvisoryLock's lock.
func waitsForLock(key int) string { return fmt.Sprintf("SELECT pg_advisory_lock(%d)", key) }

// jobLedger records every migration Job the API server created in a namespace, from a watch
// opened before any of them: a Job deleted and created again under its name shows as two UIDs.
type jobLedger struct {
	mu      sync.Mutex
	created map[string][]types.UID
}

func watchMigrationJobs(t *testing.T, namespace string) *jobLedger {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	jobs := env.Clientset.BatchV1().Jobs(namespace)
	opts := metav1.ListOptions{LabelSelector: tenancyv1alpha1.MigrationLabel}
	list, err := jobs.List(ctx, opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(list.Items).To(BeEmpty(), "migration Jobs in %s before the tenant exists", namespace)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = opts.LabelSelector
			return jobs.Watch(ctx, o)
		},
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	l := &jobLedger{created: map[string][]types.UID{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(*batchv1.Job)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			l.mu.Lock()
			if !slices.Contains(l.created[j.Name], j.UID) {
				l.created[j.Name] = append(l.created[j.Name], j.UID)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// creations is how many times each Job was created, by name.
func (l *jobLedger) creations() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for name, uids := range l.created {
		out[name] = len(uids)
	}
	return out
}

// tenantWatch follows one tenant from the API server's watch, to act the moment it changes.
type tenantWatch struct {
	t      *testing.T
	name   string
	events <-chan watch.Event
}

func watchTenant(t *testing.T, name string) *tenantWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dyn, err := dynamic.NewForConfig(env.Admin)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	w, err := dyn.Resource(tenancyv1alpha1.GroupVersion.WithResource("tenants")).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.Stop)
	return &tenantWatch{t: t, name: name, events: w.ResultChan()}
}

// until returns as soon as the tenant satisfies done.
func (w *tenantWatch) until(done func(*tenancyv1alpha1.Tenant) bool) {
	w.t.Helper()
	timeout := time.After(migrationTimeout)
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				w.t.Fatalf("the watch of tenant %s ended", w.name)
			}
			u, isObject := ev.Object.(*unstructured.Unstructured)
			if !isObject {
				continue
			}
			tn := &tenancyv1alpha1.Tenant{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, tn); err != nil {
				w.t.Fatalf("reading tenant %s from its watch: %v", w.name, err)
			}
			if done(tn) {
				return
			}
		case <-timeout:
			w.t.Fatalf("tenant %s did not get there within %s: %s", w.name, migrationTimeout, describeTenants(migrationsScenario))
		}
	}
}

// operators runs the scenario's operator processes one at a time, each killed before the next
// starts.
type operators struct {
	t        *testing.T
	scenario string
	procs    []*operatorProcess
	// args are each process's extra arguments (a --config of the scenario's).
	args []string
}

func (o *operators) current() *operatorProcess { return o.procs[len(o.procs)-1] }

// start runs the next operator process and waits until it leads.
func (o *operators) start() {
	o.t.Helper()
	p := startOperator(o.t, fmt.Sprintf("%s-%02d", o.scenario, len(o.procs)+1), o.args...)
	o.procs = append(o.procs, p)
	waitLeader(o.t, p)
}

// kill SIGKILLs the running operator, and removes the lease it leaves, as the SIGKILL scenario
// does.
func (o *operators) kill(why string) {
	o.t.Helper()
	o.t.Logf("SIGKILL %s %s", o.current().name, why)
	o.current().kill(o.t)
	deleteLease(o.t)
}

func TestSIGKILLAtEachStepOfAMigrationRunsEveryMigrationOnce(t *testing.T) {
	const scenario = migrationsScenario
	const tenant, failing = "migrations-1", "migrations-failing"
	ctx := context.Background()
	deleteLease(t)
	publishComponent(t, migratedComponent,
		[]tenancyv1alpha1.MigrationJob{sqlMigration("add-note", waitsForLock(preLock), logged("1.1/pre/add-note"), "ALTER TABLE items ADD COLUMN note VARCHAR(64)")},
		[]tenancyv1alpha1.MigrationJob{sqlMigration("backfill", waitsForLock(postLock), logged("1.1/post/backfill"), "UPDATE items SET note = 'backfilled'")})
	publishComponent(t, failingComponent,
		[]tenancyv1alpha1.MigrationJob{sqlMigration("half", waitsForLock(preLock), logged("1.1/pre/half"), "ALTER TABLE missing ADD COLUMN x INT")},
		nil)

	// Every Job of either tenant is recorded from before the first.
	ledger := watchMigrationJobs(t, namespaceOf(tenant))
	failingLedger := watchMigrationJobs(t, namespaceOf(failing))

	ops := &operators{t: t, scenario: scenario}
	defer func() {
		logOperatorErrors(t, ops.procs...)
		if t.Failed() {
			t.Logf("tenants:\n%s%s", describeTenants(scenario), describeTenants(scenario+"-failed"))
		}
	}()
	ops.start()
	failed := newComponentTenant(scenario+"-failed", failing, failingComponent)
	for _, tn := range []*tenancyv1alpha1.Tenant{newComponentTenant(scenario, tenant, migratedComponent), failed} {
		NewWithT(t).Expect(env.AdminClient.Create(ctx, tn)).To(Succeed())
	}
	for _, name := range []string{tenant, failing} {
		testenv.WaitTenantCurrent(t, env.AdminClient, name, convergeTimeout)
		execApp(NewWithT(t), name, "INSERT INTO items (id) VALUES (1), (2)")
	}
	if t.Failed() {
		return
	}

	// moveID names the move from 1.0 to 1.1: its Jobs carry it.
	var moveID string
	var moveJobs []string
	preRelease := holdAdvisoryLock(t, tenant, preLock)
	postRelease := holdAdvisoryLock(t, tenant, postLock)
	t.Run("killed while the fence scales 1.0 to zero, the next operator carries the move on", func(t *testing.T) {
		g := NewWithT(t)
		// Nothing on this cluster keeps a deleted pod for long (kwok ends it at once, and
		// tenant pods may carry no finalizer), so the fence lasts as long as the Deployment
		// controller takes to scale 1.0 down: the kill follows the operator's Fencing status
		// write as closely as a watch allows.
		fencing := watchTenant(t, tenant)
		moveTo(t, tenant, migratedComponent, "1.1")
		moveID = migrations.ID(string(getTenant(g, tenant).UID), migratedComponent, "1.0", "1.1")
		fencing.until(func(tn *tenancyv1alpha1.Tenant) bool {
			return len(tn.Status.Components) == 1 && tn.Status.Components[0].Migration != nil &&
				tn.Status.Components[0].Migration.Phase == tenancyv1alpha1.MigrationFencing
		})
		ops.kill("as soon as the move's status says Fencing")
		m := migrationOf(g, tenant)
		g.Expect(m.Phase).To(Equal(tenancyv1alpha1.MigrationFencing), "the last status the killed operator wrote: %+v", m)
		g.Expect(componentOf(g, tenant).Version).To(Equal("1.0"))
		g.Expect(deployment(g, tenant).Spec.Replicas).To(HaveValue(BeEquivalentTo(0)), "1.0 is scaled to zero")
		var made []string
		for _, j := range migrationJobs(g, tenant) {
			if j.Labels[tenancyv1alpha1.MigrationLabel] == moveID {
				made = append(made, j.Name)
			}
		}
		t.Logf("the move's Jobs when it was killed: %v; 1.0's pods left: %d", made, len(appPods(g, tenant)))
		ops.start()
	})
	if t.Failed() {
		return
	}

	var preJob string
	t.Run("killed twice while the pre migration runs, the migration runs once", func(t *testing.T) {
		g := NewWithT(t)
		m := waitMigration(t, tenant, func(g Gomega, m tenancyv1alpha1.MigrationStatus) {
			g.Expect(m.Phase).To(Equal(tenancyv1alpha1.MigrationPre), "migration: %+v", m)
			g.Expect(m.Step).To(Equal("1.1/pre/add-note"))
			g.Expect(jobRunning(g, tenant, m.Job)).To(BeTrue(), "Job %s runs", m.Job)
		})
		preJob = m.Job
		g.Expect(preJob).To(Equal(migrations.JobName(migratedComponent, moveID, 1, 0)))
		g.Expect(appPods(g, tenant)).To(BeEmpty(), "1.0's pods are gone while the pre migration runs")
		ops.kill("while the pre migration's Job runs")
		ops.start()
		g.Consistently(func(g Gomega) {
			m := migrationOf(g, tenant)
			g.Expect([]any{m.Phase, m.Step, m.Job, m.Attempts}).To(Equal([]any{tenancyv1alpha1.MigrationPre, "1.1/pre/add-note", preJob, int32(1)}))
			g.Expect(jobRunning(g, tenant, preJob)).To(BeTrue())
		}).WithTimeout(2 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		ops.kill("while the pre migration's Job still runs")
		// The migration ends while no operator runs: the next finds it done, the version not
		// yet applied.
		preRelease()
		g.Expect(waitJobEnded(t, tenant, preJob)).To(BeFalse(), "the pre migration failed")
		m = migrationOf(g, tenant)
		g.Expect([]any{m.Phase, m.Job}).To(Equal([]any{tenancyv1alpha1.MigrationPre, preJob}))
		g.Expect(componentOf(g, tenant).Version).To(Equal("1.0"))
		g.Expect(migrationLog(g, tenant)).To(Equal([]string{"1.0/pre/schema", "1.1/pre/add-note"}))
	})
	if t.Failed() {
		return
	}

	t.Run("started after the pre migration ended, then killed while 1.1 rolls out", func(t *testing.T) {
		g := NewWithT(t)
		ops.start()
		waitMigration(t, tenant, func(g Gomega, m tenancyv1alpha1.MigrationStatus) {
			g.Expect(m.Phase).To(Equal(tenancyv1alpha1.MigrationApplying), "migration: %+v", m)
			d := deployment(g, tenant)
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/" + migratedComponent + ":1.1"))
		})
		ops.kill("while 1.1 rolls out")
		d := deployment(g, tenant)
		g.Expect(d.Status.AvailableReplicas).To(BeNumerically("<", 2), "the kill landed while 1.1's pods were not all available")
		var names []string
		for _, j := range migrationJobs(g, tenant) {
			names = append(names, j.Name)
		}
		g.Expect(names).To(ConsistOf(preJob), "the post migration waits for 1.1 to be rolled out")
	})
	if t.Failed() {
		return
	}

	t.Run("killed while the post migration runs, the move ends Succeeded once", func(t *testing.T) {
		g := NewWithT(t)
		ops.start()
		m := waitMigration(t, tenant, func(g Gomega, m tenancyv1alpha1.MigrationStatus) {
			g.Expect(m.Phase).To(Equal(tenancyv1alpha1.MigrationPost), "migration: %+v", m)
			g.Expect(m.Step).To(Equal("1.1/post/backfill"))
			g.Expect(jobRunning(g, tenant, m.Job)).To(BeTrue(), "Job %s runs", m.Job)
		})
		postJob := m.Job
		g.Expect(deployment(g, tenant).Status.AvailableReplicas).To(BeEquivalentTo(2))
		ops.kill("while the post migration's Job runs")
		ops.start()
		postRelease()
		m = waitMigration(t, tenant, func(g Gomega, m tenancyv1alpha1.MigrationStatus) {
			g.Expect(m.Phase).To(Equal(tenancyv1alpha1.MigrationSucceeded), "migration: %+v", m)
		})
		g.Expect([]any{m.From, m.To, m.Attempts, m.Backup}).To(Equal([]any{"1.0", "1.1", int32(1), ""}))
		g.Expect(m.FinishedAt).NotTo(BeNil())
		moveJobs = []string{preJob, postJob}
	})
	if t.Failed() {
		return
	}

	t.Run("every migration ran once, in order, from one Job each, and the tenant is Ready at 1.1", func(t *testing.T) {
		g := NewWithT(t)
		got := testenv.WaitTenantCurrent(t, env.AdminClient, tenant, convergeTimeout)
		g.Expect(got.Status.Components).To(HaveLen(1))
		g.Expect(got.Status.Components[0]).To(And(HaveField("Version", "1.1"), HaveField("Ready", true)))
		g.Expect(migrationLog(g, tenant)).To(Equal([]string{"1.0/pre/schema", "1.1/pre/add-note", "1.1/post/backfill"}))
		g.Expect(itemColumns(g, tenant)).To(Equal([]string{"id", "note"}))
		conn := openApp(g, tenant)
		defer conn.Close()
		var backfilled int
		g.Expect(conn.QueryRow("SELECT count(*) FROM items WHERE note = 'backfilled'").Scan(&backfilled)).To(Succeed())
		g.Expect(backfilled).To(Equal(2))

		// The move's Jobs are the two it ran (1.0's own was pruned when the move started), and
		// the API server created each once.
		var names []string
		for _, j := range migrationJobs(g, tenant) {
			names = append(names, j.Name)
		}
		g.Expect(names).To(ConsistOf(moveJobs))
		g.Expect(ledger.creations()).To(HaveLen(3), "1.0's migration and the move's two: %v", ledger.creations())
		g.Expect(ledger.creations()).To(HaveEach(1), "times each migration Job was created")
		for _, name := range moveJobs {
			g.Expect(ledger.creations()).To(HaveKeyWithValue(name, 1))
		}
		d := deployment(g, tenant)
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		g.Expect(appPods(g, tenant)).To(And(HaveLen(2), HaveEach(HaveField("Spec.Containers", ContainElement(HaveField("Image", "registry.example.com/"+migratedComponent+":1.1"))))))
	})

	t.Run("killed while a pre migration fails, the tenant is MigrationFailed at 1.0, its workloads back up, nothing restored", func(t *testing.T) {
		g := NewWithT(t)
		release := holdAdvisoryLock(t, failing, preLock)
		moveTo(t, failing, failingComponent, "1.1")
		m := waitMigration(t, failing, func(g Gomega, m tenancyv1alpha1.MigrationStatus) {
			g.Expect(m.Phase).To(Equal(tenancyv1alpha1.MigrationPre), "migration: %+v", m)
			g.Expect(m.Step).To(Equal("1.1/pre/half"))
			g.Expect(jobRunning(g, failing, m.Job)).To(BeTrue(), "Job %s runs", m.Job)
		})
		g.Expect(deployment(g, failing).Spec.Replicas).To(HaveValue(BeEquivalentTo(0)), "fenced while the migration runs")
		ops.kill("while the failing pre migration's Job runs")
		release()
		g.Expect(waitJobEnded(t, failing, m.Job)).To(BeTrue(), "the migration fails")
		ops.start()
		NewWithT(t).Eventually(func(g Gomega) {
			got := getTenant(g, failing)
			stalled := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.StalledCondition)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonMigrationFailed))
			g.Expect(stalled.Message).To(And(ContainSubstring("1.1/pre/half"), ContainSubstring(m.Job), ContainSubstring("missing")))
			st := componentOf(g, failing)
			g.Expect(st.Version).To(Equal("1.0"))
			g.Expect(st.Migration).To(HaveValue(And(HaveField("Phase", tenancyv1alpha1.MigrationFailed), HaveField("Attempts", int32(1)), HaveField("Job", m.Job))))
			d := deployment(g, failing)
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)), "the fence is lifted")
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/" + failingComponent + ":1.0"))
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(2))
		}).WithTimeout(migrationTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		// What the migration wrote before it failed stays: nothing is restored on its own.
		g.Expect(migrationLog(g, failing)).To(Equal([]string{"1.0/pre/schema", "1.1/pre/half"}))
		g.Expect(itemColumns(g, failing)).To(Equal([]string{"id"}))
		restores := &tenancyv1alpha1.TenantRestoreList{}
		g.Expect(env.AdminClient.List(ctx, restores)).To(Succeed())
		for _, r := range restores.Items {
			// Other scenarios' restores share the cluster; none may be this tenant's.
			g.Expect(r.Status.Tenant).NotTo(Equal(failing), "restore %s", r.Name)
			g.Expect(r.Spec.Tenant).NotTo(Equal(failing), "restore %s", r.Name)
		}
		g.Expect(failingLedger.creations()).To(And(HaveLen(2), HaveEach(1)), "1.0's migration and the failed one, each created once")
		g.Expect(failingLedger.creations()).To(HaveKeyWithValue(m.Job, 1))
		g.Consistently(func(g Gomega) {
			g.Expect(migrationOf(g, failing).Attempts).To(Equal(int32(1)), "a failed move is not tried again on its own")
		}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		checkTenantData(t, getTenant(g, failing))
	})

	checkInvariants(t, scenario)
	ops.current().stop(t)
	deleteLease(t)
}
