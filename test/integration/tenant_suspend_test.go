package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// setSuspend sets a tenant's spec.suspend with a merge patch, as landlordctl suspend does.
func setSuspend(g Gomega, name string, suspend bool) {
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
	g.Expect(k8s.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// requestReconcile sets the tenant's reconcile request annotation, as landlordctl reconcile does.
func requestReconcile(g Gomega, name, value string) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.ReconcileRequestAnnotation, value)
	g.Expect(k8s.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// waitSuspended waits until the tenant's status reports its current generation suspended.
func waitSuspended(t *testing.T, name string) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
		c := condition(tenant, tenancyv1alpha1.SuspendedCondition)
		g.Expect(c).NotTo(BeNil(), "conditions: %+v", tenant.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.ObservedGeneration).To(Equal(tenant.Generation))
		g.Expect(tenant.Status.ObservedGeneration).To(Equal(tenant.Generation))
	}).WithTimeout(timeout).Should(Succeed())
	return tenant
}

// waitPoliciesApplied waits until every admission policy and binding of Landlord's exists: the
// policy controller writes them as the operator starts, which a test counting the operator's
// requests must not count.
func waitPoliciesApplied(t *testing.T) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		for _, obj := range policy.Objects(policy.Operator{}) {
			live := obj.DeepCopyObject().(client.Object)
			g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), live)).To(Succeed())
		}
	}).WithTimeout(timeout).Should(Succeed())
}

// reconciledAfter runs change, waits until the tenant was reconciled after it and the operator
// is idle, and returns the requests the operator made meanwhile.
func reconciledAfter(t *testing.T, name string, change func(g Gomega)) testenv.Counts {
	t.Helper()
	g := NewWithT(t)
	waitIdle(t)
	before, reconciles := op.Requests.Snapshot(), tenantReconciles.of(name)
	change(g)
	g.Eventually(func() int { return tenantReconciles.of(name) }).WithTimeout(timeout).Should(BeNumerically(">", reconciles),
		"tenant %s was not reconciled after the change", name)
	waitIdle(t)
	made := op.Requests.Snapshot().Sub(before)
	// Written by the DatabaseServer controller when tenants of other tests come and go.
	delete(made, "PATCH databaseservers/status")
	return made
}

// viewers are the subjects of the tenant's viewer role binding, none when it has none.
func viewers(g Gomega, ns string) []rbacv1.Subject {
	rb := &rbacv1.RoleBinding{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: resources.ViewerRole}, rb)
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	return rb.Subjects
}

