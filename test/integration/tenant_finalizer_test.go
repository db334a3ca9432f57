package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
)

// waitForFinalizerPolicy waits until the API server applies the finalizer policy: it acts on a
// policy a moment after the operator writes it. The probe is a dry run, so nothing is created.
func waitForFinalizerPolicy(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		probe := newTenant("finalizer-probe")
		g.Expect(k8s.Create(context.Background(), probe, client.DryRunAll)).To(Succeed())
		g.Expect(probe.Finalizers).To(ContainElement(tenancyv1alpha1.Finalizer), "%s is not in force yet", policy.TenantFinalizer)
	}).WithTimeout(timeout).Should(Succeed())
}

// The finalizer policy adds Landlord's finalizer only when it is missing, next to any other.
// Dry runs: the answer is the object as admitted, and nothing is left to clean up.
func TestTheFinalizerPolicyAddsOnlyWhatIsMissing(t *testing.T) {
	waitForFinalizerPolicy(t)
	cases := []struct {
		name       string
		finalizers []string
		want       []string
	}{
		{"a tenant without finalizers gets Landlord's", nil, []string{tenancyv1alpha1.Finalizer}},
		{"a tenant with another finalizer keeps it and gets Landlord's", []string{"example.com/keep"}, []string{"example.com/keep", tenancyv1alpha1.Finalizer}},
		{"a tenant created with Landlord's finalizer has it once", []string{tenancyv1alpha1.Finalizer}, []string{tenancyv1alpha1.Finalizer}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tenant := newTenant("finalizer-dry-run", func(t *tenancyv1alpha1.Tenant) { t.Finalizers = tc.finalizers })
			g.Expect(k8s.Create(context.Background(), tenant, client.DryRunAll)).To(Succeed())
			g.Expect(tenant.Finalizers).To(Equal(tc.want))
		})
	}
}

// Every way a tenant comes to be gives it the finalizer at admission, so the operator's own
// metadata patch is not needed: one write less per new tenant. The operator's requests are
// counted by the API server's answer to them, and none may be a PATCH of a Tenant (its status
// is a subresource, counted apart).
func TestNewTenantsHaveTheFinalizerFromAdmission(t *testing.T) {
	ctx := context.Background()
	waitForFinalizerPolicy(t)
	cases := []struct {
		name string
		// create makes tenants, checks them as admitted and returns their names.
		create func(t *testing.T) []string
	}{
		{"a tenant a user creates", func(t *testing.T) []string {
			tenant := newTenant("finalizer-created")
			NewWithT(t).Expect(k8s.Create(ctx, tenant)).To(Succeed())
			t.Cleanup(func() { deleteTenant(t, tenant.Name) })
			// The create's answer is the tenant as admitted, before the operator has seen it.
			NewWithT(t).Expect(tenant.Finalizers).To(Equal([]string{tenancyv1alpha1.Finalizer}))
			return []string{tenant.Name}
		}},
		{"a tenant applied server-side, then applied again, as Flux does", func(t *testing.T) []string {
			g := NewWithT(t)
			const name = "finalizer-applied"
			apply := func(organization string) *tenancyv1alpha1.Tenant {
				manifest := fmt.Sprintf(`{"apiVersion":%q,"kind":"Tenant","metadata":{"name":%q},"spec":{"organization":%q,"email":"ops@acme.example.com"}}`,
					tenancyv1alpha1.GroupVersion.String(), name, organization)
				tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
				g.Expect(k8s.Patch(ctx, tenant, client.RawPatch(types.ApplyPatchType, []byte(manifest)), client.FieldOwner("flux"), client.ForceOwnership)).To(Succeed())
				return tenant
			}
			g.Expect(apply("Acme Inc.").Finalizers).To(Equal([]string{tenancyv1alpha1.Finalizer}))
			t.Cleanup(func() { deleteTenant(t, name) })
			waitReady(t, name)
			// The second apply lists no finalizer, and keeps it: the admission policy's
			// finalizer belongs to no field manager, so no apply removes it.
			g.Expect(apply("Acme Corporation").Finalizers).To(Equal([]string{tenancyv1alpha1.Finalizer}))
			return []string{name}
		}},
		{"a pool's spares", func(t *testing.T) []string {
			const pool = "finalizer-pool"
			createPool(t, newPool(pool, 2))
			waitPool(t, pool, 2, 0)
			names := poolTenantNames(pool)
			g := NewWithT(t)
			g.Expect(names).To(HaveLen(2))
			for _, name := range names {
				spare := &tenancyv1alpha1.Tenant{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, spare)).To(Succeed())
				g.Expect(spare.Finalizers).To(Equal([]string{tenancyv1alpha1.Finalizer}), "spare %s", name)
			}
			return names
		}},
	}
	for _, tc := range cases {
		t.Run("the finalizer comes from admission, and no patch from the operator, for "+tc.name, func(t *testing.T) {
			before := op.Requests.Snapshot()
			names := tc.create(t)
			for _, name := range names {
				waitReady(t, name)
			}
			waitIdle(t)
			made := op.Requests.Snapshot().Sub(before)
			g := NewWithT(t)
			// The counter saw the operator provision these tenants: it wrote their status.
			g.Expect(made["PATCH tenants/status"]).To(BeNumerically(">=", len(names)), "operator requests: %s", made)
			g.Expect(made).NotTo(HaveKey("PATCH tenants"), "operator requests: %s", made)
		})
	}
}

// The operator does not depend on the policy: a tenant without the finalizer (created before
// the policy existed, or with it removed by hand) gets it from the operator, with one patch.
func TestTheOperatorPutsBackAFinalizerRemovedByHand(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	const name = "finalizer-removed"
	createTenant(t, newTenant(name))
	// kube-controller-manager's first count of the new namespace's quota re-triggers the
	// tenant: it must be behind us, or that reconcile puts the finalizer back before the resync.
	g.Eventually(func(g Gomega) {
		quota := &corev1.ResourceQuota{}
		g.Expect(op.GetCache().Get(ctx, client.ObjectKey{Namespace: opConfig.NamespaceName(name), Name: resources.QuotaName}, quota)).To(Succeed())
		g.Expect(quota.Status.Used).To(HaveKey(corev1.ResourcePods))
	}).WithTimeout(timeout).Should(Succeed())
	waitIdle(t)
	before := op.Requests.Snapshot()

	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	g.Expect(k8s.Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))).To(Succeed())
	// The policy matches creates only: a finalizer removed later stays removed until the
	// operator puts it back.
	g.Expect(tenant.Finalizers).To(BeEmpty())
	// The tenant's watch passes changes to its spec and labels only, so the operator puts the
	// finalizer back on the tenant's next reconcile, which a resync stands for here. That
	// reconcile reads the cache: it must have seen the removal first.
	g.Eventually(func(g Gomega) {
		cached := &tenancyv1alpha1.Tenant{}
		g.Expect(op.GetCache().Get(ctx, client.ObjectKey{Name: name}, cached)).To(Succeed())
		g.Expect(cached.Finalizers).To(BeEmpty())
	}).WithTimeout(timeout).Should(Succeed())

	resync(t, name)
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
	g.Expect(tenant.Finalizers).To(Equal([]string{tenancyv1alpha1.Finalizer}))
	made := op.Requests.Snapshot().Sub(before)
	g.Expect(made).To(HaveKeyWithValue("PATCH tenants", 1), "operator requests: %s", made)
}
