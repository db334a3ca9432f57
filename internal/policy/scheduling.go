package policy

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Names of the policies over how tenants' pods are scheduled and evicted.
const (
	PodScheduling     = "landlord-pod-scheduling"
	DisruptionBudgets = "landlord-disruption-budgets"
	PodFinalizers     = "landlord-pod-finalizers"
)

// NodeFailureTaints are the NoExecute taints Kubernetes puts on a node it cannot reach, which it
// tolerates itself, for five minutes, on every pod it admits (DefaultTolerationSeconds). A
// tenant's pods may tolerate them, for as long as they like, with that effect only: they say
// how long a pod stays on a node that has failed, which concerns the tenant's own pods alone.
var NodeFailureTaints = []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}

// DaemonSetTaints are the node conditions' taints the DaemonSet controller tolerates on every pod
// it creates, so that a daemon runs on every node, cordoned or under pressure, and a drain
// passes it over. A tenant's own pods may tolerate none of them but NodeFailureTaints: a pod
// tolerating node.kubernetes.io/unschedulable would be scheduled onto a node being drained, and
// one tolerating memory or disk pressure beside other tenants' pods on a node that is evicting
// them.
var DaemonSetTaints = []string{
	"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "node.kubernetes.io/unschedulable",
	"node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure", "node.kubernetes.io/pid-pressure",
	"node.kubernetes.io/network-unavailable",
}

// DefaultMaxTerminationGracePeriodSeconds bounds a tenant pod's termination grace period where
// the operator is given none (isolation.maxTerminationGracePeriod's default).
const DefaultMaxTerminationGracePeriodSeconds = 300

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
// NodePoolPolicy judges), failed nodes' NoExecute taints and the taints the configuration lists
// (isolation.tolerations): tolerating the control plane's or another dedicated group's taint
// would put it on nodes that are not the tenants'. Workloads' pod templates are judged too, so a
// Deployment is refused when it is applied rather than its ReplicaSet failing to create pods.
func PodSchedulingPolicy(maxGraceSeconds int64) *admissionregistrationv1.ValidatingAdmissionPolicy {
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
				// The pods the DaemonSet controller creates (Kubernetes' controllers, for a
				// DaemonSet that controls the pod) carry the tolerations it adds; what it copies
				// from, the DaemonSet's template, is judged like any other.
				{Name: "daemon", Expression: `request.resource.resource == 'pods' && (request.userInfo.username in ` + celList(KubernetesControllers.Users) + ` || ` +
					`request.userInfo.username == ` + cel(KubernetesControllers.Prefix+"daemon-set-controller") + `) && ` +
					`object.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'DaemonSet' && o.?controller.orValue(false))`},
				{Name: "refused", Expression: `variables.podSpec.?tolerations.orValue([]).filter(t, !(` +
					`t.?key.orValue('') == ` + cel(poolKey) + ` || ` +
					`(t.?key.orValue('') in ` + celList(NodeFailureTaints) + ` && t.?effect.orValue('') == 'NoExecute') || ` +
					`(variables.daemon && t.?key.orValue('') in ` + celList(DaemonSetTaints) + `) || ` +
					`(` + tolerationAsTaint + `) in variables.tolerations)).` +
					`map(t, t.?key.orValue('') == '' ? 'every taint' : ` + tolerationAsTaint + `)`},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`variables.priorityClass == '' || variables.priorityClass in variables.priorityClasses`,
					"pods in tenant namespaces may name only the priority classes Landlord's configuration lists (isolation.priorityClasses)",
					`variables.what + ' in `+namespaceName+` may not use priority class ' + variables.priorityClass + `+
						`(size(variables.priorityClasses) == 0 ? ': leave priorityClassName out' : ': use one of ' + variables.priorityClasses.join(', ') + ', or none')`),
				deny(`size(variables.refused) == 0`,
					"pods in tenant namespaces may tolerate only their node pool's taint, failed nodes (node.kubernetes.io/not-ready and unreachable, NoExecute) and the taints Landlord's configuration lists (isolation.tolerations)",
					`variables.what + ' in `+namespaceName+` may not tolerate ' + variables.refused.join(', ') + `+
						`': tolerate only your node pool\'s taint (Landlord adds it), failed nodes (node.kubernetes.io/not-ready and unreachable, NoExecute)' + `+
						`(size(variables.tolerations) == 0 ? '' : ' and ' + variables.tolerations.join(', '))`),
				deny(`variables.podSpec.?terminationGracePeriodSeconds.orValue(0) <= `+fmt.Sprint(maxGraceSeconds),
					fmt.Sprintf("pods in tenant namespaces may not ask for a termination grace period over %d seconds (isolation.maxTerminationGracePeriod): a drain of the node waits for it", maxGraceSeconds),
					`variables.what + ' in `+namespaceName+` may not ask for a termination grace period over `+fmt.Sprint(maxGraceSeconds)+` seconds '+`+
						`'(terminationGracePeriodSeconds ' + string(variables.podSpec.terminationGracePeriodSeconds) + '): a drain of the node waits that long for the pod'`),
			},
		})
}

