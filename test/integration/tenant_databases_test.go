package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// withDatabases gives a tenant a PostgreSQL database "app" and a MySQL database "legacy".
func withDatabases(t *tenancyv1alpha1.Tenant) {
	t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "legacy"}}
}

// credentials reads a tenant's credentials Secret.
func credentials(g Gomega, tenant, name string) *corev1.Secret {
	s := &corev1.Secret{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{
		Namespace: opConfig.NamespaceName(tenant), Name: tenancyv1alpha1.DatabaseSecretName(name),
	}, s)).To(Succeed())
	return s
}

func instanceFor(engine tenancyv1alpha1.DatabaseEngine) *dbtest.Instance {
	if engine == tenancyv1alpha1.EngineMySQL {
		return maria
	}
	return pg
}

func TestTenantDatabases(t *testing.T) {
	ctx := context.Background()
	tenant := createTenant(t, newTenant("db-acme", withDatabases, func(t *tenancyv1alpha1.Tenant) {
		t.Spec.PgBouncer = &tenancyv1alpha1.PgBouncer{DefaultPoolSize: 20}
	}))

	t.Run("the tenant is Ready with each database placed on a server of its engine", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(condition(tenant, tenancyv1alpha1.DatabasesReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(tenant.Status.Databases).To(HaveLen(2))
		for _, d := range tenant.Status.Databases {
			want := pgServer
			if d.Engine == tenancyv1alpha1.EngineMySQL {
				want = mariaServer
			}
			g.Expect(d.Server).To(Equal(want), "%s database %s", d.Engine, d.Name)
			g.Expect(d.SecretName).To(Equal(tenancyv1alpha1.DatabaseSecretName(d.Name)))
		}
	})

	t.Run("the credentials Secrets let the tenant use its databases", func(t *testing.T) {
		g := NewWithT(t)
		for _, d := range tenant.Status.Databases {
			s := credentials(g, tenant.Name, d.Name)
			inst := instanceFor(d.Engine)
			g.Expect(string(s.Data[tenancyv1alpha1.CredentialsKeyHost])).To(Equal(inst.Server.Host))
			g.Expect(string(s.Data[tenancyv1alpha1.CredentialsKeyURL])).To(HavePrefix(string(d.Engine) + "://"))
			g.Expect(dbtest.CanUse(ctx, inst.Server, testenv.AccountOf(s))).To(Succeed(), "%s database %s", d.Engine, d.Name)
		}
	})

	t.Run("the PostgreSQL credentials carry the pgbouncer pool size", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(credentials(g, tenant.Name, "app").Data).To(HaveKeyWithValue(tenancyv1alpha1.CredentialsKeyPgBouncerPoolSize, []byte("20")))
		g.Expect(credentials(g, tenant.Name, "legacy").Data).NotTo(HaveKey(tenancyv1alpha1.CredentialsKeyPgBouncerPoolSize))
	})

	t.Run("the credentials are kept in the secret store", func(t *testing.T) {
		g := NewWithT(t)
		stored, err := store.Get(ctx, opConfig.NamespaceName(tenant.Name), "db-app")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Data[tenancyv1alpha1.CredentialsKeyPassword]).To(Equal(credentials(g, tenant.Name, "app").Data[tenancyv1alpha1.CredentialsKeyPassword]))
	})

	t.Run("an unchanged tenant with databases costs no API requests", func(t *testing.T) {
		expectNoRequestsOnResync(t, tenant.Name)
	})

	t.Run("a credentials Secret edited by hand is restored", func(t *testing.T) {
		g := NewWithT(t)
		s := credentials(g, tenant.Name, "app")
		want := s.Data[tenancyv1alpha1.CredentialsKeyPassword]
		patch := client.MergeFrom(s.DeepCopy())
		s.Data[tenancyv1alpha1.CredentialsKeyPassword] = []byte("guessed")
		g.Expect(k8s.Patch(ctx, s, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(credentials(g, tenant.Name, "app").Data[tenancyv1alpha1.CredentialsKeyPassword]).To(Equal(want))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a rotation request replaces the password on the server, in the store and in the Secret", func(t *testing.T) {
		g := NewWithT(t)
		old := testenv.AccountOf(credentials(g, tenant.Name, "app"))
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.Databases.Postgres[0].Rotation = "2026-11-23"
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())

		var rotated database.Account
		g.Eventually(func(g Gomega) {
			rotated = testenv.AccountOf(credentials(g, tenant.Name, "app"))
			g.Expect(rotated.Password).NotTo(Equal(old.Password))
		}).WithTimeout(timeout).Should(Succeed())
		waitReady(t, tenant.Name)
		g.Expect(dbtest.CanUse(ctx, pg.Server, rotated)).To(Succeed())
		g.Expect(dbtest.CanConnect(ctx, pg.Server, old.Username, old.Password, old.Database)).NotTo(Succeed(), "the old password still works")
		stored, err := store.Get(ctx, opConfig.NamespaceName(tenant.Name), "db-app")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(stored.Data[tenancyv1alpha1.CredentialsKeyPassword])).To(Equal(rotated.Password))
	})

	t.Run("a database removed from the spec loses its Secret but keeps its data", func(t *testing.T) {
		g := NewWithT(t)
		legacy := testenv.AccountOf(credentials(g, tenant.Name, "legacy"))
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.Databases.MySQL = nil
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
		g.Eventually(func() bool {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(tenant.Name), Name: "db-legacy"}, &corev1.Secret{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(timeout).Should(BeTrue())
		g.Expect(waitReady(t, tenant.Name).Status.Databases).To(HaveLen(1))
		g.Expect(dbtest.CanUse(ctx, maria.Server, legacy)).To(Succeed())
	})
}

func TestOneTenantCannotReachAnothersDatabases(t *testing.T) {
	ctx := context.Background()
	a := createTenant(t, newTenant("db-alpha", withDatabases))
	b := createTenant(t, newTenant("db-beta", withDatabases))
	for _, name := range []string{"app", "legacy"} {
		t.Run("the "+name+" login of one tenant is refused by the other's database", func(t *testing.T) {
			g := NewWithT(t)
			mine, theirs := testenv.AccountOf(credentials(g, a.Name, name)), testenv.AccountOf(credentials(g, b.Name, name))
			g.Expect(mine.Database).NotTo(Equal(theirs.Database))
			inst := pg
			if name == "legacy" {
				inst = maria
			}
			g.Expect(dbtest.CanConnect(ctx, inst.Server, mine.Username, mine.Password, mine.Database)).To(Succeed())
			g.Expect(dbtest.CanConnect(ctx, inst.Server, mine.Username, mine.Password, theirs.Database)).NotTo(Succeed())
		})
	}
}

func TestArchivedTenantKeepsItsDatabasesAndGetsThemBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	tenant := createTenant(t, newTenant("db-archive", withDatabases))
	before := map[string]database.Account{}
	for _, name := range []string{"app", "legacy"} {
		before[name] = testenv.AccountOf(credentials(g, tenant.Name, name))
	}

	setState(t, tenant.Name, tenancyv1alpha1.StateArchived)
	waitNamespaceGone(t, opConfig.NamespaceName(tenant.Name))
	archived := waitReady(t, tenant.Name)
	g.Expect(condition(archived, tenancyv1alpha1.DatabasesReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonDatabasesKept))
	g.Expect(dbtest.CanUse(ctx, pg.Server, before["app"])).To(Succeed(), "an Archived tenant's database must be kept")
	g.Expect(dbtest.CanUse(ctx, maria.Server, before["legacy"])).To(Succeed(), "an Archived tenant's database must be kept")

	setState(t, tenant.Name, tenancyv1alpha1.StateActive)
	waitReady(t, tenant.Name)
	for name, acct := range before {
		g.Expect(testenv.AccountOf(credentials(g, tenant.Name, name))).To(Equal(acct), "restored credentials of %s", name)
	}
}

