package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// A field an administrator adds to an admission policy beside Landlord's (an objectSelector,
// excludeResourceRules, resourceNames, a matchCondition) leaves every field Landlord set in
// place and switches the policy off for most requests, so comparing only Landlord's fields
// would miss it. Each is removed within seconds, counted, and reported as a DriftRepaired event
// on the policy, naming who added it.
func TestAdditiveEditsToTheAdmissionPoliciesAreReverted(t *testing.T) {
	createTenant(t, newTenant("policy-drift", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.NodePool = "pool-drift"
		t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "User", Name: "drift-admin"}}
	}))
	admin := impersonate(t, "drift-admin")
	waitForPolicies(t, admin, "tenant-policy-drift")
	edits := []additiveEdit{
		{
			name: "an objectSelector on a binding that matches no tenant object", kind: "ValidatingAdmissionPolicyBinding",
			object: named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", policy.ServiceExposure),
			patch:  `{"spec":{"matchResources":{"objectSelector":{"matchLabels":{"checked":"yes"}}}}}`,
			undone: func(g Gomega, obj client.Object) {
				m := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.MatchResources
				g.Expect(m.ObjectSelector == nil || len(m.ObjectSelector.MatchLabels)+len(m.ObjectSelector.MatchExpressions) == 0).To(BeTrue(), "objectSelector %v", m.ObjectSelector)
			},
		},
		{
			name: "excludeResourceRules on a policy that exclude what it checks", kind: "ValidatingAdmissionPolicy",
			object: named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.IngressHosts),
			patch:  `{"spec":{"matchConstraints":{"excludeResourceRules":[{"apiGroups":["networking.k8s.io"],"apiVersions":["v1"],"operations":["*"],"resources":["ingresses"]}]}}}`,
			undone: func(g Gomega, obj client.Object) {
				g.Expect(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.MatchConstraints.ExcludeResourceRules).To(BeEmpty())
			},
		},
		{
			name: "resourceNames on a policy rule that narrow it to one name", kind: "ValidatingAdmissionPolicy",
			object: named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.ServiceExposure),
			patch:  `[{"op":"add","path":"/spec/matchConstraints/resourceRules/0/resourceNames","value":["nothing"]}]`,
			undone: func(g Gomega, obj client.Object) {
				for _, r := range obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.MatchConstraints.ResourceRules {
					g.Expect(r.ResourceNames).To(BeEmpty())
				}
			},
		},
		{
			name: "a matchCondition on the mutating policy that switches it off", kind: "MutatingAdmissionPolicy",
			object: named(&admissionregistrationv1.MutatingAdmissionPolicy{}, "", policy.NodePoolPlacement),
			patch:  `{"spec":{"matchConditions":[{"name":"never","expression":"false"}]}}`,
			undone: func(g Gomega, obj client.Object) {
				g.Expect(obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.MatchConditions).To(BeEmpty())
			},
		},
	}
	for _, e := range edits {
		t.Run(e.name+" is removed, counted and reported", func(t *testing.T) {
			expectRepaired(t, e, "mallory-policy", e.kind, e.object.GetName())
			waitForPolicies(t, admin, "tenant-policy-drift")
		})
	}
}

// The operator learns who added to a policy from the managed fields its cache sees once, as an
// informer hands the object over; an informer hands its first list over twice. A field added
// while the operator was down is still found when it starts, and removed and counted like one
// added while it runs; so is a policy whose managed fields were stripped, which hides who added
// what.
func TestAPolicyEditedWhileTheOperatorWasDownIsRepairedWhenItStarts(t *testing.T) {
	ctx := context.Background()
	edits := []struct {
		name    string
		binding string
		patch   string
	}{
		{"an objectSelector added to a binding", policy.ServiceExposure, `{"spec":{"matchResources":{"objectSelector":{"matchLabels":{"checked":"yes"}}}}}`},
		{"an objectSelector added and the managed fields stripped", policy.IngressHosts, `{"metadata":{"managedFields":[{}]},"spec":{"matchResources":{"objectSelector":{"matchLabels":{"checked":"yes"}}}}}`},
	}
	g := NewWithT(t)
	waitIdle(t)
	before := driftRepairs(g, "ValidatingAdmissionPolicyBinding")
	// One stop for both: each start the operator makes after putting a policy back audits twice,
	// seconds apart.
	stopOperator(t)
	for _, e := range edits {
		binding := named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", e.binding)
		g.Expect(k8s.Patch(ctx, binding, client.RawPatch(types.MergePatchType, []byte(e.patch)), client.FieldOwner("mallory-offline"))).To(Succeed())
		g.Expect(binding.Spec.MatchResources.ObjectSelector.MatchLabels).To(HaveKey("checked"), "%s did not land", e.name)
	}
	startSuiteOperator(t)
	for _, e := range edits {
		t.Run(e.name+" is removed", func(t *testing.T) {
			binding := named(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, "", e.binding)
			NewWithT(t).Eventually(func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(binding), binding)).To(Succeed())
				s := binding.Spec.MatchResources.ObjectSelector
				g.Expect(s == nil || len(s.MatchLabels)+len(s.MatchExpressions) == 0).To(BeTrue(), "objectSelector %v", s)
			}).WithTimeout(timeout).Should(Succeed())
		})
	}
	t.Run("each repair is counted", func(t *testing.T) {
		// Counted once the repair's apply is done, a moment after the edit is gone.
		NewWithT(t).Eventually(func(g Gomega) float64 { return driftRepairs(g, "ValidatingAdmissionPolicyBinding") }).
			WithTimeout(timeout).Should(Equal(before + float64(len(edits))))
	})
}
