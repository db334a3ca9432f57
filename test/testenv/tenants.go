package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The fixtures below are the tenant steps every cluster suite takes: make a tenant, wait until
// kstatus calls it Current, delete it as an administrator does, act as a user.

// NewTenant is a tenant with the given name and the spec changes applied.
func NewTenant(name string, mutate ...func(*tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
	t := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Organization: "Acme Inc.", Email: "ops@acme.example.com"},
	}
	for _, f := range mutate {
		f(t)
	}
	return t
}

// CreateTenant creates a tenant, deletes it when the test ends, and waits until it is Current.
func CreateTenant(t *testing.T, c client.Client, tenant *tenancyv1alpha1.Tenant, timeout time.Duration) *tenancyv1alpha1.Tenant {
	t.Helper()
	NewWithT(t).Expect(c.Create(context.Background(), tenant)).To(Succeed())
	t.Cleanup(func() { DeleteTenants(t, c, 2*timeout, tenant.Name) })
	return WaitTenantCurrent(t, c, tenant.Name, timeout)
}

// WaitTenantCurrent waits until the tenant's status is kstatus Current (Ready and observed), as
// Flux and kubectl wait see it, and returns the tenant.
func WaitTenantCurrent(t *testing.T, c client.Reader, name string, timeout time.Duration) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
		res, err := KStatus(tenant)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Status).To(Equal(status.CurrentStatus), "conditions: %+v", tenant.Status.Conditions)
	}).WithTimeout(timeout).Should(Succeed())
	return tenant
}

// ConfirmedDelete deletes a tenant in whatever state it is, confirming the deletion first as an
// administrator does for an Active or Frozen tenant.
func ConfirmedDelete(ctx context.Context, c client.Client, name string, opts ...client.DeleteOption) error {
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	confirm := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.DeletionConfirmationAnnotation, name)
	if err := c.Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(confirm))); err != nil {
		return err
	}
	return c.Delete(ctx, tenant, opts...)
}

// DeleteTenants deletes tenants at once, confirming each, and waits until they are gone: the
// finalizer has dropped what it had to (their data is kept unless they are Purged). Their
// namespaces are emptied by the namespace controller after that.
func DeleteTenants(t *testing.T, c client.Client, timeout time.Duration, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		if err := ConfirmedDelete(ctx, c, name); client.IgnoreNotFound(err) != nil {
			t.Errorf("deleting tenant %s: %v", name, err)
		}
	}
	NewWithT(t).Eventually(func(g Gomega) {
		for _, name := range names {
			err := c.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "tenant %s was not deleted", name)
		}
	}).WithTimeout(timeout).Should(Succeed())
}

// Impersonate is a client acting as the user, in the groups given.
func (e *Env) Impersonate(t testing.TB, user string, groups ...string) client.Client {
	t.Helper()
	c, err := client.New(e.As(user, groups...), client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