func TestPurgedTenantDropsItsDatabases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	tenant := createTenant(t, newTenant("db-purge", withDatabases))
	app, legacy := testenv.AccountOf(credentials(g, tenant.Name, "app")), testenv.AccountOf(credentials(g, tenant.Name, "legacy"))

	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.State = tenancyv1alpha1.StatePurged
	tenant.Spec.PurgeConfirmation = tenant.Name
	g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
	waitNamespaceGone(t, opConfig.NamespaceName(tenant.Name))
	purged := waitReady(t, tenant.Name)

	g.Expect(condition(purged, tenancyv1alpha1.DatabasesReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonDatabasesDropped))
	g.Expect(purged.Status.Databases).To(BeEmpty())
	g.Expect(dbtest.CanConnect(ctx, pg.Server, app.Username, app.Password, app.Database)).NotTo(Succeed())
	g.Expect(dbtest.CanConnect(ctx, maria.Server, legacy.Username, legacy.Password, legacy.Database)).NotTo(Succeed())
	stored, err := store.List(ctx, opConfig.NamespaceName(tenant.Name))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored).To(BeEmpty())
}

// A purge drops every database the tenant's status records in place, not only those the store
// still has a record of: a record lost from the store (deleted by hand, a store restored from an
// older copy) must not leave the database behind while the tenant reports itself purged.
func TestAPurgeDropsADatabaseWhoseStoredRecordIsGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	tenant := createTenant(t, newTenant("db-purge-lost", withDatabases))
	app, legacy := testenv.AccountOf(credentials(g, tenant.Name, "app")), testenv.AccountOf(credentials(g, tenant.Name, "legacy"))
	g.Expect(store.Delete(ctx, opConfig.NamespaceName(tenant.Name), tenancyv1alpha1.DatabaseSecretName("app"))).To(Succeed())

	setState(t, tenant.Name, tenancyv1alpha1.StatePurged)
	purged := waitReady(t, tenant.Name)
	g.Expect(condition(purged, tenancyv1alpha1.DatabasesReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonDatabasesDropped))
	g.Expect(purged.Status.Databases).To(BeEmpty())
	g.Expect(dbtest.CanConnect(ctx, pg.Server, app.Username, app.Password, app.Database)).NotTo(Succeed(),
		"the database whose record was gone from the store is still there")
	g.Expect(dbtest.CanConnect(ctx, pg.Server, pg.Server.AdminUser, pg.Server.AdminPassword, app.Database)).NotTo(Succeed(),
		"the database whose record was gone from the store is still there")
	g.Expect(dbtest.CanConnect(ctx, maria.Server, legacy.Username, legacy.Password, legacy.Database)).NotTo(Succeed())
}

