package policy

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// costCodeKey labels a tenant's namespace (from spec.costCode) and every pod in it, so that cloud
// cost tools, which attribute node and volume spend to pods by label, attribute it to the tenant.
const costCodeKey = tenancyv1alpha1.CostCodeLabel

// costCodePath is the JSON Pointer of the cost code in a pod's labels: "/" in a key is "~1".
var costCodePath = "/metadata/labels/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(costCodeKey)

// namespaceCostCode is the namespace's cost code, "" for none.
var namespaceCostCode = admissionregistrationv1.Variable{
	Name:       "costCode",
	Expression: `namespaceObject.metadata.?labels[?'` + costCodeKey + `'].orValue('')`,
}

// CostCodePolicy labels every pod created or updated in a tenant namespace that has a cost code
// with that code, replacing whatever value the pod asks for: a tenant could otherwise have its
// spend attributed to another cost code. Pods already running when the code changes keep the
// old one until they are updated or replaced. A pod that already carries the namespace's value
// is left as it is, so a reinvocation finds nothing to do. ManagedLabelsPolicy lets the label
// through with the namespace's value (dropping an older one), and refuses it in templates.
func CostCodePolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   mutatingTypeMeta,
		ObjectMeta: objectMeta(CostCode),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: tenantNamespacesWithCostCode(),
				ResourceRules:     []admissionregistrationv1.NamedRuleWithOperations{rule("", []string{"v1"}, "pods")},
			},
			Variables: []admissionregistrationv1.Variable{namespaceCostCode},
			Mutations: []admissionregistrationv1.Mutation{
				jsonPatch(
					`object.metadata.?labels[?'`+costCodeKey+`'].orValue('') == variables.costCode ?`,
					`  [] :`,
					`!has(object.metadata.labels) ?`,
					`  [JSONPatch{op: 'add', path: '/metadata/labels', value: {'`+costCodeKey+`': variables.costCode}}] :`,
					`  [JSONPatch{op: 'add', path: '`+costCodePath+`', value: variables.costCode}]`),
			},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
}

// CostCodeBinding applies CostCodePolicy in tenant namespaces that have a cost code.
func CostCodeBinding() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return mutatingBinding(CostCode, tenantNamespacesWithCostCode())
}

func tenantNamespacesWithCostCode() *metav1.LabelSelector {
	return TenantNamespaces(metav1.LabelSelectorRequirement{Key: costCodeKey, Operator: metav1.LabelSelectorOpExists})
}