// quotaPods is the pods limit of the tenant's quota.
func quotaPods(g Gomega, ns string) int64 {
	quota := &corev1.ResourceQuota{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
	return quota.Spec.Hard.Pods().Value()
}

// A suspended tenant is left exactly as it is, whatever happens to it, at no cost; resuming
// it converges it at once, repairing what drifted meanwhile and applying what its spec asked.
func TestASuspendedTenantIsLeftAloneAndResumingItRepairsWhatDrifted(t *testing.T) {
	ctx := context.Background()
	const name = "paused"
	ns := opConfig.NamespaceName(name)
	createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "alice"}}
	}))
	waitPoliciesApplied(t)
	g := NewWithT(t)
	setSuspend(g, name, true)
	suspended := waitSuspended(t, name)

	t.Run("the status says it is suspended and keeps the last observed health", func(t *testing.T) {
		g := NewWithT(t)
		c := condition(suspended, tenancyv1alpha1.SuspendedCondition)
		g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ReasonSuspended))
		g.Expect(c.Message).To(ContainSubstring("spec.suspend"))
		g.Expect(condition(suspended, tenancyv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		// Ready as last observed, and observedGeneration current: kstatus reports Current.
		g.Expect(kstatus(g, suspended).Status).To(Equal(status.CurrentStatus))
	})

	t.Run("an unchanged suspended tenant costs no API requests", func(t *testing.T) {
		expectNoRequestsOnResync(t, name)
	})

	t.Run("an edited quota and a deleted role binding are not repaired, and cost nothing", func(t *testing.T) {
		g := NewWithT(t)
		made := reconciledAfter(t, name, func(g Gomega) {
			quota := &corev1.ResourceQuota{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
			quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5000")
			g.Expect(k8s.Update(ctx, quota)).To(Succeed())
			g.Expect(k8s.Delete(ctx, named(&rbacv1.RoleBinding{}, ns, resources.AdminRole))).To(Succeed())
		})
		g.Expect(made.Total()).To(BeZero(), "requests made for a suspended tenant: %s", made)
		g.Expect(quotaPods(g, ns)).To(BeEquivalentTo(5000))
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.AdminRole}, &rbacv1.RoleBinding{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the deleted role binding: %v", err)
	})

	t.Run("a spec change is observed but not applied", func(t *testing.T) {
		g := NewWithT(t)
		patch := `{"spec":{"access":{"viewers":[{"kind":"User","name":"bob"}]}}}`
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		tenant := waitSuspended(t, name)
		g.Expect(tenant.Generation).To(BeNumerically(">", suspended.Generation))
		g.Expect(viewers(g, ns)).NotTo(ContainElement(HaveField("Name", "bob")))
	})

	t.Run("a request to reconcile now waits until the tenant is resumed", func(t *testing.T) {
		g := NewWithT(t)
		made := reconciledAfter(t, name, func(g Gomega) { requestReconcile(g, name, "while-suspended") })
		g.Expect(made.Total()).To(BeZero(), "requests made for a suspended tenant: %s", made)
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		g.Expect(tenant.Status.LastHandledReconcileAt).To(BeEmpty())
	})

	t.Run("resuming repairs the quota and the role binding, applies the spec and handles the request", func(t *testing.T) {
		g := NewWithT(t)
		setSuspend(g, name, false)
		tenant := waitReady(t, name)
		g.Expect(condition(tenant, tenancyv1alpha1.SuspendedCondition)).To(BeNil())
		g.Expect(tenant.Status.LastHandledReconcileAt).To(Equal("while-suspended"))
		g.Expect(quotaPods(g, ns)).To(BeEquivalentTo(50))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.AdminRole}, &rbacv1.RoleBinding{})).To(Succeed())
		g.Expect(viewers(g, ns)).To(ContainElement(HaveField("Name", "bob")))
	})
}

// A request to reconcile now is handled at once, and checks everything again rather than
// trusting what earlier reconciles found: a login changed on its database server behind
// Landlord's back, which no event reports, is put right.
func TestARequestToReconcileNowChecksTheTenantAgainAndIsRecordedAsHandled(t *testing.T) {
	ctx := context.Background()
	const name = "reconcile-now"
	tenant := createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	waitPoliciesApplied(t)
	// Nothing of the tenant's creation is still at work on its login.
	waitIdle(t)
	g := NewWithT(t)
	acct := testenv.AccountOf(credentials(g, name, "app"))
	g.Expect(dbtest.CanUse(ctx, pg.Server, acct)).To(Succeed())

	// The password changed on the server by someone else: the tenant's application is locked out.
	admin, err := dbtest.OpenDB(pg.Server, pg.Server.AdminUser, pg.Server.AdminPassword, "postgres")
	g.Expect(err).NotTo(HaveOccurred())
	defer admin.Close()
	_, err = admin.ExecContext(ctx, fmt.Sprintf(`ALTER ROLE %q PASSWORD 'changed-by-hand'`, acct.Username))
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("a resync trusts what it found before and costs nothing", func(t *testing.T) {
		expectNoRequestsOnResync(t, name)
		NewWithT(t).Expect(dbtest.CanUse(ctx, pg.Server, acct)).NotTo(Succeed())
	})

	t.Run("a request is handled once, its value recorded, the login put right, at a known cost", func(t *testing.T) {
		g := NewWithT(t)
		made := reconciledAfter(t, name, func(g Gomega) { requestReconcile(g, name, "2026-11-25T20:00:00Z") })
		got := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal("2026-11-25T20:00:00Z"))
		g.Expect(got.Generation).To(Equal(tenant.Generation), "the request is no spec change")
		g.Expect(kstatus(g, got).Status).To(Equal(status.CurrentStatus))
		g.Expect(dbtest.CanUse(ctx, pg.Server, acct)).To(Succeed())
		// Every object the cache keeps without its body is read once to be compared in full
		// (the namespace and the credentials Secret are kept whole), and the status records the
		// request: nothing is written, since nothing in the cluster had drifted.
		ns := client.InNamespace(opConfig.NamespaceName(name))
		g.Expect(made).To(Equal(testenv.Counts{
			"GET resourcequotas":   1,
			"GET limitranges":      1,
			"GET networkpolicies":  count(g, &networkingv1.NetworkPolicyList{}, ns),
			"GET rolebindings":     count(g, &rbacv1.RoleBindingList{}, ns),
			"PATCH tenants/status": 1,
		}), "requests made by a request to reconcile now: %s", made)
	})

	t.Run("the same value again requests nothing", func(t *testing.T) {
		g := NewWithT(t)
		waitIdle(t)
		before := op.Requests.Snapshot()
		requestReconcile(g, name, "2026-11-25T20:00:00Z")
		// A request handled again would read every object again (above).
		resync(t, name)
		made := op.Requests.Snapshot().Sub(before)
		delete(made, "PATCH databaseservers/status")
		g.Expect(made.Total()).To(BeZero(), "requests made after the same request again: %s", made)
	})

	t.Run("after it, an unchanged tenant costs no API requests again", func(t *testing.T) {
		expectNoRequestsOnResync(t, name)
	})
}

