package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// A database the tenant's status records exists on its server with a password the tenant's
// applications hold. A store that lost its record (deleted by hand, restored from an older
// backup) must not make Landlord mint a new one: that would lock every running application out.
func TestADatabaseKeepsItsPasswordWhenTheStoreLosesItsRecord(t *testing.T) {
	ctx := context.Background()
	const name = "store-lost"
	createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	waitIdle(t)
	ns := opConfig.NamespaceName(name)
	g := NewWithT(t)
	acct := testenv.AccountOf(credentials(g, name, "app"))
	admin, err := dbtest.OpenDB(pg.Server, pg.Server.AdminUser, pg.Server.AdminPassword, "postgres")
	g.Expect(err).NotTo(HaveOccurred())
	defer admin.Close()

	t.Run("a request to reconcile now writes the tenant's Secret back to the store and sets its password on the server", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(store.Delete(ctx, ns, "db-app")).To(Succeed())
		// Changed by hand too: the request must put the Secret's password back on the server,
		// not merely leave the server alone.
		_, err := admin.ExecContext(ctx, fmt.Sprintf(`ALTER ROLE %q PASSWORD 'changed-by-hand'`, acct.Username))
		g.Expect(err).NotTo(HaveOccurred())

		requestReconcile(g, name, "2026-11-26T08:00:00Z")
		waitHandled(t, name, "2026-11-26T08:00:00Z")

		g.Expect(testenv.AccountOf(credentials(g, name, "app"))).To(Equal(acct), "the Secret was given new credentials")
		g.Expect(dbtest.CanUse(ctx, pg.Server, acct)).To(Succeed(), "the Secret's password does not log in")
		stored, err := store.Get(ctx, ns, "db-app")
		g.Expect(err).NotTo(HaveOccurred(), "the record is not back in the store")
		g.Expect(string(stored.Data[tenancyv1alpha1.CredentialsKeyPassword])).To(Equal(acct.Password))
		g.Expect(stored.Annotations).To(HaveKeyWithValue(tenancyv1alpha1.TenantUIDLabel, string(getTenant(g, name).UID)))
		g.Expect(condition(waitReady(t, name), tenancyv1alpha1.DatabasesReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	})

	t.Run("without its Secret either, the tenant stalls naming the database and its password is not replaced", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(store.Delete(ctx, ns, "db-app")).To(Succeed())
		g.Expect(k8s.Delete(ctx, credentials(g, name, "app"))).To(Succeed())

		g.Eventually(func(g Gomega) {
			c := condition(getTenant(g, name), tenancyv1alpha1.StalledCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ReasonCredentialsMissing))
			g.Expect(c.Message).To(And(ContainSubstring(`database app`), ContainSubstring("stored credentials"), ContainSubstring("rotation")))
		}).WithTimeout(timeout).Should(Succeed())
		waitIdle(t)
		g.Expect(dbtest.CanUse(ctx, pg.Server, acct)).To(Succeed(), "the password on the server was replaced")
		_, err := store.Get(ctx, ns, "db-app")
		g.Expect(errors.Is(err, secret.ErrNotFound)).To(BeTrue(), "a record was written to the store: %v", err)
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-app"}, &corev1.Secret{}))).To(BeTrue(),
			"a credentials Secret was written without credentials to write")
	})

	t.Run("a rotation request is the way to give it a new password", func(t *testing.T) {
		g := NewWithT(t)
		tenant := getTenant(g, name)
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.Databases.Postgres[0].Rotation = "after-the-store-lost-it"
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
		waitReady(t, name)
		rotated := testenv.AccountOf(credentials(g, name, "app"))
		g.Expect(rotated.Database).To(Equal(acct.Database))
		g.Expect(rotated.Username).To(Equal(acct.Username))
		g.Expect(rotated.Password).NotTo(Equal(acct.Password))
		g.Expect(dbtest.CanUse(ctx, pg.Server, rotated)).To(Succeed())
		stored, err := store.Get(ctx, ns, "db-app")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(stored.Data[tenancyv1alpha1.CredentialsKeyPassword])).To(Equal(rotated.Password))
	})
}

// waitHandled waits until the tenant's status records the reconcile request as handled.
func waitHandled(t *testing.T, name, value string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) string {
		return getTenant(g, name).Status.LastHandledReconcileAt
	}).WithTimeout(timeout).Should(Equal(value))
	waitIdle(t)
}

// getTenant is the tenant as the API server has it now.
func getTenant(g Gomega, name string) *tenancyv1alpha1.Tenant {
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	return tenant
}
