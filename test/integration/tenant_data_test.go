package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// withAppDatabase gives a tenant one PostgreSQL database, "app".
func withAppDatabase(t *tenancyv1alpha1.Tenant) {
	t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
}

// waitTenantGone waits until a deleted tenant's finalizer has finished.
func waitTenantGone(t *testing.T, name string) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{}))
	}).WithTimeout(2 * timeout).Should(BeTrue())
}

// waitDatabasesCondition waits until the tenant's DatabasesReady condition, for its current
// generation, has the reason, and returns its message.
func waitDatabasesCondition(t *testing.T, name, reason string) string {
	t.Helper()
	var msg string
	NewWithT(t).Eventually(func(g Gomega) {
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, got)).To(Succeed())
		c := condition(got, tenancyv1alpha1.DatabasesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(c.Reason).To(Equal(reason), "message: %s", c.Message)
		msg = c.Message
	}).WithTimeout(timeout).Should(Succeed())
	return msg
}

func annotate(t *testing.T, name, key, value string) {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+key+`":"`+value+`"}}}`))
	NewWithT(t).Expect(k8s.Patch(context.Background(), tenant, patch)).To(Succeed())
}

// rowCount counts the rows CanUse wrote into an account's database.
func rowCount(g Gomega, s database.Server, acct database.Account) int {
	db, err := dbtest.OpenDB(s, acct.Username, acct.Password, acct.Database)
	g.Expect(err).NotTo(HaveOccurred())
	defer db.Close()
	var n int
	g.Expect(db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM landlord_probe").Scan(&n)).To(Succeed())
	return n
}

// tenantEvents are the notes of the events on a tenant with a reason.
func tenantEvents(g Gomega, name, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(k8s.List(context.Background(), list)).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Tenant" && e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// A tenant deleted without being Purged keeps its data; a new tenant of the same name neither
// loads the old record nor accepts the old database.
func TestARecreatedTenantDoesNotInheritTheEarlierTenantsData(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	earlier := createTenant(t, newTenant("db-reborn", withAppDatabase))
	earlierApp := testenv.AccountOf(credentials(g, earlier.Name, "app"))
	g.Expect(dbtest.CanUse(ctx, pg.Server, earlierApp)).To(Succeed())
	g.Expect(confirmedDelete(ctx, earlier.Name)).To(Succeed())
	waitTenantGone(t, earlier.Name)
	waitNamespaceGone(t, opConfig.NamespaceName(earlier.Name))

	reborn := newTenant("db-reborn", withAppDatabase)
	g.Expect(k8s.Create(ctx, reborn)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, reborn.Name) })

	t.Run("without the adoption annotation it stalls, naming the earlier tenant, and touches nothing", func(t *testing.T) {
		g := NewWithT(t)
		msg := waitDatabasesCondition(t, reborn.Name, tenancyv1alpha1.ReasonForeignData)
		g.Expect(msg).To(ContainSubstring(string(earlier.UID)))
		g.Expect(msg).To(ContainSubstring(tenancyv1alpha1.AdoptDataAnnotation))
		err := k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(reborn.Name), Name: tenancyv1alpha1.DatabaseSecretName("app")}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the new tenant got the earlier tenant's credentials: %v", err)
		g.Expect(dbtest.CanUse(ctx, pg.Server, earlierApp)).To(Succeed(), "the earlier tenant's login was changed")
	})

	t.Run("an adoption annotation naming another UID changes nothing", func(t *testing.T) {
		annotate(t, reborn.Name, tenancyv1alpha1.AdoptDataAnnotation, "00000000-0000-0000-0000-000000000000")
		resync(t, reborn.Name)
		waitDatabasesCondition(t, reborn.Name, tenancyv1alpha1.ReasonForeignData)
		NewWithT(t).Expect(dbtest.CanUse(ctx, pg.Server, earlierApp)).To(Succeed())
	})

	t.Run("with the annotation naming the earlier tenant's UID it gets the earlier data", func(t *testing.T) {
		g := NewWithT(t)
		annotate(t, reborn.Name, tenancyv1alpha1.AdoptDataAnnotation, string(earlier.UID))
		waitReady(t, reborn.Name)
		adopted := testenv.AccountOf(credentials(g, reborn.Name, "app"))
		g.Expect(adopted.Database).To(Equal(earlierApp.Database))
		g.Expect(rowCount(g, pg.Server, adopted)).To(BeNumerically(">=", 1), "the earlier tenant's rows")
		stored, err := store.Get(ctx, opConfig.NamespaceName(reborn.Name), tenancyv1alpha1.DatabaseSecretName("app"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Annotations[tenancyv1alpha1.TenantUIDLabel]).To(Equal(string(reborn.UID)), "the record now names its new tenant")
	})
}

