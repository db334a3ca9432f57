// Package policy builds Landlord's admission policies: MutatingAdmissionPolicies and
// ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, Kubernetes 1.36 and later) with
// their bindings. The API server evaluates them itself, in CEL, so isolation does not depend on a
// webhook server being up.
//
// Every policy over tenants reads what a tenant may do from its namespace (the node-pool label,
// the domains and Ingress classes annotations Landlord writes there), never from the Tenant, and
// every binding of those selects tenant namespaces only: the policies fail closed for tenants and
// never touch the rest of the cluster. The protection policies guard Landlord's own
// cluster-scoped objects, the confinement policy the operator's own requests, and the finalizer
// policy saves the operator a write per new Tenant. The builders are pure; the operator applies
// their output at start-up and keeps it converged, and config/policies ships the same objects as
// YAML.
package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Policy names. Each binding has its policy's name.
const (
	NodePoolPlacement  = "landlord-node-pool-placement"
	NodePool           = "landlord-node-pool"
	CostCode           = "landlord-cost-code"
	ServiceExposure    = "landlord-service-exposure"
	IngressHosts       = "landlord-ingress-hosts"
	RouteHostnames     = "landlord-route-hostnames"
	IngressClasses     = "landlord-ingress-classes"
	IngressAnnotations = "landlord-ingress-annotations"
	ManagedLabels      = "landlord-managed-labels"
	OperatorNamespaces = "landlord-operator-namespaces"
)

// Objects returns every policy and binding, each policy before its bindings: a binding whose
// policy does not exist yet is ignored by the API server, so this order never leaves a gap.
// op is the operator: the user the label policies exempt, and the namespaces its writes are
// confined to.
func Objects(op Operator) []client.Object {
	objs := TenantNamespaceObjects(op)
	objs = append(objs, ProtectionObjects(op)...)
	objs = append(objs, ConfinementObjects(op)...)
	objs = append(objs, NetworkPolicyObjects(op)...)
	objs = append(objs, NamespaceLabelsObjects(op)...)
	objs = append(objs, OutsideTenantsObjects(op)...)
	objs = append(objs, TenantClassObjects()...)
	return append(objs, TenantFinalizerObjects()...)
}

// TenantNamespaceObjects are the policies over what is created in tenant namespaces, with their
// bindings. op.User is the username of the operator's requests, the one user (with op.Trusted)
// that may set Landlord's labels there.
func TenantNamespaceObjects(op Operator) []client.Object {
	return []client.Object{
		NodePoolPlacementPolicy(), NodePoolPlacementBinding(),
		NodePoolPolicy(), validatingBinding(NodePool),
		CostCodePolicy(), CostCodeBinding(),
		ServiceExposurePolicy(), validatingBinding(ServiceExposure),
		IngressHostsPolicy(), validatingBinding(IngressHosts),
		IngressClassesPolicy(), validatingBinding(IngressClasses),
		IngressAnnotationsPolicy(), validatingBinding(IngressAnnotations),
		RouteHostnamesPolicy(), validatingBinding(RouteHostnames),
		ManagedLabelsPolicy(op), validatingBinding(ManagedLabels),
		ComponentObjectsPolicy(op), validatingBinding(ComponentObjects),
		ManagedSecretsPolicy(op), validatingBinding(ManagedSecrets),
		PodSchedulingPolicy(op.maxGraceSeconds()), validatingBinding(PodScheduling),
		DisruptionBudgetsPolicy(), validatingBinding(DisruptionBudgets),
		PodFinalizersPolicy(op.maxGraceSeconds()), validatingBinding(PodFinalizers),
		ControllerLabelsPolicy(op), validatingBinding(ControllerLabels),
		ComponentScalePolicy(op), validatingBinding(ComponentScale),
		ServingFinalizersPolicy(op), validatingBinding(ServingFinalizers),
	}
}

// TenantNamespaces selects the namespaces of tenants: Landlord's, carrying a tenant's name. The
// template namespace is Landlord's too but names no tenant, so it stays out of scope.
func TenantNamespaces(more ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{
		MatchLabels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue},
		MatchExpressions: append([]metav1.LabelSelectorRequirement{
			{Key: tenancyv1alpha1.TenantLabel, Operator: metav1.LabelSelectorOpExists},
		}, more...),
	}
}

// objectMeta is every policy's and binding's: kept by `helm uninstall` and never pruned by Flux,
// since every tenant's isolation rests on them, and what a tenant creates while they are gone
// stays after they are back.
func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue},
		Annotations: map[string]string{
			tenancyv1alpha1.HelmResourcePolicyAnnotation: "keep",
			tenancyv1alpha1.FluxPruneAnnotation:          "disabled",
		},
	}
}

var (
	validatingTypeMeta        = metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"}
	validatingBindingTypeMeta = metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"}
	mutatingTypeMeta          = metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"}
	mutatingBindingTypeMeta   = metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"}
)

// validatingPolicy is a policy over the given resources in tenant namespaces that fails closed.
// A request the policy cannot evaluate is refused rather than let through: these policies are
// the isolation boundary.
func validatingPolicy(name string, rules []admissionregistrationv1.NamedRuleWithOperations, spec admissionregistrationv1.ValidatingAdmissionPolicySpec) *admissionregistrationv1.ValidatingAdmissionPolicy {
	spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	spec.MatchConstraints = &admissionregistrationv1.MatchResources{
		NamespaceSelector: TenantNamespaces(),
		ResourceRules:     rules,
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   validatingTypeMeta,
		ObjectMeta: objectMeta(name),
		Spec:       spec,
	}
}

// validatingBinding denies what the named policy refuses, in tenant namespaces. The policy's
// own match constraints scope it the same way, so neither object alone can reach further.
func validatingBinding(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := clusterBinding(name)
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: TenantNamespaces()}
	return b
}

// rule matches creates and updates of resources in one API group.
func rule(group string, versions []string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{group},
				APIVersions: versions,
				Resources:   resources,
				Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
			},
		},
	}
}

// specChanged lets updates that leave the spec alone through unchecked: labels, annotations
// and finalizers must stay editable on objects admitted before a namespace's allowances
// changed, or they could never be deleted.
var specChanged = admissionregistrationv1.MatchCondition{
	Name:       "spec-changed",
	Expression: `request.operation == 'CREATE' || object.spec != oldObject.spec`,
}

// namespaceName splices the namespace's name into a single-quoted string of a message
// expression.
const namespaceName = `' + namespaceObject.metadata.name + '`

// deny is a validation that refuses with 403 Forbidden (the request is understood, and not
// allowed) and a message saying what to do instead.
func deny(expression, message, messageExpression string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{
		Expression:        expression,
		Message:           message,
		MessageExpression: messageExpression,
		Reason:            ptr.To(metav1.StatusReasonForbidden),
	}
}