// count is how many objects a list of the admin's finds.
func count(g Gomega, list client.ObjectList, opts ...client.ListOption) int {
	g.Expect(k8s.List(context.Background(), list, opts...)).To(Succeed())
	return meta.LenList(list)
}

// Deleting a suspended tenant goes ahead, as Flux lets a suspended object go, and runs the
// finalizer all the same: it is what keeps a tenant's data when its namespace goes.
func TestDeletingASuspendedTenantProceedsAndKeepsItsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	tenant := createTenant(t, newTenant("paused-deleted", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	app := testenv.AccountOf(credentials(g, tenant.Name, "app"))
	setSuspend(g, tenant.Name, true)
	waitSuspended(t, tenant.Name)

	g.Expect(confirmedDelete(ctx, tenant.Name)).To(Succeed())
	expectGoneWithDatabaseKept(t, tenant, app)
}

// claimKStatus is the claim's status as kstatus-aware tools (Flux, kubectl wait) compute it.
func claimKStatus(g Gomega, name string) (*tenancyv1alpha1.TenantClaim, status.Status) {
	claim := &tenancyv1alpha1.TenantClaim{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, claim)).To(Succeed())
	res, err := testenv.KStatus(claim)
	g.Expect(err).NotTo(HaveOccurred())
	return claim, res.Status
}

// poolCounts waits until the pool has acted on its current spec and reports these counts.
func poolCounts(t *testing.T, name string, ready, provisioning, suspended, allocated int32) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		pool := &tenancyv1alpha1.TenantPool{}
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, pool)).To(Succeed())
		g.Expect(pool.Status.ObservedGeneration).To(Equal(pool.Generation))
		g.Expect([]int32{pool.Status.Ready, pool.Status.Provisioning, pool.Status.Suspended, pool.Status.Allocated}).
			To(Equal([]int32{ready, provisioning, suspended, allocated}), "status: %+v", pool.Status)
	}).WithTimeout(2 * timeout).Should(Succeed())
}

