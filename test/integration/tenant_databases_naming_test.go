package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// catalogNames are the database and role names a login reads from the PostgreSQL catalog, as any
// tenant's login may.
func catalogNames(g Gomega, acct database.Account) []string {
	db, err := dbtest.OpenDB(pg.Server, acct.Username, acct.Password, acct.Database)
	g.Expect(err).NotTo(HaveOccurred())
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), "SELECT datname FROM pg_database UNION ALL SELECT rolname FROM pg_roles")
	g.Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		g.Expect(rows.Scan(&n)).To(Succeed())
		names = append(names, n)
	}
	g.Expect(rows.Err()).NotTo(HaveOccurred())
	return names
}

// storedAccount is the account the secret store records for a tenant's database.
func storedAccount(g Gomega, tenant, name string) database.Account {
	record, err := store.Get(context.Background(), opConfig.NamespaceName(tenant), tenancyv1alpha1.DatabaseSecretName(name))
	g.Expect(err).NotTo(HaveOccurred())
	c, _, err := resources.ParseStoredCredentials(record, name)
	g.Expect(err).NotTo(HaveOccurred())
	return c.Account
}

// statusEntry is the tenant's status entry of a database of an engine.
func statusEntry(g Gomega, tenant *tenancyv1alpha1.Tenant, engine tenancyv1alpha1.DatabaseEngine, name string) tenancyv1alpha1.DatabaseStatus {
	for _, d := range tenant.Status.Databases {
		if d.Engine == engine && d.Name == name {
			return d
		}
	}
	g.Expect(tenant.Status.Databases).To(ContainElement(HaveField("Name", name)), "no status entry of %s database %s", engine, name)
	return tenancyv1alpha1.DatabaseStatus{}
}

// rotate asks for a new password of a tenant's PostgreSQL database "app" and waits until the
// tenant is Ready with it: the reconcile went through the stored record, where names are read.
func rotate(t *testing.T, name, rotation string) *tenancyv1alpha1.Tenant {
	t.Helper()
	g := NewWithT(t)
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	old := testenv.AccountOf(credentials(g, name, "app"))
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.Databases.Postgres[0].Rotation = rotation
	g.Expect(k8s.Patch(context.Background(), tenant, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(testenv.AccountOf(credentials(g, name, "app")).Password).NotTo(Equal(old.Password))
	}).WithTimeout(timeout).Should(Succeed())
	return waitReady(t, name)
}

