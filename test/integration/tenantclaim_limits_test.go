package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// Each claim bound is a new tenant for good: the pool replaces the spare it took. Claiming is
// therefore granted on its own, never by Kubernetes' edit role that anyone editing some
// namespace holds; a pool binds claims only from the namespaces it selects and with the labels
// it allows (a label chooses what shared secrets, rollouts and backups a tenant gets); and a
// pool stops creating tenants at its ceiling, saying so.
func TestClaimingIsGrantedAndBoundedByThePool(t *testing.T) {
	ctx := context.Background()
	const (
		editing = "claims-editing" // a namespace whose editors are no signup service
		signup  = "claims-signup"  // the signup service's namespace, which pools select
	)
	for name, labels := range map[string]map[string]string{editing: nil, signup: {"example.com/signup": "true"}} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		NewWithT(t).Expect(k8s.Create(ctx, ns)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, ns) })
	}
	claimIn := func(namespace, name, pool string, labels map[string]string) *tenancyv1alpha1.TenantClaim {
		return &tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: pool, Organization: "Customer " + name, Labels: labels},
		}
	}
	// claimStatus waits until the claim reports reason, and returns it.
	claimStatus := func(t *testing.T, claim *tenancyv1alpha1.TenantClaim, reason string) *tenancyv1alpha1.TenantClaim {
		t.Helper()
		got := &tenancyv1alpha1.TenantClaim{}
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(claim), got)).To(Succeed())
			g.Expect(got.Status.Reason).To(Equal(reason), "status: %+v", got.Status)
		}).WithTimeout(timeout).Should(Succeed())
		return got
	}

	t.Run("Kubernetes' edit role does not grant claims; landlord-claimer does", func(t *testing.T) {
		g := NewWithT(t)
		installAggregatedRoles(t)
		// The aggregation controller folds landlord-edit into edit; once it has, edit grants
		// what it will.
		g.Eventually(func(g Gomega) {
			edit := &rbacv1.ClusterRole{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "edit"}, edit)).To(Succeed())
			g.Expect(edit.Rules).To(ContainElement(HaveField("Resources", ContainElement("tenantpools"))))
		}).WithTimeout(timeout).Should(Succeed())
		for user, role := range map[string]string{"namespace-editor": "edit", "signup-service": "landlord-claimer"} {
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: editing, Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
			}
			g.Expect(k8s.Create(ctx, binding)).To(Succeed())
		}
		err := impersonate(t, "namespace-editor").Create(ctx, claimIn(editing, "by-an-editor", "any", nil), client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "an editor of %s created a claim: %v", editing, err)
		g.Expect(impersonate(t, "signup-service").Create(ctx, claimIn(editing, "by-the-signup-service", "any", nil), client.DryRunAll)).To(Succeed())
	})

	t.Run("a pool binds claims only from the namespaces it selects, with the labels it allows", func(t *testing.T) {
		g := NewWithT(t)
		pool := newPool("claim-gate", 1)
		pool.Spec.Claims = tenancyv1alpha1.TenantPoolClaims{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/signup": "true"}},
			AllowedLabels:     []tenancyv1alpha1.AllowedClaimLabel{{Key: "region", Values: []string{"eu", "us"}}},
		}
		createPool(t, pool)
		waitPool(t, pool.Name, 1, 0)

		refused := []struct {
			claim   *tenancyv1alpha1.TenantClaim
			message string
		}{
			{claimIn(editing, "elsewhere", pool.Name, nil), "namespace " + editing + " does not match"},
			{claimIn(signup, "enterprise", pool.Name, map[string]string{"plan": "enterprise"}),
				"spec.labels.plan: TenantPool claim-gate does not let a claim set the label plan (spec.claims.allowedLabels: region)"},
			{claimIn(signup, "asia", pool.Name, map[string]string{"region": "asia"}),
				`spec.labels.region: TenantPool claim-gate lets a claim set region only to eu, us, not "asia"`},
		}
		for _, r := range refused {
			createClaim(t, r.claim)
			got := claimStatus(t, r.claim, tenancyv1alpha1.ReasonClaimRefused)
			g.Expect(got.Status.Message).To(ContainSubstring(r.message))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, tenancyv1alpha1.StalledCondition)).To(BeTrue(), "a refused claim is Stalled: %+v", got.Status)
		}

		allowed := claimIn(signup, "europe", pool.Name, map[string]string{"region": "eu"})
		createClaim(t, allowed)
		bound := claimStatus(t, allowed, tenancyv1alpha1.ReasonBound)
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: bound.Status.Tenant}, tenant)).To(Succeed())
		g.Expect(tenant.Labels).To(HaveKeyWithValue("region", "eu"))
		g.Expect(tenant.Labels).To(HaveKeyWithValue("plan", "standard"), "the pool's own label stays the pool's")

		// The pool has refilled: a spare is Ready again, and none of the refused claims took it.
		waitPool(t, pool.Name, 1, 1)
		for _, r := range refused {
			g.Expect(claimStatus(t, r.claim, tenancyv1alpha1.ReasonClaimRefused).Status.Phase).To(Equal(tenancyv1alpha1.ClaimPending))
		}

		// Once the pool allows a refused claim, it binds.
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
		pool.Spec.Claims.AllowedLabels = append(pool.Spec.Claims.AllowedLabels, tenancyv1alpha1.AllowedClaimLabel{Key: "plan"})
		g.Expect(k8s.Update(ctx, pool)).To(Succeed())
		g.Expect(claimStatus(t, refused[1].claim, tenancyv1alpha1.ReasonBound).Status.Tenant).NotTo(BeEmpty())
	})

	t.Run("a pool creates no tenant past spec.maxTenants, says so, and claims wait for it", func(t *testing.T) {
		g := NewWithT(t)
		pool := newPool("capped", 2)
		pool.Spec.MaxTenants = ptr.To[int32](3)
		createPool(t, pool)
		waitPool(t, pool.Name, 2, 0)

		// Three claims, one after the other: the pool replaces the first spare taken (three
		// tenants), then no other.
		for i, name := range []string{"first", "second", "third"} {
			claim := claimIn(signup, name, pool.Name, nil)
			createClaim(t, claim)
			claimStatus(t, claim, tenancyv1alpha1.ReasonBound)
			waitPool(t, pool.Name, int32(2-i), int32(i+1))
		}
		g.Expect(poolTenantNames(pool.Name)).To(HaveLen(3))
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
		full := meta.FindStatusCondition(pool.Status.Conditions, tenancyv1alpha1.MaxTenantsReachedCondition)
		g.Expect(full).NotTo(BeNil())
		g.Expect(full.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(full.Message).To(ContainSubstring("created 3 tenants (3 allocated)"))
		stalled := meta.FindStatusCondition(pool.Status.Conditions, tenancyv1alpha1.StalledCondition)
		g.Expect(stalled).NotTo(BeNil(), "a pool that cannot refill is Stalled: %+v", pool.Status.Conditions)
		g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonMaxTenantsReached))

		fourth := claimIn(signup, "fourth", pool.Name, nil)
		createClaim(t, fourth)
		waiting := claimStatus(t, fourth, tenancyv1alpha1.ReasonMaxTenantsReached)
		g.Expect(waiting.Status.Message).To(ContainSubstring("spec.maxTenants (3)"))
		g.Expect(meta.IsStatusConditionTrue(waiting.Status.Conditions, tenancyv1alpha1.ReconcilingCondition)).To(BeTrue(), "a claim waiting on the cap is on its way: %+v", waiting.Status)
		g.Expect(poolTenantNames(pool.Name)).To(HaveLen(3))

		// Raised, the pool creates a spare and the claim binds.
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
		pool.Spec.MaxTenants = ptr.To[int32](4)
		g.Expect(k8s.Update(ctx, pool)).To(Succeed())
		claimStatus(t, fourth, tenancyv1alpha1.ReasonBound)
		waitPool(t, pool.Name, 0, 4)
	})
}

// installAggregatedRoles creates config/rbac's aggregated ClusterRoles, as an install does, for
// the test's life.
func installAggregatedRoles(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "aggregated_roles.yaml"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, doc := range strings.Split(string(data), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		NewWithT(t).Expect(yaml.Unmarshal([]byte(doc), role)).To(Succeed())
		NewWithT(t).Expect(k8s.Create(ctx, role)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, role) })
	}
}
