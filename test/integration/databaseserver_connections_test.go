package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// One tenant login must not be able to take a shared server from the others. Each login used to
// be given 100 sessions, PostgreSQL's default max_connections: any one tenant could fill the
// server, and Landlord's own sessions with it. A server now gives each login a share of what it
// has (status.connectionLimit), and one whose limit lets its logins hold more than it has says
// so.
func TestADatabaseServerSharesItsConnectionsBetweenItsTenants(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	// No tenant is placed on it: the tests that place databases do not run beside this one.
	g.Expect(createDatabaseServer(ctx, "pg-connections", pg, ptr.To[int32](1))).To(Succeed())
	ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: "pg-connections"}}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ds) })
	observed := func(g Gomega) *tenancyv1alpha1.DatabaseServer {
		got := &tenancyv1alpha1.DatabaseServer{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ds), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		return got
	}

	t.Run("left unset, the limit is the server's slots for its one tenant", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			got := observed(g)
			// The test server: max_connections 100, 3 reserved for superusers, 6 Landlord's.
			g.Expect(got.Status.ConnectionSlots).To(Equal(int32(100)))
			g.Expect(got.Status.ConnectionLimit).To(Equal(int32(91)))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ConnectionsOvercommittedCondition)).To(BeNil())
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a limit that lets one login fill the server is reported", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Patch(ctx, ds, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"connectionLimit":100}}`)))).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := observed(g)
			g.Expect(got.Status.ConnectionLimit).To(Equal(int32(100)))
			c := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ConnectionsOvercommittedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ReasonConnectionLimitTooHigh))
			g.Expect(c.Message).To(ContainSubstring("may hold 100 sessions, and the server leaves tenants 91 slots"))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("unset again, the report goes", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Patch(ctx, ds, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"connectionLimit":null,"maxTenants":4}}`)))).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := observed(g)
			g.Expect(got.Status.ConnectionLimit).To(Equal(int32(22)))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.ConnectionsOvercommittedCondition)).To(BeNil())
		}).WithTimeout(timeout).Should(Succeed())
	})
}

// A tenant's login used to keep the connection limit it was created with until its password was
// rotated: a server given a lower spec.connectionLimit left every existing login at the old one.
// The platform's limit now reaches every login on the server, the limit alone (never the
// password), and the tenant records the limit its logins were given.
func TestAChangedConnectionLimitReachesTheLoginsInPlace(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	const server = "pg-limits"
	g.Expect(env.RegisterDatabaseServer(ctx, opConfig.Databases.CredentialsNamespace, server, pg, func(spec *tenancyv1alpha1.DatabaseServerSpec) {
		spec.ConnectionLimit = ptr.To[int32](9)
	})).To(Succeed())
	ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: server}}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ds) })
	tenant := createTenant(t, newTenant("limits", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app", Server: server}}
	}))
	username := tenant.Status.Databases[0].Username
	admin, err := dbtest.OpenDB(pg.Server, pg.Server.AdminUser, pg.Server.AdminPassword, "postgres")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = admin.Close() })
	limitOf := func(g Gomega) int {
		var limit int
		g.Expect(admin.QueryRowContext(ctx, "SELECT rolconnlimit FROM pg_roles WHERE rolname = $1", username).Scan(&limit)).To(Succeed())
		return limit
	}
	g.Expect(limitOf(g)).To(Equal(9))
	// The password's verifier: a new one (a new salt) would mean the password was set again.
	verifier := func(g Gomega) string {
		var v string
		g.Expect(admin.QueryRowContext(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", username).Scan(&v)).To(Succeed())
		return v
	}
	before := verifier(g)

	g.Expect(k8s.Patch(ctx, ds, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"connectionLimit":4}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "limits"}, got)).To(Succeed())
		g.Expect(limitOf(g)).To(Equal(4), "recorded: %d, conditions %+v", *got.Status.Databases[0].ConnectionLimit, got.Status.Conditions)
		g.Expect(got.Status.Databases).To(ConsistOf(HaveField("ConnectionLimit", HaveValue(BeEquivalentTo(4)))))
		g.Expect(got.Status.Databases[0].Rotation).To(BeEmpty(), "no rotation was asked for")
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(verifier(g)).To(Equal(before), "the limit alone changes, never the password")
}
