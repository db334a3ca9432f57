package policy_test

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/landlord-dev/landlord/internal/policy"
)

// The namespace label policy judges creates and updates of namespaces, nothing else, and
// exempts the operator and cluster administrators alone.
func TestTheNamespaceLabelPolicyExemptsTheOperatorAndClusterAdministratorsAlone(t *testing.T) {
	objs := policy.NamespaceLabelsObjects(policy.Operator{User: "system:serviceaccount:ops:landlord"})
	if len(objs) != 2 {
		t.Fatalf("%d objects, want a policy and its binding", len(objs))
	}
	p, ok := objs[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok {
		t.Fatalf("first object is %T", objs[0])
	}
	t.Run("it fails closed", func(t *testing.T) {
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
			t.Error("the policy does not fail closed")
		}
	})
	t.Run("it exempts the operator and system:masters", func(t *testing.T) {
		want := `request.userInfo.username != 'system:serviceaccount:ops:landlord' && !('system:masters' in request.userInfo.?groups.orValue([]))`
		if len(p.Spec.MatchConditions) != 1 || p.Spec.MatchConditions[0].Expression != want {
			t.Errorf("match conditions = %v, want %s", p.Spec.MatchConditions, want)
		}
	})
	t.Run("it judges creates and updates of namespaces only", func(t *testing.T) {
		rules := p.Spec.MatchConstraints.ResourceRules
		if len(rules) != 1 || len(rules[0].Resources) != 1 || rules[0].Resources[0] != "namespaces" || len(rules[0].APIGroups) != 1 || rules[0].APIGroups[0] != "" ||
			len(rules[0].Operations) != 2 || rules[0].Operations[0] != admissionregistrationv1.Create || rules[0].Operations[1] != admissionregistrationv1.Update {
			t.Errorf("rules = %+v", rules)
		}
	})
	t.Run("its binding denies", func(t *testing.T) {
		b, ok := objs[1].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		if !ok || b.Spec.PolicyName != p.Name || len(b.Spec.ValidationActions) != 1 || b.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
			t.Errorf("binding = %+v", objs[1])
		}
	})
}
