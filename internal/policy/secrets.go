package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// ManagedSecrets is the policy that keeps the Secrets Landlord writes into a tenant namespace
// (copies of shared secrets, databases' credentials) the platform's.
const ManagedSecrets = "landlord-managed-secrets"

// ManagedSecretsPolicy refuses tenant users any change to, or deletion of, the Secrets Landlord
// writes into the tenant's namespace, as ManagedNetworkPoliciesPolicy does for its
// NetworkPolicies: a tenant admin writes Secrets of its own, and RBAC cannot tell them from
// Landlord's. Landlord puts back what is changed in them, but not what it does not set: a
// tenant that took a copy's controller reference off, or added a finalizer of its own, would
// keep a secret no longer shared with it.
func ManagedSecretsPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := managedObjectsPolicy(op, ManagedSecrets, []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		},
	}},
		"Landlord writes this Secret for the tenant (a copy of a shared secret, or a database's credentials): only the platform changes or deletes it",
		`'Secret ' + oldObject.metadata.name + ' is Landlord\'s, written for `+namespaceName+` (a copy of a shared secret, or a database\'s credentials): only the platform changes or deletes it. `+
			`Keep what is yours in a Secret of your own'`)
	// A component's Secrets are ComponentObjectsPolicy's, whose refusal names the component.
	p.Spec.MatchConstraints.ObjectSelector.MatchExpressions = append(p.Spec.MatchConstraints.ObjectSelector.MatchExpressions,
		metav1.LabelSelectorRequirement{Key: tenancyv1alpha1.ComponentLabel, Operator: metav1.LabelSelectorOpDoesNotExist})
	return p
}
