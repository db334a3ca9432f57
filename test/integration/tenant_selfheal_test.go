package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Whatever happens to an object Landlord manages, the tenant's desired state comes back: the
// change is an event on a watched object, mapped to its tenant by the owner reference.
func TestManagedObjectsHealThemselves(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("healing", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "alice"}}
	}))
	const ns = "tenant-healing"

	cases := map[string]struct {
		damage func(g Gomega)
		healed func(g Gomega)
	}{
		"a deleted role binding is recreated": {
			damage: func(g Gomega) {
				g.Expect(k8s.Delete(ctx, named(&rbacv1.RoleBinding{}, ns, resources.AdminRole))).To(Succeed())
			},
			healed: func(g Gomega) {
				rb := &rbacv1.RoleBinding{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.AdminRole}, rb)).To(Succeed())
				g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "landlord-tenant-admin"}))
				g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}))
			},
		},
		"an edited quota is restored": {
			damage: func(g Gomega) {
				quota := &corev1.ResourceQuota{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
				quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5000")
				quota.Spec.Hard[corev1.ResourceServicesNodePorts] = resource.MustParse("10")
				g.Expect(k8s.Update(ctx, quota)).To(Succeed())
			},
			healed: func(g Gomega) {
				quota := &corev1.ResourceQuota{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
				g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourcePods, resource.MustParse("50")))
				g.Expect(quota.Spec.Hard).To(HaveKeyWithValue(corev1.ResourceServicesNodePorts, resource.MustParse("0")))
			},
		},
		"a relaxed pod security label is restored": {
			damage: func(g Gomega) {
				patchNamespaceLabel(g, ns, "pod-security.kubernetes.io/enforce", "privileged")
			},
			healed: func(g Gomega) {
				g.Expect(getNamespace(g, ns).Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
			},
		},
		"a namespace stripped of the managed-by label is taken back": {
			damage: func(g Gomega) {
				patchNamespaceLabel(g, ns, tenancyv1alpha1.ManagedByLabel, "")
			},
			healed: func(g Gomega) {
				g.Expect(getNamespace(g, ns).Labels).To(HaveKeyWithValue(tenancyv1alpha1.ManagedByLabel, "landlord"))
			},
		},
		"a deleted default-deny network policy is recreated": {
			damage: func(g Gomega) {
				g.Expect(k8s.Delete(ctx, named(&networkingv1.NetworkPolicy{}, ns, resources.DefaultDenyPolicy))).To(Succeed())
			},
			healed: func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.DefaultDenyPolicy}, &networkingv1.NetworkPolicy{})).To(Succeed())
			},
		},
		"a subject added to a binding is removed": {
			damage: func(g Gomega) {
				rb := &rbacv1.RoleBinding{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.AdminRole}, rb)).To(Succeed())
				rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "mallory"})
				g.Expect(k8s.Update(ctx, rb)).To(Succeed())
			},
			healed: func(g Gomega) {
				rb := &rbacv1.RoleBinding{}
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.AdminRole}, rb)).To(Succeed())
				g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}}))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tc.damage(g)
			g.Eventually(tc.healed).WithTimeout(timeout).Should(Succeed())
		})
	}

	// Repairs with the same reason form one event series, so only that a repair was recorded is
	// checked, not which one.
	t.Run("repairs are recorded as events on the tenant", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(k8s.List(ctx, list)).To(Succeed())
			var notes []string
			for _, e := range list.Items {
				if e.Regarding.Kind == "Tenant" && e.Regarding.Name == "healing" && e.Reason == "Applied" {
					notes = append(notes, e.Note)
				}
			}
			g.Expect(notes).To(ContainElement(MatchRegexp(`^updated \w+/tenant-healing\b`)))
		}).WithTimeout(timeout).Should(Succeed())
	})
}

func named[T client.Object](obj T, namespace, name string) T {
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

func getNamespace(g Gomega, name string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, ns)).To(Succeed())
	return ns
}

// patchNamespaceLabel sets a namespace label, or removes it when value is empty.
func patchNamespaceLabel(g Gomega, namespace, key, value string) {
	ns := getNamespace(g, namespace)
	patch := client.MergeFrom(ns.DeepCopy())
	if value == "" {
		delete(ns.Labels, key)
	} else {
		ns.Labels[key] = value
	}
	g.Expect(k8s.Patch(context.Background(), ns, patch)).To(Succeed())
}
