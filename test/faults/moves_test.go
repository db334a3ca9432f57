package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/test/testenv"
)

const movesScenario = "moves"

// A database moved to another server while the operator is SIGKILLed at each step of the move
// (with its copy's Job held, once the copy is proven, once switched, as it is confirmed), and a
// second move whose target server stops mid-copy: the first ends on the new server with every
// row, one copy Job made whatever the kills, the old database kept until confirmed and then
// dropped; the second rolls back, the tenant served again from its server while the target is
// still down, the copy dropped once the target is back. At no time does the tenant's Secret
// name a server whose login its applications could not use, other than during the fence.
func TestSIGKILLAtEachStepOfADatabaseMoveLosesNothing(t *testing.T) {
	const scenario = movesScenario
	ctx := context.Background()
	deleteLease(t)
	ops := &operators{t: t, scenario: scenario, args: []string{"--config=" + backupsConfig(t, t.TempDir())}}
	defer func() {
		logOperatorErrors(t, ops.procs...)
		if t.Failed() {
			t.Logf("tenants:\n%s", describeTenants(scenario))
		}
	}()
	target, inst := moveTarget(t)
	ops.start()
	for _, name := range []string{"moves-1", "moves-2"} {
		NewWithT(t).Expect(env.AdminClient.Create(ctx, newTenant(scenario, name, tenancyv1alpha1.EnginePostgres))).To(Succeed())
	}
	for _, name := range []string{"moves-1", "moves-2"} {
		testenv.WaitTenantCurrent(t, env.AdminClient, name, convergeTimeout)
		execApp(NewWithT(t), name, "CREATE TABLE items (id INT PRIMARY KEY)", "INSERT INTO items VALUES (1), (2), (3)")
	}
	if t.Failed() {
		return
	}
	before := getTenant(NewWithT(t), "moves-1").Status.Databases[0]

	t.Run("killed at each step, the move ends on the new server with every row", func(t *testing.T) {
		g := NewWithT(t)
		createMove(g, scenario, "moves-1", target)
		m := waitMoveOf(t, "moves-1", func(m *tenancyv1alpha1.DatabaseMove) bool {
			return m.Status.Phase == tenancyv1alpha1.MoveCopying && m.Status.FencedAt != nil && copyJobExists(m.Status.Job)
		})
		ops.kill("with the copy's Job held, the writers fenced")
		ops.start()
		g.Expect(itemIDsErr("moves-1")).NotTo(Succeed(), "the applications' login stays fenced across the kill")
		releaseBackupJob(t, m.Status.Job)
		waitMoveOf(t, "moves-1", func(m *tenancyv1alpha1.DatabaseMove) bool {
			return m.Status.Phase == tenancyv1alpha1.MoveSwitching || m.Status.Phase == tenancyv1alpha1.MoveSwitched
		})
		ops.kill("once the copy was proven, at the switch")
		ops.start()
		m = waitMoveOf(t, "moves-1", func(m *tenancyv1alpha1.DatabaseMove) bool { return m.Status.Phase == tenancyv1alpha1.MoveSwitched })
		ops.kill("switched, before the confirmation")
		ops.start()
		g.Expect(itemIDs(g, "moves-1")).To(Equal([]int{1, 2, 3}), "every row, read on the new server through the tenant's Secret")
		g.Expect(getTenant(g, "moves-1").Status.Databases[0].Server).To(Equal(target))
		g.Expect(m.Status.Downtime).NotTo(BeNil())
		t.Logf("the cut-over took %s across the kills", m.Status.Downtime.Duration)
		g.Expect(holds(g, pgServer, before)).To(BeTrue(), "the old database is kept until the move is confirmed")
		g.Expect(copyJobs(g)).To(ConsistOf(m.Status.Job), "one copy Job, whatever the kills")

		patch := []byte(`{"spec":{"confirmed":true}}`)
		g.Expect(env.AdminClient.Patch(ctx, m, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		ops.kill("as the move is confirmed")
		ops.start()
		waitMoveOf(t, "moves-1", func(m *tenancyv1alpha1.DatabaseMove) bool { return m.Status.Phase == tenancyv1alpha1.MoveSucceeded })
		g.Expect(holds(g, pgServer, before)).To(BeFalse(), "confirmed, the old database is dropped")
		g.Expect(itemIDs(g, "moves-1")).To(Equal([]int{1, 2, 3}))
	})
	if t.Failed() {
		return
	}

	t.Run("its target stopped mid-copy, a move rolls back and the tenant is served from its server", func(t *testing.T) {
		g := NewWithT(t)
		createMove(g, scenario, "moves-2", target)
		m := waitMoveOf(t, "moves-2", func(m *tenancyv1alpha1.DatabaseMove) bool {
			return m.Status.Phase == tenancyv1alpha1.MoveCopying && m.Status.FencedAt != nil && copyJobExists(m.Status.Job)
		})
		g.Expect(inst.Stop()).To(Succeed())
		releaseBackupJob(t, m.Status.Job)
		g.Eventually(func(g Gomega) {
			g.Expect(itemIDs(g, "moves-2")).To(Equal([]int{1, 2, 3}))
		}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed(), "the old login has its password back while the target is down")
		ops.kill("rolling back, the target server down")
		g.Expect(inst.Start()).To(Succeed())
		ops.start()
		m = waitMoveOf(t, "moves-2", func(m *tenancyv1alpha1.DatabaseMove) bool { return m.Status.Phase == tenancyv1alpha1.MoveFailed })
		g.Expect(holds(g, target, tenancyv1alpha1.DatabaseStatus{Database: m.Status.To.Database, Username: m.Status.To.Username})).To(BeFalse(), "the copy is dropped")
		tenant := getTenant(g, "moves-2")
		g.Expect(tenant.Status.Databases[0].Server).To(Equal(pgServer))
		g.Expect(itemIDs(g, "moves-2")).To(Equal([]int{1, 2, 3}))
	})

	checkInvariants(t, scenario)
	// Purged, the scenario's tenants leave the target server holding nothing when it goes.
	for _, tenant := range []string{"moves-1", "moves-2"} {
		purgeTenant(t, tenant)
	}
}

// moveTarget starts a second PostgreSQL server and registers it as a DatabaseServer that takes
// tenants by moves alone (maxTenants 0); it is there for the test's invariants too, and goes
// when the test ends. It returns the server's name and instance.
func moveTarget(t *testing.T) (string, *dbtest.Instance) {
	t.Helper()
	g := NewWithT(t)
	inst, err := dbtest.StartPostgres()
	g.Expect(err).NotTo(HaveOccurred())
	const name = "faults-pg-target"
	g.Expect(env.RegisterDatabaseServer(context.Background(), opConfig.Databases.CredentialsNamespace, name, inst, func(s *tenancyv1alpha1.DatabaseServerSpec) {
		s.MaxTenants = ptr.To[int32](0)
	})).To(Succeed())
	servers[name] = inst
	t.Cleanup(func() {
		_ = env.AdminClient.Delete(context.Background(), &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}})
		delete(servers, name)
		_ = inst.Close()
	})
	return name, inst
}