// DisruptionBudgetsPolicy lets a tenant's PodDisruptionBudget slow a drain, never stop it: a
// budget must set maxUnavailable to at least one pod (a percentage is rounded up, so 1% is one
// pod) and no minAvailable. A minAvailable equal to the number of pods a tenant runs (1 of 1,
// 100%) blocks every drain of the nodes the pods run on, shared ones too, and admission cannot
// see how many pods that is. It must also let unhealthy pods be evicted at any time
// (unhealthyPodEvictionPolicy AlwaysAllow): under the default, pods that never become ready
// count as the disruption the budget allows, and no pod of the budget is ever evicted. Two
// budgets over one pod make every eviction of it fail; the namespace's quota holds one
// (count/poddisruptionbudgets.policy), since admission cannot see the other budgets.
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
				deny(`object.spec.?unhealthyPodEvictionPolicy.orValue('') == 'AlwaysAllow'`,
					"PodDisruptionBudgets in tenant namespaces must let a drain evict pods that are not ready: set unhealthyPodEvictionPolicy to AlwaysAllow",
					`'PodDisruptionBudgets in `+namespaceName+` must let a drain evict pods that are not ready: set unhealthyPodEvictionPolicy to AlwaysAllow '+`+
						`'(otherwise pods that never become ready stop every drain of the nodes they run on)'`),
			},
		})
}

// podTemplateFinalizers lists the finalizers of obj's pod template (a CronJob's job template's),
// which Kubernetes' controllers copy onto every pod they create from it.
func podTemplateFinalizers(obj string) string {
	return obj + `.spec.?jobTemplate.?spec.?template.?metadata.?finalizers.orValue(` +
		obj + `.spec.?template.?metadata.?finalizers.orValue([]))`
}

// PodFinalizersPolicy keeps a tenant from holding its pods on a node being drained. A drain
// deletes a node's pods and waits for them to be gone: a pod held by a finalizer that nothing
// removes stays, and the drain with it, for every tenant on the node. Only Kubernetes'
// controllers add a pod finalizer of their own (the Job controller's
// batch.kubernetes.io/job-tracking), and they remove it; the templates they create pods from
// may carry none, or they would copy it. A tenant's own deletion of a pod may not hold it
// either: not with a grace period over maxGraceSeconds (the API server takes any, and a later
// deletion with none leaves it), nor with foreground propagation, which keeps the pod until
// dependents the tenant makes (with blockOwnerDeletion) are gone.
func PodFinalizersPolicy(maxGraceSeconds int64) *admissionregistrationv1.ValidatingAdmissionPolicy {
	deletes := rule("", []string{"v1"}, "pods")
	deletes.Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}
	return validatingPolicy(PodFinalizers, []admissionregistrationv1.NamedRuleWithOperations{
		rule("", []string{"v1"}, "pods", "replicationcontrollers", "podtemplates"),
		rule("apps", []string{"v1"}, "deployments", "replicasets", "statefulsets", "daemonsets"),
		rule("batch", []string{"v1"}, "jobs", "cronjobs"),
		deletes,
	},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Variables: []admissionregistrationv1.Variable{
				{Name: "controller", Expression: `request.userInfo.username in ` + celList(KubernetesControllers.Users) + ` || ` +
					`request.userInfo.username.startsWith(` + cel(KubernetesControllers.Prefix) + `)`},
				{Name: "what", Expression: `request.resource.resource == 'pods' ? 'pods' : 'the pods of ' + request.resource.resource`},
				// The finalizers this request adds: to a pod, those it did not carry (one already
				// there stays removable, and the pod deletable, whoever updates the pod), but for
				// the Job controller's own; to a template, those it did not carry, so that an
				// update leaving an older template alone (a scale, the garbage collector) passes.
				{Name: "added", Expression: `request.resource.resource == 'pods' ? ` +
					`object.metadata.?finalizers.orValue([]).filter(f, (request.operation == 'CREATE' || !(f in oldObject.metadata.?finalizers.orValue([]))) && ` +
					`!(variables.controller && f == 'batch.kubernetes.io/job-tracking')) : ` +
					`(request.resource.resource == 'podtemplates' ? object.template.?metadata.?finalizers.orValue([]) : ` + podTemplateFinalizers("object") + `).` +
					`filter(f, request.operation == 'CREATE' || !(f in (request.resource.resource == 'podtemplates' ? oldObject.template.?metadata.?finalizers.orValue([]) : ` + podTemplateFinalizers("oldObject") + `)))`},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`request.operation == 'DELETE' || size(variables.added) == 0`,
					"pods in tenant namespaces may not carry finalizers: a drain of their node would wait for them for ever",
					`variables.what + ' in `+namespaceName+` may not carry finalizers (' + variables.added.join(', ') + '): '+`+
						`'a drain of the node would wait for the pod until something removed them'`),
				deny(`request.operation != 'DELETE' || variables.controller || request.?options.?gracePeriodSeconds.orValue(0) <= `+fmt.Sprint(maxGraceSeconds),
					fmt.Sprintf("pods in tenant namespaces may not be deleted with a grace period over %d seconds (isolation.maxTerminationGracePeriod): a drain of the node waits for it", maxGraceSeconds),
					`'pods in `+namespaceName+` may not be deleted with a grace period over `+fmt.Sprint(maxGraceSeconds)+` seconds '+`+
						`'(gracePeriodSeconds ' + string(request.options.gracePeriodSeconds) + '): a drain of the node waits that long for the pod'`),
				deny(`request.operation != 'DELETE' || variables.controller || request.?options.?propagationPolicy.orValue('') != 'Foreground'`,
					"pods in tenant namespaces may not be deleted in the foreground: a drain of the node would wait for their dependents",
					`'pods in `+namespaceName+` may not be deleted in the foreground (propagationPolicy Foreground): '+`+
						`'the pod would stay until its dependents are gone, and a drain of the node with it; delete it in the background'`),
			},
		})
}