func TestOpaqueNamingKeepsTenantNamesOffSharedServers(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ds := &tenancyv1alpha1.DatabaseServer{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: pgServer}, ds)).To(Succeed())

	// A tenant whose database was created before the switch, under tenant naming.
	earlier := createTenant(t, newTenant("naming-kolide", withAppDatabase))
	earlierApp := testenv.AccountOf(credentials(g, earlier.Name, "app"))
	g.Expect(earlierApp.Database).To(ContainSubstring(earlier.Name), "tenant naming spells the tenant's name, or the checks below prove nothing")
	g.Expect(dbtest.CanUse(ctx, pg.Server, earlierApp)).To(Succeed())

	opaque := opConfig
	opaque.Databases.Naming = database.NamingOpaque
	restartOperator(t, opaque)

	globex := createTenant(t, newTenant("naming-globex", withDatabases))

	t.Run("a tenant created with opaque naming gets databases and logins that do not spell its name", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(globex.Status.Databases).To(HaveLen(2))
		for _, d := range globex.Status.Databases {
			for _, got := range []string{d.Database, d.Username} {
				g.Expect(got).NotTo(Or(ContainSubstring("globex"), ContainSubstring("naming")), "%s database %s", d.Engine, d.Name)
			}
			// The Secret and the stored record name what the status names: the mapping from the
			// tenant's database to the server's is kept where it always was.
			g.Expect(testenv.AccountOf(credentials(g, globex.Name, d.Name))).To(And(HaveField("Database", d.Database), HaveField("Username", d.Username)))
			g.Expect(storedAccount(g, globex.Name, d.Name)).To(And(HaveField("Database", d.Database), HaveField("Username", d.Username)))
			g.Expect(dbtest.CanUse(ctx, instanceFor(d.Engine).Server, testenv.AccountOf(credentials(g, globex.Name, d.Name)))).To(Succeed(), "%s database %s", d.Engine, d.Name)
		}
	})

	t.Run("another tenant's login reads no trace of the tenant's name in the server's catalog", func(t *testing.T) {
		g := NewWithT(t)
		names := catalogNames(g, earlierApp)
		app := statusEntry(g, globex, tenancyv1alpha1.EnginePostgres, "app")
		// The login reads the opaque database: the catalog is visible, only the name says nothing.
		g.Expect(names).To(ContainElements(app.Database, app.Username))
		g.Expect(names).NotTo(ContainElement(ContainSubstring("globex")))
	})

	t.Run("a database created under tenant naming keeps its names through a reconcile that reads its record", func(t *testing.T) {
		g := NewWithT(t)
		got := rotate(t, earlier.Name, "after-the-switch")
		app := statusEntry(g, got, tenancyv1alpha1.EnginePostgres, "app")
		g.Expect([]string{app.Database, app.Username}).To(Equal([]string{earlierApp.Database, earlierApp.Username}))
		g.Expect(storedAccount(g, earlier.Name, "app")).To(And(HaveField("Database", earlierApp.Database), HaveField("Username", earlierApp.Username)))
		rotated := testenv.AccountOf(credentials(g, earlier.Name, "app"))
		g.Expect(rotated).To(And(HaveField("Database", earlierApp.Database), HaveField("Username", earlierApp.Username)))
		g.Expect(rowCount(g, pg.Server, rotated)).To(BeNumerically(">=", 1), "the rows written before the switch")
		renamed, _ := database.NewNames(database.NamingOpaque, database.Postgres, ds.Spec.NamePrefix, earlier.Name, string(earlier.UID), "app")
		g.Expect(catalogNames(g, rotated)).NotTo(ContainElement(renamed), "a second database was created under the opaque name")
	})

	t.Run("a database the tenant adds later gets an opaque name beside the kept one", func(t *testing.T) {
		g := NewWithT(t)
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: earlier.Name}, tenant)).To(Succeed())
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.Databases.Postgres = append(tenant.Spec.Databases.Postgres, tenancyv1alpha1.Database{Name: "reports"})
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
		got := waitReady(t, earlier.Name)
		reports := statusEntry(g, got, tenancyv1alpha1.EnginePostgres, "reports")
		g.Expect(reports.Database).NotTo(ContainSubstring("kolide"))
		g.Expect(statusEntry(g, got, tenancyv1alpha1.EnginePostgres, "app").Database).To(Equal(earlierApp.Database))
		g.Expect(dbtest.CanUse(ctx, pg.Server, testenv.AccountOf(credentials(g, earlier.Name, "reports")))).To(Succeed())
	})

	t.Run("data adopted by a new tenant keeps the names it has", func(t *testing.T) {
		g := NewWithT(t)
		before := testenv.AccountOf(credentials(g, earlier.Name, "app"))
		g.Expect(confirmedDelete(ctx, earlier.Name)).To(Succeed())
		waitTenantGone(t, earlier.Name)
		waitNamespaceGone(t, opConfig.NamespaceName(earlier.Name))
		heir := newTenant(earlier.Name, withAppDatabase)
		heir.Annotations = map[string]string{tenancyv1alpha1.AdoptDataAnnotation: string(earlier.UID)}
		heir = createTenant(t, heir)
		app := statusEntry(g, heir, tenancyv1alpha1.EnginePostgres, "app")
		g.Expect([]string{app.Database, app.Username}).To(Equal([]string{earlierApp.Database, earlierApp.Username}))
		adopted := testenv.AccountOf(credentials(g, heir.Name, "app"))
		g.Expect(adopted).To(Equal(before))
		g.Expect(rowCount(g, pg.Server, adopted)).To(BeNumerically(">=", 1), "the earlier tenant's rows")
		renamed, _ := database.NewNames(database.NamingOpaque, database.Postgres, ds.Spec.NamePrefix, heir.Name, string(heir.UID), "app")
		g.Expect(catalogNames(g, adopted)).NotTo(ContainElement(renamed), "the adopted data was left for a new database under the opaque name")
	})

	t.Run("switching back to tenant naming renames none of the opaque databases", func(t *testing.T) {
		g := NewWithT(t)
		restartOperator(t, opConfig)
		before := statusEntry(g, globex, tenancyv1alpha1.EnginePostgres, "app")
		got := rotate(t, globex.Name, "after-switching-back")
		app := statusEntry(g, got, tenancyv1alpha1.EnginePostgres, "app")
		g.Expect([]string{app.Database, app.Username}).To(Equal([]string{before.Database, before.Username}))
		g.Expect(storedAccount(g, globex.Name, "app")).To(And(HaveField("Database", before.Database), HaveField("Username", before.Username)))
		g.Expect(dbtest.CanUse(ctx, pg.Server, testenv.AccountOf(credentials(g, globex.Name, "app")))).To(Succeed())
		tenantNamed, _ := database.NewNames(database.NamingTenant, database.Postgres, ds.Spec.NamePrefix, globex.Name, string(globex.UID), "app")
		g.Expect(catalogNames(g, testenv.AccountOf(credentials(g, globex.Name, "app")))).NotTo(ContainElement(tenantNamed))
	})
}