func createMove(g Gomega, scenario, tenant, server string) {
	m := &tenancyv1alpha1.DatabaseMove{
		ObjectMeta: metav1.ObjectMeta{Name: tenant + "-app", Labels: map[string]string{scenarioLabel: scenario}},
		Spec:       tenancyv1alpha1.DatabaseMoveSpec{Tenant: tenant, Database: "app", Server: server},
	}
	g.Expect(env.AdminClient.Create(context.Background(), m)).To(Succeed())
}

// waitMoveOf waits until the tenant's move satisfies done, and returns it.
func waitMoveOf(t *testing.T, tenant string, done func(*tenancyv1alpha1.DatabaseMove) bool) *tenancyv1alpha1.DatabaseMove {
	t.Helper()
	m := &tenancyv1alpha1.DatabaseMove{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Name: tenant + "-app"}, m)).To(Succeed())
		g.Expect(done(m)).To(BeTrue(), "move %+v", m.Status)
	}).WithTimeout(convergeTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return m
}

func copyJobExists(name string) bool {
	return name != "" && env.AdminClient.Get(context.Background(), client.ObjectKey{Namespace: opConfig.Backups.Namespace, Name: name}, &batchv1.Job{}) == nil
}

// copyJobs are the names of the copy Jobs in the Jobs' namespace.
func copyJobs(g Gomega) []string {
	list := &batchv1.JobList{}
	g.Expect(env.AdminClient.List(context.Background(), list, client.InNamespace(opConfig.Backups.Namespace),
		client.MatchingLabels{tenancyv1alpha1.BackupJobLabel: string(backup.OpCopy)})).To(Succeed())
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return names
}

// itemIDsErr reads the tenant's items, through its Secret, and reports only whether it could.
func itemIDsErr(tenant string) error {
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		g := NewGomega(func(message string, _ ...int) { panic(message) })
		itemIDs(g, tenant)
	}()
	return err
}

// holds reports whether the server holds the database or login a status entry names.
func holds(g Gomega, server string, d tenancyv1alpha1.DatabaseStatus) bool {
	p, err := database.Open(servers[server].Server)
	g.Expect(err).NotTo(HaveOccurred())
	defer p.Close()
	held, err := p.Holds(context.Background(), database.Account{Database: d.Database, Username: d.Username})
	g.Expect(err).NotTo(HaveOccurred())
	return held
}

// purgeTenant purges a tenant of the scenario and waits until its purge is done.
func purgeTenant(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	tenant := &tenancyv1alpha1.Tenant{}
	if err := env.AdminClient.Get(ctx, client.ObjectKey{Name: name}, tenant); apierrors.IsNotFound(err) {
		return
	}
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.State, tenant.Spec.PurgeConfirmation = tenancyv1alpha1.StatePurged, name
	if err := env.AdminClient.Patch(ctx, tenant, patch); err != nil {
		t.Logf("purging %s: %v", name, err)
		return
	}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(getTenant(g, name).Status.Databases).To(BeEmpty())
	}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed())
}