// Deleting a tenant removes what its finalizer decides and nothing more: the garbage collector
// follows the tenant's owner references too, whichever way the deletion propagates, and must not
// take its data with it. The namespace goes; the database, its login and the stored credentials
// stay.
func TestDeletingATenantThatIsNotPurgedKeepsItsData(t *testing.T) {
	// Its tenant is its own, and it asserts nothing of the cluster at large: it runs beside
	// the other parallel tests, once the serial ones (restarts, request counts) are done.
	t.Parallel()
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		t.Run("deleted with "+string(policy)+" propagation", func(t *testing.T) {
			ctx := context.Background()
			g := NewWithT(t)
			tenant := createTenant(t, newTenant("db-delete-"+strings.ToLower(string(policy)), withDatabases))
			app := testenv.AccountOf(credentials(g, tenant.Name, "app"))

			g.Expect(confirmedDelete(ctx, tenant.Name, client.PropagationPolicy(policy))).To(Succeed())
			expectGoneWithDatabaseKept(t, tenant, app)
		})
	}
}

// A stored credentials record is trusted only by the tenant whose UID it carries. One copied
// from another tenant (by hand, or a restore into the wrong namespace of the store) must neither
// hand that tenant's database over, nor change its password, nor drop it when the tenant it was
// copied to is purged.
func TestAStoredRecordOfAnotherTenantsDatabaseIsRefused(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	victim := createTenant(t, newTenant("db-victim", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	victimApp := testenv.AccountOf(credentials(g, victim.Name, "app"))

	// The victim's record, copied under the other tenant's name in the store.
	record, err := store.Get(ctx, opConfig.NamespaceName(victim.Name), tenancyv1alpha1.DatabaseSecretName("app"))
	g.Expect(err).NotTo(HaveOccurred())
	copied := record.DeepCopy()
	copied.Namespace = opConfig.NamespaceName("db-copier")
	g.Expect(store.Put(ctx, copied)).To(Succeed())
	t.Cleanup(func() { _ = store.Delete(ctx, copied.Namespace, copied.Name) })

	copier := newTenant("db-copier", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	})
	g.Expect(k8s.Create(ctx, copier)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, copier.Name) })

	t.Run("the tenant the record was copied to stalls, naming the owner, and gets no credentials", func(t *testing.T) {
		g := NewWithT(t)
		msg := waitDatabasesCondition(t, copier.Name, tenancyv1alpha1.ReasonForeignData)
		g.Expect(msg).To(ContainSubstring(string(victim.UID)))
		g.Expect(msg).NotTo(ContainSubstring(victimApp.Password))
		err := k8s.Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(copier.Name), Name: tenancyv1alpha1.DatabaseSecretName("app")}, &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the copier got a credentials Secret: %v", err)
		g.Expect(dbtest.CanUse(ctx, pg.Server, victimApp)).To(Succeed(), "the victim's password was changed")
	})
	t.Run("purging the tenant the record was copied to drops and forgets nothing of the other tenant", func(t *testing.T) {
		g := NewWithT(t)
		setState(t, copier.Name, tenancyv1alpha1.StatePurged)
		waitDatabasesCondition(t, copier.Name, tenancyv1alpha1.ReasonDatabasesDropped)
		g.Expect(dbtest.CanUse(ctx, pg.Server, victimApp)).To(Succeed(), "the victim's database was dropped")
		_, err := store.Get(ctx, copied.Namespace, copied.Name)
		g.Expect(err).NotTo(HaveOccurred(), "the record of the other tenant was forgotten")
	})
}

