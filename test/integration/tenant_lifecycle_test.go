package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func setState(t *testing.T, name string, state tenancyv1alpha1.TenantState) {
	t.Helper()
	g := NewWithT(t)
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.State = state
	if state == tenancyv1alpha1.StatePurged {
		tenant.Spec.PurgeConfirmation = name
	}
	g.Expect(k8s.Patch(context.Background(), tenant, patch)).To(Succeed())
}

func TestTenantLifecycle(t *testing.T) {
	// Its tenant is its own, and it asserts nothing of the cluster at large: it runs beside
	// the other parallel tests, once the serial ones (restarts, request counts) are done.
	t.Parallel()
	ctx := context.Background()
	const name, ns = "lifecycle", "tenant-lifecycle"
	createTenant(t, newTenant(name))

	t.Run("a Frozen tenant keeps its namespace and is Ready", func(t *testing.T) {
		setState(t, name, tenancyv1alpha1.StateFrozen)
		tenant := waitReady(t, name)
		NewWithT(t).Expect(tenant.Status.Namespace).To(Equal(ns))
		namespace(t, name)
	})

	t.Run("an Archived tenant's namespace is emptied and removed, and it is Ready once the namespace is gone", func(t *testing.T) {
		g := NewWithT(t)
		// An object whose finalizer the test holds keeps the namespace terminating until the test
		// lets go, so the tenant is seen waiting for it.
		held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{"test.landlord.dev/hold"}}}
		g.Expect(k8s.Create(ctx, held)).To(Succeed())
		setState(t, name, tenancyv1alpha1.StateArchived)
		g.Eventually(func(g Gomega) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
			g.Expect(condition(tenant, tenancyv1alpha1.ReconcilingCondition)).NotTo(BeNil())
			g.Expect(condition(tenant, tenancyv1alpha1.ReconcilingCondition).Reason).To(Equal(tenancyv1alpha1.ReasonNamespaceTerminating))
			g.Expect(kstatus(g, tenant).Status).To(Equal(status.InProgressStatus))
		}).WithTimeout(timeout).Should(Succeed())

		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(held), held)).To(Succeed())
			held.Finalizers = nil
			g.Expect(k8s.Update(ctx, held)).To(Succeed())
		}).WithTimeout(timeout).Should(Succeed())
		waitNamespaceGone(t, ns)
		tenant := waitReady(t, name)
		g.Expect(tenant.Status.Namespace).To(BeEmpty())
		g.Expect(condition(tenant, tenancyv1alpha1.NamespaceReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonNamespaceRemoved))
		for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.SecretList{}, &rbacv1.RoleList{}, &corev1.ResourceQuotaList{}} {
			g.Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(meta.LenList(list)).To(BeZero(), "%T left in the removed namespace", list)
		}
	})

	t.Run("an Archived tenant made Active again gets its namespace back", func(t *testing.T) {
		setState(t, name, tenancyv1alpha1.StateActive)
		tenant := waitReady(t, name)
		NewWithT(t).Expect(tenant.Status.Namespace).To(Equal(ns))
		namespace(t, name)
	})

	t.Run("a deleted tenant takes its namespace with it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(confirmedDelete(ctx, name)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: name}, &tenancyv1alpha1.Tenant{}))
		}).WithTimeout(timeout).Should(BeTrue())
		waitNamespaceGone(t, ns)
	})
}

func TestPurgedTenantRemovesItsNamespace(t *testing.T) {
	t.Parallel()
	const name = "purged"
	createTenant(t, newTenant(name))
	setState(t, name, tenancyv1alpha1.StatePurged)
	waitNamespaceGone(t, "tenant-"+name)
	tenant := waitReady(t, name)
	NewWithT(t).Expect(tenant.Status.Namespace).To(BeEmpty())
}

// A namespace with the tenant's name that Landlord did not create belongs to someone else: the
// tenant stalls with a message saying so, and the namespace is left exactly as it was.
func TestTenantStallsOnANamespaceItDoesNotOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	foreign := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-squatted", Labels: map[string]string{"team": "payments"}}}
	g.Expect(k8s.Create(ctx, foreign)).To(Succeed())
	t.Cleanup(func() { deleteNamespace(t, foreign) })

	tenant := newTenant("squatted")
	g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, "squatted") })

	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tenant), tenant)).To(Succeed())
		res := kstatus(g, tenant)
		g.Expect(res.Status).To(Equal(status.FailedStatus))
		stalled := condition(tenant, tenancyv1alpha1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonOwnershipConflict))
		g.Expect(stalled.Message).To(ContainSubstring(`Namespace "tenant-squatted" already exists and is not managed by Tenant "squatted"`))
		g.Expect(condition(tenant, tenancyv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(condition(tenant, tenancyv1alpha1.ReconcilingCondition)).To(BeNil())
		g.Expect(tenant.Status.ObservedGeneration).To(Equal(tenant.Generation))
	}).WithTimeout(timeout).Should(Succeed())

	live := &corev1.Namespace{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), live)).To(Succeed())
	g.Expect(live.Labels).To(Equal(map[string]string{"team": "payments", "kubernetes.io/metadata.name": "tenant-squatted"}))
	g.Expect(live.OwnerReferences).To(BeEmpty())

	t.Run("deleting the tenant leaves the namespace it does not own in place", func(t *testing.T) {
		g := NewWithT(t)
		deleteTenant(t, "squatted")
		kept := &corev1.Namespace{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(foreign), kept)).To(Succeed())
		g.Expect(kept.DeletionTimestamp).To(BeNil(), "the tenant's deletion deleted a namespace it did not own")
		g.Expect(kept.UID).To(Equal(live.UID))
	})
}

// deleteNamespace deletes a namespace and waits until it is gone.
func deleteNamespace(t *testing.T, ns *corev1.Namespace) {
	t.Helper()
	if err := k8s.Delete(context.Background(), ns); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	waitNamespaceGone(t, ns.Name)
}

// An object the API server rejects will not fix itself: the tenant stalls with the server's
// reason, and what already exists stays in place.
func TestTenantStallsOnAnObjectTheAPIServerRejects(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	tenant := newTenant("bad-limits", func(t *tenancyv1alpha1.Tenant) {
		// A default limit above the maximum is not a valid LimitRange.
		t.Spec.Limits = &tenancyv1alpha1.Limits{Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}}
	})
	g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, tenant.Name) })

	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tenant), tenant)).To(Succeed())
		g.Expect(kstatus(g, tenant).Status).To(Equal(status.FailedStatus))
		stalled := condition(tenant, tenancyv1alpha1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonInvalidObject))
		g.Expect(stalled.Message).To(ContainSubstring("LimitRange/tenant-bad-limits/tenant-limits"))
	}).WithTimeout(timeout).Should(Succeed())
	namespace(t, tenant.Name)

	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.Limits = nil
	g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
	waitReady(t, tenant.Name)
}
