package policy

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// A dedicated node pool's nodes carry the label tenancy.landlord.dev/node-pool=<pool> and the
// taint tenancy.landlord.dev/node-pool=<pool>:NoSchedule. A tenant's pods select and tolerate
// their own pool and no other, so they run on it and other tenants' pods stay off it.
const poolKey = tenancyv1alpha1.NodePoolLabel

// poolPath is the JSON Pointer of the pool key in a map: "/" in a key is written "~1".
var poolPath = strings.NewReplacer("~", "~0", "/", "~1").Replace(poolKey)

// namespacePool is the namespace's node pool, or "" when the tenant has none.
var namespacePool = admissionregistrationv1.Variable{
	Name:       "pool",
	Expression: `namespaceObject.metadata.?labels[?'` + poolKey + `'].orValue('')`,
}

// ownPool tells whether toleration t, of the pool key, names the namespace's pool and no other.
const ownPool = `t.?operator.orValue('Equal') == 'Equal' && t.?value.orValue('') == variables.pool`

// toleratesPool tells whether toleration t tolerates the pool's NoSchedule taint.
const toleratesPool = `t.?key.orValue('') == '` + poolKey + `' && ` + ownPool + ` && t.?effect.orValue('') in ['', 'NoSchedule']`

// poolToleration tolerates the pool's taint.
const poolToleration = `Object.spec.tolerations{key: '` + poolKey + `', operator: 'Equal', value: variables.pool, effect: 'NoSchedule'}`

// NodePoolPlacementPolicy puts a new pod in a namespace with a node pool on that pool: it adds
// the pool's nodeSelector and toleration, each when the pod lacks it. It never replaces what a
// pod sets itself, so a pod asking for another pool keeps its request, and NodePoolPolicy refuses it
// with a message saying why. Each patch adds only what is missing, so a reinvocation (after
// another admission plugin changed the pod) finds nothing to do.
func NodePoolPlacementPolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   mutatingTypeMeta,
		ObjectMeta: objectMeta(NodePoolPlacement),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: tenantNamespacesWithPool(),
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
							Scope: ptr.To(admissionregistrationv1.NamespacedScope),
						},
					},
				}},
			},
			Variables: []admissionregistrationv1.Variable{namespacePool},
			Mutations: []admissionregistrationv1.Mutation{
				jsonPatch(
					`!has(object.spec.nodeSelector) ?`,
					`  [JSONPatch{op: 'add', path: '/spec/nodeSelector', value: {'`+poolKey+`': variables.pool}}] :`,
					`!('`+poolKey+`' in object.spec.nodeSelector) ?`,
					`  [JSONPatch{op: 'add', path: '/spec/nodeSelector/`+poolPath+`', value: variables.pool}] :`,
					`  []`),
				jsonPatch(
					`object.spec.?tolerations.orValue([]).exists(t, `+toleratesPool+`) ?`,
					`  [] :`,
					`!has(object.spec.tolerations) ?`,
					`  [JSONPatch{op: 'add', path: '/spec/tolerations', value: [`+poolToleration+`]}] :`,
					`  [JSONPatch{op: 'add', path: '/spec/tolerations/-', value: `+poolToleration+`}]`),
			},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
}

// NodePoolPlacementBinding applies NodePoolPlacementPolicy in tenant namespaces that have a
// node pool; pods of tenants without one are placed by the scheduler as usual.
func NodePoolPlacementBinding() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return mutatingBinding(NodePoolPlacement, tenantNamespacesWithPool())
}

// mutatingBinding applies the mutating policy of that name in the namespaces selected.
func mutatingBinding(name string, namespaces *metav1.LabelSelector) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   mutatingBindingTypeMeta,
		ObjectMeta: objectMeta(name),
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
			PolicyName:     name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: namespaces},
		},
	}
}

// jsonPatch is a mutation by a CEL expression, given line by line, that returns JSON Patch
// operations.
func jsonPatch(lines ...string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{
		PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: strings.Join(lines, "\n")},
	}
}

func tenantNamespacesWithPool() *metav1.LabelSelector {
	return TenantNamespaces(metav1.LabelSelectorRequirement{Key: poolKey, Operator: metav1.LabelSelectorOpExists})
}

// NodePoolPolicy keeps a tenant's pods on its node pool, and those of a tenant without one off
// every pool. It also holds when the placement policy is missing: a pod must carry its pool's
// nodeSelector, not merely avoid another's. A pod may tolerate only its own pool's taint and
// may not tolerate every taint, so it cannot land on another pool's nodes by node affinity
// either; nor may it name its node, which would skip the scheduler's taint checks.
func NodePoolPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(NodePool, []admissionregistrationv1.NamedRuleWithOperations{rule("", []string{"v1"}, "pods")},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{specChanged},
			Variables: []admissionregistrationv1.Variable{
				namespacePool,
				{Name: "requested", Expression: `object.spec.?nodeSelector[?'` + poolKey + `'].orValue('')`},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`variables.requested == variables.pool`,
					"pods in tenant namespaces run on their tenant's node pool only",
					`variables.pool == '' ? `+
						`'pods in `+namespaceName+` run on no dedicated node pool: remove the nodeSelector `+poolKey+`=' + variables.requested : `+
						`variables.requested == '' ? `+
						`'pods in `+namespaceName+` run on node pool ' + variables.pool + ': set the nodeSelector `+poolKey+`=' + variables.pool + ' or leave it out for Landlord to set' : `+
						`'pods in `+namespaceName+` run on node pool ' + variables.pool + ', not ' + variables.requested + ': remove the nodeSelector `+poolKey+` or set it to ' + variables.pool`),
				deny(`object.spec.?tolerations.orValue([]).all(t, t.?key.orValue('') != '' && `+
					`(t.key != '`+poolKey+`' || (variables.pool != '' && `+ownPool+`)))`,
					"pods in tenant namespaces may tolerate only their own node pool's taint",
					`variables.pool == '' ? `+
						`'pods in `+namespaceName+` may not tolerate every taint nor a node pool taint (`+poolKey+`): remove those tolerations' : `+
						`'pods in `+namespaceName+` may not tolerate every taint nor another node pool: tolerate `+poolKey+`=' + variables.pool + ':NoSchedule only, or leave it out for Landlord to add'`),
				deny(`request.operation != 'CREATE' || object.spec.?nodeName.orValue('') == ''`,
					"pods in tenant namespaces are placed by the scheduler: remove spec.nodeName",
					`'pods in `+namespaceName+` are placed by the scheduler: remove spec.nodeName'`),
			},
		})
}