func TestDatabaseServerOutage(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(pg.Stop()).To(Succeed())
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = pg.Start()
		}
	})

	g.Eventually(func(g Gomega) {
		ds := &tenancyv1alpha1.DatabaseServer{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: pgServer}, ds)).To(Succeed())
		g.Expect(ds.Status.Reachable).To(BeFalse())
	}).WithTimeout(timeout).Should(Succeed())

	waiting := newTenant("db-outage", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app", Server: pgServer}}
	})
	g.Expect(k8s.Create(ctx, waiting)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, waiting.Name) })

	t.Run("a tenant on the server reports the server's error, without secrets", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			got := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: waiting.Name}, got)).To(Succeed())
			c := condition(got, tenancyv1alpha1.DatabasesReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ReasonDatabaseUnavailable))
			g.Expect(c.Message).To(ContainSubstring(pgServer))
			g.Expect(c.Message).NotTo(ContainSubstring(pg.Server.AdminPassword))
			g.Expect(condition(got, tenancyv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("the tenant and the server are what the alerts read: a tenant not Ready and growing older, a server not Ready", func(t *testing.T) {
		g := NewWithT(t)
		// Not Stalled: a server down is retried, and LandlordTenantsNotReady is the alert for it.
		waiting := map[string]string{"reason": tenancyv1alpha1.ReasonDatabaseUnavailable, "stalled": "false"}
		var first float64
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_tenants", map[string]string{"ready": "False", "reason": tenancyv1alpha1.ReasonDatabaseUnavailable})).To(BeNumerically(">=", 1))
			first = metric(g, "landlord_tenant_oldest_not_ready_seconds", waiting)
			g.Expect(first).To(BeNumerically(">", 0))
		}).WithTimeout(timeout).Should(Succeed())
		g.Eventually(func(g Gomega) float64 {
			return metric(g, "landlord_tenant_oldest_not_ready_seconds", waiting)
		}).WithTimeout(timeout).Should(BeNumerically(">=", first+1), "the age grows while the tenant waits, with no reconcile")
		g.Eventually(func(g Gomega) float64 {
			return metric(g, "landlord_database_server_status", map[string]string{"server": pgServer, "engine": "postgres", "ready": "False"})
		}).WithTimeout(timeout).Should(Equal(1.0))
	})

	t.Run("tenants on other servers are unaffected", func(t *testing.T) {
		createTenant(t, newTenant("db-unaffected", func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "data"}}
		}))
	})

	t.Run("the tenant becomes Ready once the server is back", func(t *testing.T) {
		NewWithT(t).Expect(pg.Start()).To(Succeed())
		restarted = true
		got := waitReady(t, waiting.Name)
		NewWithT(t).Expect(dbtest.CanUse(ctx, pg.Server, testenv.AccountOf(credentials(NewWithT(t), got.Name, "app")))).To(Succeed())
		NewWithT(t).Eventually(func(g Gomega) float64 {
			return metric(g, "landlord_database_server_status", map[string]string{"server": pgServer, "ready": "True"})
		}).WithTimeout(timeout).Should(Equal(1.0))
	})
}