// The same for pools: a spare whose generated name is that of a deleted spare or tenant must
// neither take over the kept data nor, when the pool deletes it, drop it.
func TestASpareWhoseNameWasUsedBeforeIsReplacedAndTheEarlierDataKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	const name = "dbpool-x7k2q"
	earlier := createTenant(t, newTenant(name, withAppDatabase))
	earlierApp := testenv.AccountOf(credentials(g, name, "app"))
	g.Expect(dbtest.CanUse(ctx, pg.Server, earlierApp)).To(Succeed())
	g.Expect(confirmedDelete(ctx, earlier.Name)).To(Succeed())
	waitTenantGone(t, name)
	waitNamespaceGone(t, opConfig.NamespaceName(name))

	pool := newPool("dbpool", 1)
	pool.Spec.Template.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	createPool(t, pool)
	waitPool(t, pool.Name, 1, 0)

	// A spare of the pool that drew the earlier tenant's name. It joins the pool once it has
	// stalled, so that the pool meets it as a collided spare rather than as one spare too many,
	// and its finalizer runs the purge a spare's deletion does.
	spare := newTenant(name, withAppDatabase)
	g.Expect(k8s.Create(ctx, spare)).To(Succeed())
	waitDatabasesCondition(t, name, tenancyv1alpha1.ReasonForeignData)
	patch := client.MergeFrom(spare.DeepCopy())
	spare.Labels = map[string]string{tenancyv1alpha1.PoolLabel: pool.Name}
	spare.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pool, tenancyv1alpha1.GroupVersion.WithKind("TenantPool"))}
	// As the pool itself would: only the operator may set the pool label.
	g.Expect(operatorClient(t).Patch(ctx, spare, patch)).To(Succeed())

	t.Run("the pool removes the stalled spare and keeps a Ready spare of another name", func(t *testing.T) {
		waitTenantGone(t, name)
		waitPool(t, pool.Name, 1, 0)
		spares, _ := poolTenants(NewWithT(t), pool.Name)
		for _, s := range spares {
			NewWithT(t).Expect(s.Name).NotTo(Equal(name))
		}
	})
	t.Run("the removal said it kept the earlier tenant's data", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(tenantEvents(g, name, tenancyv1alpha1.ReasonForeignData)).To(ContainElement(ContainSubstring("is not this tenant's and is kept")))
		}).WithTimeout(timeout).Should(Succeed())
	})
	t.Run("the earlier tenant's database and stored credentials are untouched", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(dbtest.CanUse(ctx, pg.Server, earlierApp)).To(Succeed())
		stored, err := store.Get(ctx, opConfig.NamespaceName(name), tenancyv1alpha1.DatabaseSecretName("app"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(stored.Data[tenancyv1alpha1.CredentialsKeyPassword])).To(Equal(earlierApp.Password))
		g.Expect(stored.Annotations[tenancyv1alpha1.TenantUIDLabel]).To(Equal(string(earlier.UID)))
	})
}

