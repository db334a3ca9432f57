package tenantbackup_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// moveRows is how many rows a moved database holds: enough for a copy that missed a page to
// show it.
const moveRows = 2000

// dedicatedServer starts a second server of the engine and registers it as a DatabaseServer
// that takes no tenant by placement (maxTenants 0): only a move puts one there.
func dedicatedServer(t *testing.T, engine database.Engine) (string, *dbtest.Instance) {
	t.Helper()
	start := dbtest.StartPostgres
	if engine == database.MySQL {
		start = dbtest.StartMariaDB
	}
	inst, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close() })
	name := "dedicated-" + string(engine) + "-" + strconv.Itoa(int(inst.Server.Port))
	if err := env.RegisterDatabaseServer(context.Background(), opConfig.Databases.CredentialsNamespace, name, inst, func(s *tenancyv1alpha1.DatabaseServerSpec) {
		s.MaxTenants = ptr.To[int32](0)
		s.MaxConcurrentJobs = ptr.To[int32](1000)
	}); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		ds := &tenancyv1alpha1.DatabaseServer{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, ds)).To(Succeed())
		res, err := testenv.KStatus(ds)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Status.String()).To(Equal("Current"), res.Message)
	}).WithTimeout(timeout).Should(Succeed())
	return name, inst
}

// openOn opens the database a tenant's Secret names, on inst, as the Secret's login.
func openOn(t *testing.T, inst *dbtest.Instance, acct database.Account) *sql.DB {
	t.Helper()
	db, err := dbtest.OpenDB(inst.Server, acct.Username, acct.Password, acct.Database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// countRows counts the rows of the test's table and sums their values, as the tenant's login.
func countRows(ctx context.Context, db *sql.DB) (n, sum int64, err error) {
	err = db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(v), 0) FROM items").Scan(&n, &sum)
	return n, sum, err
}

// newMove creates a DatabaseMove and deletes it when the test ends.
func newMove(t *testing.T, tenant, db, server string) *tenancyv1alpha1.DatabaseMove {
	t.Helper()
	m := &tenancyv1alpha1.DatabaseMove{}
	m.Name = tenant + "-" + db
	m.Spec = tenancyv1alpha1.DatabaseMoveSpec{Tenant: tenant, Database: db, Server: server}
	NewWithT(t).Expect(k8s.Create(context.Background(), m)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), m) })
	return m
}

// waitMove waits until the move reaches the phase, and returns it.
func waitMove(t *testing.T, name string, phase tenancyv1alpha1.DatabaseMovePhase) *tenancyv1alpha1.DatabaseMove {
	t.Helper()
	m := &tenancyv1alpha1.DatabaseMove{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, m)).To(Succeed())
		g.Expect(m.Status.Phase).To(Equal(phase), fmt.Sprintf("conditions: %+v", m.Status.Conditions))
	}).WithTimeout(2 * timeout).Should(Succeed())
	return m
}