func TestDatabasePlacement(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(createDatabaseServer(ctx, "pg-spare", pg, ptr.To[int32](1))).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: "pg-spare"}})
		_ = k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: opConfig.Databases.CredentialsNamespace, Name: "pg-spare-admin"}})
	})
	g.Eventually(func(g Gomega) {
		ds := &tenancyv1alpha1.DatabaseServer{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "pg-spare"}, ds)).To(Succeed())
		g.Expect(ds.Status.Reachable).To(BeTrue())
		g.Expect(ds.Status.ServerVersion).NotTo(BeEmpty())
	}).WithTimeout(timeout).Should(Succeed())
	// What LandlordDatabaseServerNearCapacity divides: the server's tenants by its maxTenants.
	g.Eventually(func(g Gomega) {
		g.Expect(metric(g, "landlord_database_server_max_tenants", map[string]string{"server": "pg-spare", "engine": "postgres"})).To(Equal(1.0))
		g.Expect(metric(g, "landlord_database_server_tenants", map[string]string{"server": "pg-spare", "engine": "postgres"})).To(BeZero())
	}).WithTimeout(timeout).Should(Succeed())
	pinned := func(name string) *tenancyv1alpha1.Tenant {
		return newTenant(name, func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app", Server: pgServer}}
		})
	}
	unpinned := func(name string) *tenancyv1alpha1.Tenant {
		return newTenant(name, func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}, {Name: "jobs"}}
		})
	}
	createTenant(t, pinned("place-pinned"))
	parent := t

	t.Run("a new tenant goes to the server with the fewest tenants, all its databases together", func(t *testing.T) {
		got := createTenant(parent, unpinned("place-fewest"))
		g := NewWithT(t)
		g.Expect(got.Status.Databases).To(HaveLen(2))
		for _, d := range got.Status.Databases {
			g.Expect(d.Server).To(Equal("pg-spare"))
		}
		g.Eventually(func(g Gomega) {
			ds := &tenancyv1alpha1.DatabaseServer{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "pg-spare"}, ds)).To(Succeed())
			g.Expect(ds.Status.Tenants).To(Equal(int32(1)))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a full server takes no more tenants", func(t *testing.T) {
		got := createTenant(parent, unpinned("place-full"))
		NewWithT(t).Expect(got.Status.Databases[0].Server).To(Equal(pgServer))
	})

	t.Run("naming another server for a placed database stalls instead of moving it", func(t *testing.T) {
		g := NewWithT(t)
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "place-fewest"}, got)).To(Succeed())
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Databases.Postgres[0].Server = pgServer
		g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: got.Name}, got)).To(Succeed())
			g.Expect(kstatus(g, got).Status).To(Equal(status.FailedStatus))
			g.Expect(condition(got, tenancyv1alpha1.DatabasesReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonDatabaseServerConflict))
			g.Expect(condition(got, tenancyv1alpha1.DatabasesReadyCondition).Message).To(ContainSubstring("landlordctl db move place-fewest app --to " + pgServer))
		}).WithTimeout(timeout).Should(Succeed())
		for _, d := range got.Status.Databases {
			g.Expect(d.Server).To(Equal("pg-spare"))
		}
	})
}

// expectGoneWithDatabaseKept waits until a deleted tenant and its namespace are gone, then checks
// that its database "app" still takes the tenant's credentials and that the store still holds
// them.
func expectGoneWithDatabaseKept(t *testing.T, tenant *tenancyv1alpha1.Tenant, app database.Account) {
	t.Helper()
	g, ctx := NewWithT(t), context.Background()
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(tenant), &tenancyv1alpha1.Tenant{}))
	}).WithTimeout(timeout).Should(BeTrue())
	waitNamespaceGone(t, opConfig.NamespaceName(tenant.Name))

	g.Expect(dbtest.CanUse(ctx, pg.Server, app)).To(Succeed())
	stored, err := store.Get(ctx, opConfig.NamespaceName(tenant.Name), "db-app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(stored.Data[tenancyv1alpha1.CredentialsKeyPassword])).To(Equal(app.Password))
}
