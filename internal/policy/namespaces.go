package policy

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// NamespaceLabels is the policy over Landlord's labels on namespaces.
const NamespaceLabels = "landlord-namespace-labels"

// ManagedByLabel is the policy over Landlord's managed-by label outside tenant namespaces, and
// PlatformNamespaces the one over the creation of the platform's namespaces.
const (
	ManagedByLabel     = "landlord-managed-by-label"
	PlatformNamespaces = "landlord-platform-namespaces"
)

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

// OutsideTenantsObjects are the policies over what Landlord's cache and every tenant's network
// policies trust outside tenant namespaces, with their bindings: who labels objects as
// Landlord's, and who creates the platform's namespaces.
func OutsideTenantsObjects(op Operator) []client.Object {
	return []client.Object{
		ManagedByLabelPolicy(op), clusterBinding(ManagedByLabel),
		PlatformNamespacesPolicy(op), clusterBinding(PlatformNamespaces),
	}
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

// clusterAdministrator is whether the requester may create ClusterRoleBindings, and so grant
// itself anything: a cluster administrator, whatever its group.
const clusterAdministrator = `authorizer.group('rbac.authorization.k8s.io').resource('clusterrolebindings').check('create').allowed()`

// ManagedByLabelPolicy lets only the operator, Kubernetes' controllers, the platform's trusted
// tools and cluster administrators set app.kubernetes.io/managed-by=landlord on objects outside
// tenant namespaces (landlord-managed-labels holds inside them), or put it in a workload's pod
// template there. The operator's cache holds what carries that label in every namespace, and
// keeps whole what no Tenant controls: whoever may create Secrets in a namespace of their own
// could otherwise fill the operator's heap with labelled Secrets of a MiB each, and an
// out-of-memory loop would stop repair, claims and purges for the whole fleet. An object
// already carrying the label keeps it through updates; removing it is anyone's.
//
// The policy is judged on every namespaced write outside tenant namespaces, so it matches only
// once the label is being set: the match condition reads labels alone, and templates only of
// the kinds known to have one, so that no other kind's shape can make it fail.
func ManagedByLabelPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	label := `[?` + cel(tenancyv1alpha1.ManagedByLabel) + `].orValue('') == ` + cel(tenancyv1alpha1.ManagedByValue)
	workloads := `(request.resource.group == '' && request.resource.resource in ['pods', 'replicationcontrollers', 'podtemplates'] || ` +
		`request.resource.group == 'apps' && request.resource.resource in ['deployments', 'replicasets', 'statefulsets', 'daemonsets'] || ` +
		`request.resource.group == 'batch' && request.resource.resource in ['jobs', 'cronjobs'])`
	// Every label map Kubernetes' controllers copy onto what they create (templateLabels), read
	// only for the kinds whose shape is known: another kind's spec.volumes, say, may be anything.
	templated := func(obj string) string {
		return `(` + templateLabels(obj) + `).exists(m, m` + label + `)`
	}
	p := clusterPolicy(ManagedByLabel, []admissionregistrationv1.NamedRuleWithOperations{everyNamespacedWrite()}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{
			{
				Name: "sets-landlords-label",
				Expression: `object.metadata.?labels.orValue({})` + label + ` && (request.operation == 'CREATE' || !(oldObject.metadata.?labels.orValue({})` + label + `)) || ` +
					workloads + ` && ` + templated("object") + ` && (request.operation == 'CREATE' || !` + templated("oldObject") + `)`,
			},
			{
				Name: "not-the-operator-kubernetes-nor-a-cluster-administrator",
				Expression: `!(request.userInfo.username in ` + celList(append([]string{op.User}, KubernetesControllers.Users...)) + `) && ` +
					`!request.userInfo.username.startsWith(` + cel(KubernetesControllers.Prefix) + `) && ` +
					`!(` + cel(ClusterAdministrators) + ` in request.userInfo.?groups.orValue([]))`,
			},
		}, op.trustedCondition()...),
		Validations: []admissionregistrationv1.Validation{
			deny(clusterAdministrator,
				"only Landlord's operator labels objects "+tenancyv1alpha1.ManagedByLabel+"="+tenancyv1alpha1.ManagedByValue,
				`'only Landlord\'s operator labels objects `+tenancyv1alpha1.ManagedByLabel+`=`+tenancyv1alpha1.ManagedByValue+` (here ' + request.resource.resource + ' ' + request.name + ' in ' + request.namespace + `+
					`'), or puts the label in pod templates: the operator caches everything so labelled. Label your objects with another value'`),
		},
	})
	p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: tenancyv1alpha1.TenantLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
	}}
	return p
}

// PlatformNamespacesPolicy lets only a cluster administrator (one who may create
// ClusterRoleBindings), the operator and the platform's trusted tools create a namespace named
// as one of the platform's (op.Network.Namespaces, those network.platformNamespaceSelector and
// network.platformServices name): every tenant lets those in, and whoever created one that did
// not exist yet would reach every tenant's pods.
func PlatformNamespacesPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return clusterPolicy(PlatformNamespaces, []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"},
				Scope: ptr.To(admissionregistrationv1.ClusterScope),
			},
		},
	}}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{
			{Name: "a-platform-namespace", Expression: `object.metadata.name in ` + celList(op.Network.Namespaces)},
			{
				Name: "not-the-operator-nor-a-cluster-administrator",
				Expression: `request.userInfo.username != ` + cel(op.User) + ` && ` +
					`!(` + cel(ClusterAdministrators) + ` in request.userInfo.?groups.orValue([]))`,
			},
		}, op.trustedCondition()...),
		Validations: []admissionregistrationv1.Validation{
			deny(clusterAdministrator,
				"this namespace is one of the platform's, which every tenant lets in: only a cluster administrator creates it",
				`'namespace ' + object.metadata.name + ' is one of the platform\'s (network.platformNamespaceSelector of Landlord\'s configuration), which every tenant lets in: '+`+
					`'only a cluster administrator creates it. Choose another name'`),
		},
	})
}
