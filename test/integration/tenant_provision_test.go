package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
)

func TestTenantProvisioning(t *testing.T) {
	ctx := context.Background()
	tenant := createTenant(t, newTenant("acme", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "Group", Name: "oidc:acme.admins"}}
		t.Spec.Access.Viewers = []tenancyv1alpha1.Subject{{Kind: "ServiceAccount", Name: "ci", Namespace: "ci"}}
		t.Spec.Quota = corev1.ResourceList{"cpu": resource.MustParse("2"), "pods": resource.MustParse("10")}
		t.Spec.NodePool = "pool-a"
		t.Spec.Domains = []tenancyv1alpha1.Domain{"acme.example.com", "*.acme.example.com"}
	}))
	nsName := "tenant-acme"

	t.Run("status names the namespace and reports every condition", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant.Status.Namespace).To(Equal(nsName))
		g.Expect(tenant.Status.ObservedGeneration).To(Equal(tenant.Generation))
		g.Expect(condition(tenant, tenancyv1alpha1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(tenant, tenancyv1alpha1.NamespaceReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(tenant, tenancyv1alpha1.ReconcilingCondition)).To(BeNil())
		g.Expect(condition(tenant, tenancyv1alpha1.StalledCondition)).To(BeNil())
		g.Expect(tenant.Finalizers).To(ContainElement(tenancyv1alpha1.Finalizer))
	})

	t.Run("the namespace carries managed, pod security and node pool labels", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespace(t, "acme")
		g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ManagedByLabel, "landlord"))
		g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.TenantLabel, "acme"))
		g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		g.Expect(ns.Labels).To(HaveKeyWithValue(tenancyv1alpha1.NodePoolLabel, "pool-a"))
		g.Expect(ns.Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "acme.example.com,*.acme.example.com"))
		g.Expect(metav1.IsControlledBy(ns, tenant)).To(BeTrue())
	})

	t.Run("the three tenant roles are bound to the subjects in spec.access", func(t *testing.T) {
		g := NewWithT(t)
		for _, name := range []string{resources.AdminRole, resources.OperatorRole, resources.ViewerRole} {
			rb := &rbacv1.RoleBinding{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: nsName, Name: name}, rb)).To(Succeed())
			g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: resources.ClusterRoleName(name)}))
		}
		g.Expect(k8s.List(ctx, &rbacv1.RoleList{}, client.InNamespace(nsName))).To(Succeed())
		roles := &rbacv1.RoleList{}
		g.Expect(k8s.List(ctx, roles, client.InNamespace(nsName))).To(Succeed())
		g.Expect(roles.Items).To(BeEmpty(), "the tenant roles are shared ClusterRoles, not Roles in each namespace")
		admins := &rbacv1.RoleBinding{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: nsName, Name: resources.AdminRole}, admins)).To(Succeed())
		g.Expect(admins.Subjects).To(Equal([]rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "oidc:acme.admins"}}))
		viewers := &rbacv1.RoleBinding{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: nsName, Name: resources.ViewerRole}, viewers)).To(Succeed())
		g.Expect(viewers.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "ci", Namespace: "ci"}}))
	})

	t.Run("the quota merges the tenant's values over the defaults and forbids node ports", func(t *testing.T) {
		g := NewWithT(t)
		quota := &corev1.ResourceQuota{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: nsName, Name: resources.QuotaName}, quota)).To(Succeed())
		g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourceRequestsCPU, resource.MustParse("2")))
		g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourcePods, resource.MustParse("10")))
		g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourceRequestsMemory, resource.MustParse("8Gi")))
		g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourceServicesNodePorts, resource.MustParse("0")))
		g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourceServicesLoadBalancers, resource.MustParse("0")))
		g.Expect(quota.Spec.Hard).NotTo(HaveKey(corev1.ResourceCPU))
	})

	t.Run("the limit range gives containers default requests and limits", func(t *testing.T) {
		g := NewWithT(t)
		lr := &corev1.LimitRange{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: nsName, Name: resources.LimitRangeName}, lr)).To(Succeed())
		g.Expect(lr.Spec.Limits).To(HaveLen(1))
		g.Expect(lr.Spec.Limits[0].DefaultRequest).To(HaveKeyWithValue(corev1.ResourceCPU, resource.MustParse("100m")))
	})

	t.Run("network policies deny by default and open only the configured paths", func(t *testing.T) {
		g := NewWithT(t)
		list := &networkingv1.NetworkPolicyList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(nsName))).To(Succeed())
		names := []string{}
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		g.Expect(names).To(ConsistOf(resources.DefaultDenyPolicy, resources.SameNamespacePolicy,
			resources.PlatformPolicy, resources.PlatformEgressPolicy, resources.DNSPolicy, resources.EgressCIDRsPolicy,
			resources.DatabaseEgressPolicy))
	})
}

func TestTenantSpecChangesReachTheNamespace(t *testing.T) {
	ctx := context.Background()
	tenant := createTenant(t, newTenant("spec-change", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Domains = []tenancyv1alpha1.Domain{"spec-change.example.com"}
		t.Spec.NodePool = "pool-a"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "alice"}}
	}))

	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.Domains = nil
	tenant.Spec.NodePool = ""
	tenant.Spec.Access.Admins = nil
	tenant.Spec.PodSecurity = tenancyv1alpha1.PodSecurityBaseline
	NewWithT(t).Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
	waitReady(t, tenant.Name)

	t.Run("removed fields disappear from the namespace", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespace(t, tenant.Name)
		g.Expect(ns.Annotations).NotTo(HaveKey(tenancyv1alpha1.DomainsAnnotation))
		g.Expect(ns.Labels).NotTo(HaveKey(tenancyv1alpha1.NodePoolLabel))
		g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "baseline"))
	})
	t.Run("a binding whose subjects were all removed stays, empty", func(t *testing.T) {
		g := NewWithT(t)
		rb := &rbacv1.RoleBinding{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "tenant-spec-change", Name: resources.AdminRole}, rb)).To(Succeed())
		g.Expect(rb.Subjects).To(BeEmpty())
	})
}
