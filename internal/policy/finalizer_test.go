package policy_test

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// The finalizer policy reaches Tenant creates and nothing else, and fails open: it saves the
// operator a write, and the operator adds the finalizer itself to a tenant that lacks it, so a
// Tenant must never be refused because the policy could not be evaluated.
func TestTheFinalizerPolicyReachesTenantCreatesOnly(t *testing.T) {
	objs := policy.TenantFinalizerObjects()
	if len(objs) != 2 {
		t.Fatalf("%d objects, want a policy and its binding", len(objs))
	}
	p, ok := objs[0].(*admissionregistrationv1.MutatingAdmissionPolicy)
	if !ok {
		t.Fatalf("first object is %T", objs[0])
	}
	b, ok := objs[1].(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	if !ok {
		t.Fatalf("second object is %T", objs[1])
	}
	checks := []struct {
		name string
		ok   func() bool
	}{
		{"both are Landlord's, named " + policy.TenantFinalizer, func() bool {
			for _, obj := range objs {
				if obj.GetName() != policy.TenantFinalizer || obj.GetLabels()[tenancyv1alpha1.ManagedByLabel] != tenancyv1alpha1.ManagedByValue {
					return false
				}
			}
			return true
		}},
		{"the policy matches creates of cluster-scoped Tenants alone", func() bool {
			rules := p.Spec.MatchConstraints.ResourceRules
			if len(rules) != 1 || len(p.Spec.MatchConstraints.ExcludeResourceRules) != 0 {
				return false
			}
			r := rules[0]
			return len(r.Operations) == 1 && r.Operations[0] == admissionregistrationv1.Create &&
				len(r.APIGroups) == 1 && r.APIGroups[0] == tenancyv1alpha1.GroupVersion.Group &&
				len(r.Resources) == 1 && r.Resources[0] == "tenants" &&
				r.Scope != nil && *r.Scope == admissionregistrationv1.ClusterScope
		}},
		{"the policy fails open", func() bool {
			return p.Spec.FailurePolicy != nil && *p.Spec.FailurePolicy == admissionregistrationv1.Ignore
		}},
		{"the policy changes only the finalizers, with one JSON patch that names Landlord's", func() bool {
			if len(p.Spec.Mutations) != 1 || p.Spec.Mutations[0].JSONPatch == nil {
				return false
			}
			expr := p.Spec.Mutations[0].JSONPatch.Expression
			return strings.Contains(expr, "'"+tenancyv1alpha1.Finalizer+"'") &&
				strings.Count(expr, "path: ") == strings.Count(expr, "path: '/metadata/finalizers")
		}},
		{"the policy is reinvoked when another plugin changes the Tenant", func() bool {
			return p.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
		}},
		{"the binding binds the policy and narrows nothing", func() bool {
			return b.Spec.PolicyName == p.Name && b.Spec.MatchResources == nil && b.Spec.ParamRef == nil
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok() {
				t.Errorf("policy %+v, binding %+v", p.Spec, b.Spec)
			}
		})
	}
}
