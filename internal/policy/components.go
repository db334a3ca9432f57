package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// ComponentObjects is the policy that keeps the objects Landlord renders for a tenant's
// components the platform's.
const ComponentObjects = "landlord-component-objects"

// ComponentObjectsPolicy refuses tenant users any change to, or deletion of, the objects Landlord
// renders for the tenant's components (labelled with the component and controlled by the
// Tenant), as RBAC refuses them the quota and the role bindings. RBAC cannot: a tenant admin
// edits Deployments, and Landlord's are Deployments like the tenant's own. A tenant that could
// change them could mark its own workload healthy or failed and so decide its rollout wave, or
// run its own pod template under Landlord's name.
//
// Who may: whoever may patch the tenant namespace's ResourceQuota (the platform's
// administrators, never a tenant role), asked of the API server's own authorizer; the operator;
// and Kubernetes' controllers (garbage collector, namespace deletion), which remove what the
// tenant's deletion leaves. Subresources stay out of scope: the workloads' status, and the scale
// subresource an autoscaler uses. The objects the workloads make (ReplicaSets, pods) carry no
// owner reference to the Tenant, so a tenant admin still restarts a pod by deleting it; but not
// a pod of a migration Job (labelled tenancy.landlord.dev/migration, a label only Landlord sets).
func ComponentObjectsPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := validatingPolicy(ComponentObjects, []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		},
	}}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{
			{
				Name: "rendered-by-landlord",
				// Or a pod of a migration Job's: a tenant that deleted it would fail its own
				// migration, and a rollout would count that against the version.
				Expression: `oldObject.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'Tenant' && o.apiVersion.startsWith(` +
					cel(tenancyv1alpha1.GroupVersion.Group+"/") + `) && o.?controller.orValue(false)) || ` +
					`(oldObject.kind == 'Pod' && oldObject.metadata.?labels[` + cel(tenancyv1alpha1.MigrationLabel) + `].hasValue())`,
			},
			{
				Name: "not-the-operator-or-kubernetes",
				Expression: `!(request.userInfo.username in ` + celList([]string{op.User, "system:kube-controller-manager"}) +
					`) && !request.userInfo.username.startsWith('system:serviceaccount:kube-system:')`,
			},
		}, op.trustedCondition()...),
		Validations: []admissionregistrationv1.Validation{
			deny(`authorizer.group('').resource('resourcequotas').namespace(namespaceObject.metadata.name).check('patch').allowed()`,
				"Landlord renders this object for one of the tenant's components: only the platform changes or deletes it",
				`oldObject.kind + ' ' + oldObject.metadata.name + ' is rendered by Landlord for component ' + `+
					`oldObject.metadata.labels[`+cel(tenancyv1alpha1.ComponentLabel)+`] + ' of tenant `+namespaceName+`: it is the platform\'s, as the quota and role bindings are. `+
					`Ask for a new version or values of the component; restart its pods by deleting them'`),
		},
	})
	p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: tenancyv1alpha1.ComponentLabel, Operator: metav1.LabelSelectorOpExists},
	}}
	return p
}
