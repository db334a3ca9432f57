package controller_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller"
	"github.com/landlord-dev/landlord/internal/policy"
)

// Finding 5, for the admission policies: a field an administrator adds beside Landlord's (an
// objectSelector, excludeResourceRules, resourceNames, a matchCondition) leaves every field
// Landlord set in place and switches the policy off for most requests. Each is removed within
// seconds, counted, and reported as a DriftRepaired event on the policy, naming who added it.
func TestAdditiveEditsToTheAdmissionPoliciesAreReverted(t *testing.T) {
	ctx := context.Background()
	createTenant(t, newTenant("policy-drift", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.NodePool = "pool-drift"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "drift-admin"}}
	}))
	admin := impersonate(t, "drift-admin")
	waitForPolicies(t, admin, "tenant-policy-drift")
	edits := []struct {
		name      string
		kind      string
		object    client.Object
		patchType types.PatchType
		patch     string
		undone    func(g Gomega, obj client.Object)
	}{
		{
			"an objectSelector on a binding that matches no tenant object", "ValidatingAdmissionPolicyBinding",
			named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", policy.ServiceExposure),
			types.MergePatchType, `{"spec":{"matchResources":{"objectSelector":{"matchLabels":{"checked":"yes"}}}}}`,
			func(g Gomega, obj client.Object) {
				m := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources
				g.Expect(m.ObjectSelector == nil || len(m.ObjectSelector.MatchLabels)+len(m.ObjectSelector.MatchExpressions) == 0).To(BeTrue(), "objectSelector %v", m.ObjectSelector)
			},
		},
		{
			"excludeResourceRules on a policy that exclude what it checks", "ValidatingAdmissionPolicy",
			named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.IngressHosts),
			types.MergePatchType, `{"spec":{"matchConstraints":{"excludeResourceRules":[{"apiGroups":["networking.k8s.io"],"apiVersions":["v1"],"operations":["*"],"resources":["ingresses"]}]}}}`,
			func(g Gomega, obj client.Object) {
				g.Expect(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.MatchConstraints.ExcludeResourceRules).To(BeEmpty())
			},
		},
		{
			"resourceNames on a policy rule that narrow it to one name", "ValidatingAdmissionPolicy",
			named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.ServiceExposure),
			types.JSONPatchType, `[{"op":"add","path":"/spec/matchConstraints/resourceRules/0/resourceNames","value":["nothing"]}]`,
			func(g Gomega, obj client.Object) {
				for _, r := range obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.MatchConstraints.ResourceRules {
					g.Expect(r.ResourceNames).To(BeEmpty())
				}
			},
		},
		{
			"a matchCondition on the mutating policy that switches it off", "MutatingAdmissionPolicy",
			named(&admissionregistrationv1.MutatingAdmissionPolicy{}, "", policy.NodePoolPlacement),
			types.MergePatchType, `{"spec":{"matchConditions":[{"name":"never","expression":"false"}]}}`,
			func(g Gomega, obj client.Object) {
				g.Expect(obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.MatchConditions).To(BeEmpty())
			},
		},
	}
	for _, e := range edits {
		t.Run(e.name+" is removed, counted and reported", func(t *testing.T) {
			g := NewWithT(t)
			before := driftRepairs(g, e.kind)
			g.Expect(k8s.Patch(ctx, e.object, client.RawPatch(e.patchType, []byte(e.patch)), client.FieldOwner("mallory-policy"))).To(Succeed())
			g.Eventually(func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(e.object), e.object)).To(Succeed())
				e.undone(g, e.object)
				for _, f := range e.object.GetManagedFields() {
					g.Expect(f.Manager).NotTo(Equal("mallory-policy"), "the edit's manager still owns fields")
				}
			}).WithTimeout(timeout).Should(Succeed())
			g.Eventually(func() float64 { return driftRepairs(g, e.kind) }).WithTimeout(timeout).Should(BeNumerically(">", before))
			g.Eventually(func(g Gomega) {
				events := &eventsv1.EventList{}
				g.Expect(k8s.List(ctx, events)).To(Succeed())
				var notes []string
				for _, ev := range events.Items {
					if ev.Reason == controller.ReasonDriftRepaired && ev.Regarding.Name == e.object.GetName() && ev.Regarding.Kind == e.kind {
						notes = append(notes, ev.Note)
					}
				}
				g.Expect(notes).To(ContainElement(ContainSubstring("mallory-policy")))
			}).WithTimeout(timeout).Should(Succeed())
			waitForPolicies(t, admin, "tenant-policy-drift")
		})
	}
}
