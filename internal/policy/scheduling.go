package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Names of the policies over how tenants' pods are scheduled and evicted.
const (
	PodScheduling     = "landlord-pod-scheduling"
	DisruptionBudgets = "landlord-disruption-budgets"
)

// NodeConditionTaints are the taints Kubernetes puts on a node for its condition, which it
// tolerates itself on the pods it admits (not-ready and unreachable, for five minutes, on every
// pod) or creates (the rest, on a DaemonSet's). They say how a node is, not whose it is, so a
// tenant's pods may tolerate them.
var NodeConditionTaints = []string{
	"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
	"node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure",
	"node.kubernetes.io/network-unavailable",
}

// annotationList is a variable holding the comma-separated list of a tenant namespace's
// annotation; none is an empty list.
func annotationList(name, annotation string) admissionregistrationv1.Variable {
	return admissionregistrationv1.Variable{
		Name:       name,
		Expression: `namespaceObject.metadata.?annotations[?` + cel(annotation) + `].orValue('').split(',').filter(s, s != '')`,
	}
}

// tolerationAsTaint writes toleration t as kubectl writes a taint, the way isolation.tolerations
// lists them: "key" for operator Exists, "key=value" for Equal, then ":Effect" when it tolerates
// one effect only.
const tolerationAsTaint = `t.?key.orValue('') + ` +
	`(t.?operator.orValue('Equal') == 'Equal' ? '=' + t.?value.orValue('') : '') + ` +
	`(t.?effect.orValue('') != '' ? ':' + t.?effect.orValue('') : '')`

// podSpec is the pod spec of obj: a pod's own, or the template's of a workload that creates
// pods (a CronJob's job template's).
func podSpec(obj string) string {
	return obj + `.spec.?jobTemplate.?spec.?template.?spec.orValue(` + obj + `.spec.?template.?spec.orValue(` + obj + `.spec))`
}

// podSpecChanged lets updates that leave the pod spec alone through unchecked: a workload admitted
// before the configuration's lists shrank must still scale (to zero, when its tenant is
// Frozen), be relabelled and be deleted.
var podSpecChanged = admissionregistrationv1.MatchCondition{
	Name:       "pod-spec-changed",
	Expression: `request.operation == 'CREATE' || ` + podSpec("object") + ` != ` + podSpec("oldObject"),
}

// PodSchedulingPolicy keeps a tenant's pods from taking what the scheduler would take from other
// tenants. A pod may name only a PriorityClass the configuration lists
// (isolation.priorityClasses, written on the namespace): a system class would let it preempt
// other tenants' pods and be the last evicted. It may tolerate only its node pool's taint (which
// NodePoolPolicy judges), Kubernetes' node conditions and the taints the configuration lists
// (isolation.tolerations): tolerating the control plane's or another dedicated group's taint
// would put it on nodes that are not the tenants'. Workloads' pod templates are judged too, so a
// Deployment is refused when it is applied rather than its ReplicaSet failing to create pods.
func PodSchedulingPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(PodScheduling, []admissionregistrationv1.NamedRuleWithOperations{
		rule("", []string{"v1"}, "pods", "replicationcontrollers"),
		rule("apps", []string{"v1"}, "deployments", "replicasets", "statefulsets", "daemonsets"),
		rule("batch", []string{"v1"}, "jobs", "cronjobs"),
	},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{podSpecChanged},
			Variables: []admissionregistrationv1.Variable{
				annotationList("priorityClasses", tenancyv1alpha1.PriorityClassesAnnotation),
				annotationList("tolerations", tenancyv1alpha1.TolerationsAnnotation),
				{Name: "podSpec", Expression: podSpec("object")},
				{Name: "what", Expression: `request.resource.resource == 'pods' ? 'pods' : 'the pods of ' + request.resource.resource`},
				{Name: "priorityClass", Expression: `variables.podSpec.?priorityClassName.orValue('')`},
				{Name: "refused", Expression: `variables.podSpec.?tolerations.orValue([]).filter(t, !(` +
					`t.?key.orValue('') == ` + cel(poolKey) + ` || ` +
					`t.?key.orValue('') in ` + celList(NodeConditionTaints) + ` || ` +
					`(` + tolerationAsTaint + `) in variables.tolerations)).` +
					`map(t, t.?key.orValue('') == '' ? 'every taint' : ` + tolerationAsTaint + `)`},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`variables.priorityClass == '' || variables.priorityClass in variables.priorityClasses`,
					"pods in tenant namespaces may name only the priority classes Landlord's configuration lists (isolation.priorityClasses)",
					`variables.what + ' in `+namespaceName+` may not use priority class ' + variables.priorityClass + `+
						`(size(variables.priorityClasses) == 0 ? ': leave priorityClassName out' : ': use one of ' + variables.priorityClasses.join(', ') + ', or none')`),
				deny(`size(variables.refused) == 0`,
					"pods in tenant namespaces may tolerate only their node pool's taint, node conditions (node.kubernetes.io/...) and the taints Landlord's configuration lists (isolation.tolerations)",
					`variables.what + ' in `+namespaceName+` may not tolerate ' + variables.refused.join(', ') + `+
						`': tolerate only your node pool\'s taint (Landlord adds it), node conditions (node.kubernetes.io/...)' + `+
						`(size(variables.tolerations) == 0 ? '' : ' and ' + variables.tolerations.join(', '))`),
			},
		})
}

// DisruptionBudgetsPolicy lets a tenant's PodDisruptionBudget slow a drain, never stop it: a
// budget must set maxUnavailable to at least one pod (a percentage is rounded up, so 1% is one
// pod) and no minAvailable. A minAvailable equal to the number of pods a tenant runs (1 of 1,
// 100%) blocks every drain of the nodes the pods run on, shared ones too, and admission cannot
// see how many pods that is.
func DisruptionBudgetsPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(DisruptionBudgets, []admissionregistrationv1.NamedRuleWithOperations{rule("policy", []string{"v1"}, "poddisruptionbudgets")},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{specChanged},
			Variables: []admissionregistrationv1.Variable{
				// An int-or-string: a number of pods, or a percentage; anything else counts as none.
				{Name: "maxUnavailable", Expression: `!has(object.spec.maxUnavailable) ? 0 : ` +
					`type(object.spec.maxUnavailable) == int ? object.spec.maxUnavailable : ` +
					`object.spec.maxUnavailable.matches('^[0-9]{1,3}%$') ? int(object.spec.maxUnavailable.replace('%', '')) : 0`},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`!has(object.spec.minAvailable) && variables.maxUnavailable >= 1`,
					"PodDisruptionBudgets in tenant namespaces must let a drain evict a pod: set maxUnavailable to at least 1 or 1%, and no minAvailable",
					`'PodDisruptionBudgets in `+namespaceName+` must let a drain evict a pod: set maxUnavailable to at least 1 or 1%, and no minAvailable '+`+
						`'(a minAvailable equal to the number of pods, or a maxUnavailable of 0, would stop every drain of the nodes they run on)'`),
			},
		})
}