// A purge that cannot reach some of the tenant's data waits for it, and would wait forever for
// data that is gone for good. The way out is an annotation naming the tenant's own UID; anything
// else changes nothing.
func TestABlockedPurgeHasAnExplicitAuditedWayOut(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	tenant := createTenant(t, newTenant("db-stuck", withAppDatabase))
	app := testenv.AccountOf(credentials(g, tenant.Name, "app"))
	// A record the purge cannot act on: its server is gone for good.
	ghost := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   opConfig.NamespaceName(tenant.Name),
			Name:        tenancyv1alpha1.DatabaseSecretName("ghost"),
			Labels:      map[string]string{tenancyv1alpha1.DatabaseEngineLabel: string(tenancyv1alpha1.EnginePostgres)},
			Annotations: map[string]string{tenancyv1alpha1.DatabaseServerAnnotation: "decommissioned", tenancyv1alpha1.TenantUIDLabel: string(tenant.UID)},
		},
		Data: map[string][]byte{
			tenancyv1alpha1.CredentialsKeyDatabase: []byte("t_db-stuck_ghost"),
			tenancyv1alpha1.CredentialsKeyUsername: []byte("t_db-stuck_ghost"),
			tenancyv1alpha1.CredentialsKeyPassword: []byte("unreachable"),
		},
	}
	g.Expect(store.Put(ctx, ghost)).To(Succeed())

	setState(t, tenant.Name, tenancyv1alpha1.StatePurged)
	t.Run("the purge is blocked by the unreachable database", func(t *testing.T) {
		msg := waitDatabasesCondition(t, tenant.Name, tenancyv1alpha1.ReasonDatabaseUnavailable)
		NewWithT(t).Expect(msg).To(ContainSubstring("decommissioned"))
	})
	t.Run("an abandon annotation naming another UID changes nothing", func(t *testing.T) {
		annotate(t, tenant.Name, tenancyv1alpha1.AbandonDataAnnotation, "00000000-0000-0000-0000-000000000000")
		resync(t, tenant.Name)
		waitDatabasesCondition(t, tenant.Name, tenancyv1alpha1.ReasonDatabaseUnavailable)
		_, err := store.Get(ctx, ghost.Namespace, ghost.Name)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	})
	t.Run("the annotation naming the tenant's UID finishes the purge and records what was abandoned", func(t *testing.T) {
		g := NewWithT(t)
		annotate(t, tenant.Name, tenancyv1alpha1.AbandonDataAnnotation, string(tenant.UID))
		waitDatabasesCondition(t, tenant.Name, tenancyv1alpha1.ReasonDatabasesDropped)
		g.Expect(dbtest.CanConnect(ctx, pg.Server, app.Username, app.Password, app.Database)).NotTo(Succeed(), "the reachable database is dropped")
		g.Eventually(func(g Gomega) {
			g.Expect(tenantEvents(g, tenant.Name, tenancyv1alpha1.ReasonDataAbandoned)).To(ContainElement(
				And(ContainSubstring("t_db-stuck_ghost"), ContainSubstring("decommissioned"))))
		}).WithTimeout(timeout).Should(Succeed())
		stored, err := store.List(ctx, ghost.Namespace)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored).To(BeEmpty())
	})
}

// Tenant "landlord" with database "admin" spells the test servers' own administrator,
// landlord_admin, and must not take it over: names start with the server's prefix, and a login
// of the computed name that Landlord did not create is refused, never altered.
func TestATenantCannotTakeOverAnExistingLogin(t *testing.T) {
	ctx := context.Background()

	t.Run("a tenant and database that spell the administrator's login get prefixed names", func(t *testing.T) {
		g := NewWithT(t)
		tenant := createTenant(t, newTenant("landlord", func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "admin"}}
			t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "admin2"}}
		}))
		t.Cleanup(func() { deleteTenant(t, tenant.Name) })
		g.Expect(testenv.AccountOf(credentials(g, tenant.Name, "admin")).Username).To(Equal("t_landlord_admin"))
		for _, inst := range []*dbtest.Instance{pg, maria} {
			g.Expect(dbtest.CanConnect(ctx, inst.Server, inst.Server.AdminUser, inst.Server.AdminPassword,
				map[database.Engine]string{database.Postgres: "postgres"}[inst.Server.Engine])).To(Succeed())
		}
	})

	t.Run("a login of the computed name that Landlord did not create is refused and keeps its password", func(t *testing.T) {
		g := NewWithT(t)
		admin, err := dbtest.OpenDB(pg.Server, pg.Server.AdminUser, pg.Server.AdminPassword, "postgres")
		g.Expect(err).NotTo(HaveOccurred())
		defer admin.Close()
		const squatted, secret = "t_db-squat_app", "squatters-own-password"
		_, err = admin.ExecContext(ctx, `CREATE ROLE "`+squatted+`" LOGIN PASSWORD '`+secret+`'`)
		g.Expect(err).NotTo(HaveOccurred())
		// Landlord takes PUBLIC's CONNECT on `postgres`; a login of the server's own that needs it
		// has it by name.
		_, err = admin.ExecContext(ctx, `GRANT CONNECT ON DATABASE postgres TO "`+squatted+`"`)
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _, _ = admin.ExecContext(ctx, `DROP ROLE "`+squatted+`"`) })

		tenant := newTenant("db-squat", withAppDatabase)
		tenant.Spec.Databases.Postgres[0].Server = pgServer
		g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, tenant.Name) })
		msg := waitDatabasesCondition(t, tenant.Name, tenancyv1alpha1.ReasonForeignData)
		g.Expect(msg).To(ContainSubstring("was not created by Landlord"))
		g.Expect(dbtest.CanConnect(ctx, pg.Server, squatted, secret, "postgres")).To(Succeed(), "the existing login's password was changed")
	})
}
