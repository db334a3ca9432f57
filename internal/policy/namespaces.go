package policy

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// NamespaceLabels is the policy over Landlord's labels on namespaces.
const NamespaceLabels = "landlord-namespace-labels"

// ClusterAdministrators is the group the namespace label policy leaves alone: its members pass
// every authorization check and may delete the policy's binding anyway, so refusing them would
// protect nothing and take away the way to repair a namespace by hand.
const ClusterAdministrators = "system:masters"

// GuardedAnnotations are the annotations Landlord writes on a tenant namespace that no one else
// may change: those the admission policies read to know what the tenant may do, which whoever
// changed could widen, and the record of the node pool the tenant's pods were placed on, which
// whoever changed could have every pod of the tenant deleted, or its pods kept on a pool the
// tenant no longer has.
var GuardedAnnotations = []string{
	tenancyv1alpha1.DomainsAnnotation, tenancyv1alpha1.IngressClassesAnnotation,
	tenancyv1alpha1.PriorityClassesAnnotation, tenancyv1alpha1.TolerationsAnnotation,
	tenancyv1alpha1.PodsPoolAnnotation,
}

// NamespaceLabelsObjects are the policy over Landlord's labels on namespaces and its binding.
// op.User is the username of the operator's requests.
func NamespaceLabelsObjects(op Operator) []client.Object {
	return []client.Object{NamespaceLabelsPolicy(op), clusterBinding(NamespaceLabels)}
}

// NamespaceLabelsPolicy lets only the operator add, change or remove Landlord's labels on a
// namespace (tenancy.landlord.dev/*, and app.kubernetes.io/managed-by=landlord), or the
// annotations of GuardedAnnotations: they say which namespaces are tenants', which node pool
// their pods run on and were placed on, which shard caches them and what a tenant may serve and
// tolerate, and a user who may edit namespaces (short of a cluster administrator) could
// otherwise make a namespace of theirs pass for a tenant's, move a tenant to another pool, have
// its pods deleted, widen what it may do, or fill the operator's cache.
func NamespaceLabelsPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return clusterPolicy(NamespaceLabels, []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"},
				Scope: ptr.To(admissionregistrationv1.ClusterScope),
			},
		},
	}}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{{
			Name: "not-the-operator-nor-a-cluster-administrator",
			Expression: `request.userInfo.username != ` + cel(op.User) + ` && ` +
				`!(` + cel(ClusterAdministrators) + ` in request.userInfo.?groups.orValue([]))`,
		}}, op.trustedCondition()...),
		Variables: []admissionregistrationv1.Variable{
			{Name: "objectLabels", Expression: `object.metadata.?labels.orValue({})`},
			{Name: "oldObjectLabels", Expression: `request.operation == 'CREATE' ? {} : oldObject.metadata.?labels.orValue({})`},
			{Name: "labels", Expression: landlordLabels("variables.objectLabels")},
			{Name: "oldLabels", Expression: landlordLabels("variables.oldObjectLabels")},
			{Name: "annotations", Expression: allowances("object")},
			{Name: "oldAnnotations", Expression: `request.operation == 'CREATE' ? [] : ` + allowances("oldObject")},
			{Name: "changed", Expression: `variables.labels.filter(l, !(l in variables.oldLabels)) + variables.oldLabels.filter(l, !(l in variables.labels)) + ` +
				`variables.annotations.filter(a, !(a in variables.oldAnnotations)) + variables.oldAnnotations.filter(a, !(a in variables.annotations))`},
		},
		Validations: []admissionregistrationv1.Validation{
			deny(`size(variables.changed) == 0`,
				"only Landlord's operator adds, changes or removes labels "+LandlordLabelPrefix+"* (and "+tenancyv1alpha1.ManagedByLabel+"="+tenancyv1alpha1.ManagedByValue+
					") and the annotations "+strings.Join(GuardedAnnotations, ", ")+" on namespaces",
				`'only Landlord\'s operator adds, changes or removes labels `+LandlordLabelPrefix+`* (and `+tenancyv1alpha1.ManagedByLabel+`=`+tenancyv1alpha1.ManagedByValue+
					`) and the annotations `+strings.Join(GuardedAnnotations, ", ")+` on namespaces, and this request changes ' + variables.changed.join(', ') + ' on namespace ' + object.metadata.name + `+
					`': Landlord sets them from Tenants; to let a namespace reach tenants\' pods, name it in network.platformNamespaceSelector'`),
		},
	})
}

// allowances lists the guarded annotations of obj as "key=value".
func allowances(obj string) string {
	return obj + `.metadata.?annotations.orValue({}).filter(k, k in ` + celList(GuardedAnnotations) + `).map(k, k + '=' + ` + obj + `.metadata.annotations[k])`
}