// A suspended spare's Ready condition is what was last observed, not what is, and whoever
// suspended it is looking at it: it is never handed to a claim, and the pool keeps it out of
// its counts. The pool creates a spare in its place, even when maxProvisioning is 1, so claims
// are bound meanwhile; and shrinking never deletes it (deleting a spare drops its databases).
// Resumed, it is an ordinary spare again. Claims say all along, in kstatus conditions, whether
// they are Ready.
func TestASuspendedSpareIsReplacedNeverHandedOutAndNeverScaledAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const poolName = "pool-paused"
	pool := newPool(poolName, 1)
	pool.Spec.MaxProvisioning = ptr.To[int32](1)
	pool.Spec.Template.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	createPool(t, pool)
	waitPool(t, poolName, 1, 0)
	g := NewWithT(t)
	spares, _ := poolTenants(g, poolName)
	g.Expect(spares).To(HaveLen(1))
	spare := spares[0].Name
	data := testenv.AccountOf(credentials(g, spare, "app"))
	setSuspend(g, spare, true)
	waitSuspended(t, spare)
	createClaim(t, newClaim("while-paused", poolName))

	t.Run("the claim is bound to a spare created in place of the suspended one", func(t *testing.T) {
		g := NewWithT(t)
		bound := waitBound(t, "while-paused")
		g.Expect(bound.Status.Tenant).NotTo(Equal(spare))
		paused := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: spare}, paused)).To(Succeed())
		g.Expect(paused.IsAllocated()).To(BeFalse())
		g.Expect(paused.Spec.Suspend).To(BeTrue())
	})

	t.Run("the pool refills and reports the suspended spare on its own", func(t *testing.T) {
		poolCounts(t, poolName, 1, 0, 1, 1)
	})

	t.Run("scaled to zero, the pool keeps the suspended spare and its data", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: poolName}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`)))).To(Succeed())
		poolCounts(t, poolName, 0, 0, 1, 1)
		g.Eventually(func(g Gomega) {
			spares, _ := poolTenants(g, poolName)
			g.Expect(spares).To(HaveLen(1))
			g.Expect(spares[0].Name).To(Equal(spare))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(dbtest.CanUse(ctx, pg.Server, data)).To(Succeed())
	})

	createClaim(t, newClaim("waits-for-paused", poolName))

	t.Run("a claim on a pool with only a suspended spare stays pending, Reconciling and not Ready, with the reason it waits", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			claim, st := claimKStatus(g, "waits-for-paused")
			g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimPending))
			g.Expect(st).To(Equal(status.InProgressStatus))
			ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(tenancyv1alpha1.ReasonNoReadySpare))
			g.Expect(ready.Message).To(ContainSubstring(poolName))
			g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, tenancyv1alpha1.ReconcilingCondition)).To(BeTrue())
			g.Expect(claim.Status.ObservedGeneration).To(Equal(claim.Generation))
		}).WithTimeout(timeout).Should(Succeed())
		_, allocated := poolTenants(NewWithT(t), poolName)
		NewWithT(t).Expect(allocated).To(HaveLen(1))
	})

	t.Run("scaled up again, the claim is bound to a new spare and is Ready", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: poolName}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`)))).To(Succeed())
		bound := waitBound(t, "waits-for-paused")
		g.Expect(bound.Status.Tenant).NotTo(Equal(spare))
		g.Eventually(func(g Gomega) {
			claim, st := claimKStatus(g, "waits-for-paused")
			g.Expect(st).To(Equal(status.CurrentStatus))
			ready := meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(ready.Reason).To(Equal(tenancyv1alpha1.ReasonBound))
			g.Expect(meta.FindStatusCondition(claim.Status.Conditions, tenancyv1alpha1.ReconcilingCondition)).To(BeNil())
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("resumed, the spare counts towards replicas again and the pool keeps one", func(t *testing.T) {
		g := NewWithT(t)
		poolCounts(t, poolName, 1, 0, 1, 2)
		setSuspend(g, spare, false)
		poolCounts(t, poolName, 1, 0, 0, 2)
		g.Eventually(func(g Gomega) {
			spares, _ := poolTenants(g, poolName)
			g.Expect(spares).To(HaveLen(1))
		}).WithTimeout(timeout).Should(Succeed())
	})
}

// A pool whose spares would all be suspended would never have one to hand out.
func TestAPoolTemplateThatSuspendsItsSparesIsRejected(t *testing.T) {
	g := NewWithT(t)
	pool := newPool("pool-suspended", 1)
	pool.Spec.Template.Spec.Suspend = true
	err := k8s.Create(context.Background(), pool)
	if err == nil {
		_ = k8s.Delete(context.Background(), pool)
	}
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("spares are not suspended"))
}
