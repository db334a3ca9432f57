package policy_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/shipped"
)

// The operator may get and patch its own policies and bindings by name only (the markers in
// internal/controller/admissionpolicy/controller.go): every one it builds must be named there, and no
// other admission policy of the cluster may be.
func TestTheOperatorMayChangeItsOwnPoliciesOnly(t *testing.T) {
	role, err := shipped.OperatorRole()
	if err != nil {
		t.Fatal(err)
	}
	probe := func(resource, name string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{resource}, Verbs: []string{"patch"}, ResourceNames: []string{name}}}
	}
	for _, obj := range policy.Objects(policy.Operator{User: config.DefaultIdentity}) {
		resource := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind) + "s"
		if p, ok := strings.CutSuffix(resource, "policys"); ok {
			resource = p + "policies"
		}
		t.Run("the operator may patch "+resource+" "+obj.GetName(), func(t *testing.T) {
			if ok, _ := rbacvalidation.Covers(role.Rules, probe(resource, obj.GetName())); !ok {
				t.Errorf("config/rbac/role.yaml does not name %s: add it to the resourceNames of the marker in internal/controller/admissionpolicy/controller.go", obj.GetName())
			}
		})
	}
	t.Run("the operator may not patch another admission policy", func(t *testing.T) {
		if ok, _ := rbacvalidation.Covers(role.Rules, probe("validatingadmissionpolicies", "someone-elses")); ok {
			t.Error("config/rbac/role.yaml lets the operator patch any ValidatingAdmissionPolicy")
		}
	})
}