func TestADatabaseMovesToAnotherServerWithEveryRowAndItsOldCopyIsKeptUntilConfirmed(t *testing.T) {
	for _, engine := range []database.Engine{database.Postgres, database.MySQL} {
		t.Run(string(engine), func(t *testing.T) {
			ctx := context.Background()
			g := NewWithT(t)
			to, dedicated := dedicatedServer(t, engine)
			name := "move-" + string(engine)
			createTenant(t, newTenant(name, func(tn *tenancyv1alpha1.Tenant) {
				if engine == database.Postgres {
					tn.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
				} else {
					tn.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "app"}}
				}
			}))
			shared := servers[engine]
			before := testenv.AccountOf(credentials(g, name, "app"))
			old := openOn(t, shared, before)
			_, err := old.ExecContext(ctx, "CREATE TABLE items (id INT PRIMARY KEY, v BIGINT NOT NULL)")
			g.Expect(err).NotTo(HaveOccurred())
			for i := range moveRows / 100 {
				stmt := "INSERT INTO items (id, v) VALUES "
				for j := range 100 {
					if j > 0 {
						stmt += ","
					}
					id := i*100 + j
					stmt += fmt.Sprintf("(%d, %d)", id, id*7)
				}
				_, err := old.ExecContext(ctx, stmt)
				g.Expect(err).NotTo(HaveOccurred())
			}
			wantN, wantSum, err := countRows(ctx, old)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(wantN).To(BeEquivalentTo(moveRows))
			old.SetMaxIdleConns(0)

			m := newMove(t, name, "app", to)
			m = waitMove(t, m.Name, tenancyv1alpha1.MoveCopying)
			g.Expect(m.Status.From.Server).To(Equal(map[database.Engine]string{database.Postgres: pgServer, database.MySQL: myServer}[engine]))

			t.Run("while the copy runs, the applications' login is fenced off the old database", func(t *testing.T) {
				g := NewWithT(t)
				g.Eventually(func(g Gomega) {
					m = waitMove(t, m.Name, tenancyv1alpha1.MoveCopying)
					g.Expect(m.Status.FencedAt).NotTo(BeNil())
				}).WithTimeout(timeout).Should(Succeed())
				g.Expect(dbtest.CanConnect(ctx, shared.Server, before.Username, before.Password, before.Database)).NotTo(Succeed())
				// The tenant still names the old server: nothing is switched before the copy is
				// proven.
				g.Expect(testenv.AccountOf(credentials(g, name, "app"))).To(Equal(before))
			})

			runJob(t, m.Status.Job)
			m = waitMove(t, m.Name, tenancyv1alpha1.MoveSwitched)

			t.Run("the tenant's credentials name the new server, which holds every row", func(t *testing.T) {
				g := NewWithT(t)
				sec := credentials(g, name, "app")
				after := testenv.AccountOf(sec)
				g.Expect(after).NotTo(Equal(before))
				g.Expect(string(sec.Data[tenancyv1alpha1.CredentialsKeyPort])).To(Equal(strconv.Itoa(int(dedicated.Server.Port))))
				n, sum, err := countRows(ctx, openOn(t, dedicated, after))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect([]int64{n, sum}).To(Equal([]int64{wantN, wantSum}))
				tenant := testenv.WaitTenantCurrent(t, k8s, name, timeout)
				g.Expect(tenant.Status.Databases).To(HaveLen(1))
				g.Expect(tenant.Status.Databases[0].Server).To(Equal(to))
			})

			t.Run("status records the cut-over's downtime", func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(m.Status.Downtime).NotTo(BeNil())
				g.Expect(m.Status.Downtime.Duration).To(BeNumerically(">", 0))
				g.Expect(m.Status.SwitchedAt.Time).To(BeTemporally(">=", m.Status.FencedAt.Time))
				t.Logf("the cut-over of a %d-row database took %s (the Job held until released by the test)", moveRows, m.Status.Downtime.Duration)
			})

			t.Run("the old database is kept until the move is confirmed, then dropped", func(t *testing.T) {
				g := NewWithT(t)
				admin := adminOf(t, shared)
				g.Expect(admin.Holds(ctx, database.Account{Database: m.Status.From.Database, Username: m.Status.From.Username})).To(BeTrue())
				patch := []byte(`{"spec":{"confirmed":true}}`)
				g.Expect(k8s.Patch(ctx, m, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
				m = waitMove(t, m.Name, tenancyv1alpha1.MoveSucceeded)
				g.Expect(admin.Holds(ctx, database.Account{Database: m.Status.From.Database, Username: m.Status.From.Username})).To(BeFalse())
				res, err := testenv.KStatus(m)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.Status.String()).To(Equal("Current"))
			})
		})
	}
}

func TestAMoveDeletedBeforeItsSwitchLeavesTheDatabaseWhereItWas(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	to, dedicated := dedicatedServer(t, database.Postgres)
	name := "move-back"
	createTenant(t, newTenant(name, func(tn *tenancyv1alpha1.Tenant) {
		tn.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	before := testenv.AccountOf(credentials(g, name, "app"))
	m := newMove(t, name, "app", to)
	g.Eventually(func(g Gomega) {
		m = waitMove(t, m.Name, tenancyv1alpha1.MoveCopying)
		g.Expect(m.Status.FencedAt).NotTo(BeNil())
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(dbtest.CanConnect(ctx, servers[database.Postgres].Server, before.Username, before.Password, before.Database)).NotTo(Succeed())

	// Its Job is held: the move is deleted mid-copy.
	g.Expect(k8s.Delete(ctx, m)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(m), &tenancyv1alpha1.DatabaseMove{}))
	}).WithTimeout(2 * timeout).Should(BeTrue())

	t.Run("the applications' login works again with the password they hold", func(t *testing.T) {
		NewWithT(t).Expect(dbtest.CanUse(ctx, servers[database.Postgres].Server, before)).To(Succeed())
	})
	t.Run("the copy on the target server is dropped", func(t *testing.T) {
		NewWithT(t).Expect(adminOf(t, dedicated).Holds(ctx, database.Account{Database: m.Status.To.Database, Username: m.Status.To.Username})).To(BeFalse())
	})
	t.Run("the tenant still runs on its server, its Secret unchanged", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(testenv.AccountOf(credentials(g, name, "app"))).To(Equal(before))
		tenant := testenv.WaitTenantCurrent(t, k8s, name, timeout)
		g.Expect(tenant.Status.Databases[0].Server).To(Equal(pgServer))
	})
}

// adminOf is a provisioner of the instance, as its administrator.
func adminOf(t *testing.T, inst *dbtest.Instance) database.Provisioner {
	t.Helper()
	p, err := database.Open(inst.Server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
