package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Policy names of the guards over what counts toward a component's health.
const (
	ControllerLabels = "landlord-controller-labels"
	ComponentScale   = "landlord-component-scale"
)

// ControllerLabelKeys are the labels Kubernetes' workload controllers find their pods by, beside
// the workload's selector: a ReplicaSet of a Deployment selects its pod-template-hash, a Job its
// controller UID, and a StatefulSet or DaemonSet counts as updated only the pods that carry its
// revision (or, for a DaemonSet, its template generation). A pod carrying them, with labels its
// selector matches and no controller, is adopted and counted as the workload's own.
var ControllerLabelKeys = []string{
	appsv1.DefaultDeploymentUniqueLabelKey,
	appsv1.ControllerRevisionHashLabelKey,
	"pod-template-generation",
	batchv1.ControllerUidLabel,
	"controller-uid", // the Job controller's label before batch.kubernetes.io/, still honoured in selectors
}

// ControllerLabelsPolicy lets only Kubernetes' controllers (and the operator) set, change or
// remove the labels their controllers adopt and count pods by (ControllerLabelKeys), on pods or
// in the templates of workloads, whose pods carry what their template does. A tenant's health
// verdict on a component is kstatus's on Landlord's workloads: were a tenant's own Ready pod
// adopted by the ReplicaSet of a broken version (it carries the ReplicaSet's selector and
// hash), the ReplicaSet would scale its own pod away and the Deployment count as rolled out,
// and the tenant would decide its own rollout wave. With these labels Kubernetes' alone, a
// workload counts only pods its own controller made from its template.
//
// Every workload controller sets them on what it creates (Deployments their ReplicaSets'
// templates, ReplicaSets, StatefulSets, DaemonSets and Jobs their pods), and runs in
// kube-controller-manager; a tenant's own workloads are untouched, as are updates that leave the
// labels as they were (a tenant labelling or scaling its own ReplicaSet or pod).
func ControllerLabelsPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	keys := celList(ControllerLabelKeys)
	// pairs lists the controller labels on a label map m as "key=value".
	pairs := func(m string) string {
		return keys + `.filter(k, k in ` + m + `).map(k, k + '=' + ` + m + `[k])`
	}
	return validatingPolicy(ControllerLabels, []admissionregistrationv1.NamedRuleWithOperations{
		rule("", []string{"v1"}, "pods", "replicationcontrollers", "podtemplates"),
		rule("apps", []string{"v1"}, "deployments", "replicasets", "statefulsets", "daemonsets"),
		rule("batch", []string{"v1"}, "jobs", "cronjobs"),
	}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{notTheOperatorNorKubernetes(op)}, op.trustedCondition()...),
		Variables: []admissionregistrationv1.Variable{
			{Name: "labels", Expression: `request.resource.resource != 'pods' ? [] : ` + pairs(`object.metadata.?labels.orValue({})`)},
			{Name: "oldLabels", Expression: `request.resource.resource != 'pods' || request.operation == 'CREATE' ? [] : ` + pairs(`oldObject.metadata.?labels.orValue({})`)},
			{Name: "changed", Expression: `variables.labels.filter(l, !(l in variables.oldLabels)) + variables.oldLabels.filter(l, !(l in variables.labels))`},
			{Name: "templates", Expression: templateLabels("object")},
			{Name: "oldTemplates", Expression: `request.operation == 'CREATE' ? [] : ` + templateLabels("oldObject")},
			{Name: "templateLabels", Expression: `variables.templates.map(m, ` + pairs("m") + `).flatten()`},
			{Name: "oldTemplateLabels", Expression: `variables.oldTemplates.map(m, ` + pairs("m") + `).flatten()`},
			{Name: "added", Expression: `variables.templateLabels.filter(l, !(l in variables.oldTemplateLabels)).distinct()`},
			// A pod a workload made (it carries one of the labels) changes only through its
			// workload: its image edited in place, or its owner taken off so that its spec could
			// be, it would count for the workload as the template's.
			{Name: "made", Expression: `request.resource.resource == 'pods' && request.operation == 'UPDATE' && size(variables.oldLabels) > 0`},
		},
		Validations: []admissionregistrationv1.Validation{
			deny(`size(variables.changed) == 0`,
				"only Kubernetes' controllers set, change or remove the labels their workloads adopt pods by",
				`'only Kubernetes\' controllers set, change or remove the labels their workloads adopt and count pods by, in `+namespaceName+`, and this request changes ' + `+
					`variables.changed.join(', ') + ': a workload would take the pod for one it made. Label your pods with keys of your own'`),
			deny(`size(variables.added) == 0`,
				"only Kubernetes' controllers put the labels their workloads adopt pods by in templates",
				`'only Kubernetes\' controllers put the labels their workloads adopt and count pods by in templates, in `+namespaceName+`, and this template would have ' + `+
					`variables.added.join(', ') + ' copied onto its pods: a workload would take them for pods it made. Label your pods with keys of your own'`),
			deny(`!variables.made || (`+images("object")+` == `+images("oldObject")+` && object.metadata.?ownerReferences.orValue([]) == oldObject.metadata.?ownerReferences.orValue([]))`,
				"a pod its workload made changes only through the workload: its images and owner references are its controller's",
				`'pod ' + object.metadata.name + ' in `+namespaceName+` was made by its workload (' + variables.oldLabels.join(', ') + '): '+`+
					`'its spec and owner references change only through the workload, or its image would count for the workload as its template\'s. Change the workload, or delete the pod'`),
		},
	})
}

// images lists the images of a pod's containers and init containers, the only ones of its
// fields (with its owner references) that would make it another pod than its template's: the
// others a pod's update may change (scheduling gates, tolerations, a deadline) are left to the
// controllers that change them.
func images(pod string) string {
	return `(` + pod + `.spec.containers.map(c, c.image) + ` + pod + `.spec.?initContainers.orValue([]).map(c, c.image))`
}

// ComponentScalePolicy refuses tenant users the scale subresource of the workloads Landlord
// renders for the tenant's components, as ComponentObjectsPolicy refuses them the object: a
// tenant that scaled a component to zero replicas would have kstatus call it Current, and pass
// its rollout wave with a version that never ran; one that scaled it where the template leaves
// spec.replicas to others (an autoscaler) would keep the count for good. The scale subresource
// carries neither the labels nor the owner of its object, so the workloads are known by the list
// Landlord keeps on the tenant namespace (WorkloadsAnnotation), written before they are.
//
// Who may: as for ComponentObjectsPolicy, whoever may patch the namespace's quota, the operator
// and Kubernetes' controllers (the HorizontalPodAutoscaler's among them). A tenant's own
// workloads scale as before.
func ComponentScalePolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	replicaSets := rule("apps", []string{"v1"}, "replicasets")
	replicaSets.Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	return validatingPolicy(ComponentScale, []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{"", "apps"}, APIVersions: []string{"*"},
				Resources: []string{"replicationcontrollers/scale", "deployments/scale", "replicasets/scale", "statefulsets/scale"},
				Scope:     ptr.To(admissionregistrationv1.NamespacedScope),
			},
		},
	}, replicaSets, rule("autoscaling", []string{"*"}, "horizontalpodautoscalers")}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{notTheOperatorNorKubernetes(op)}, op.trustedCondition()...),
		Variables: []admissionregistrationv1.Variable{
			{Name: "listed", Expression: `namespaceObject.metadata.?annotations[?` + cel(tenancyv1alpha1.WorkloadsAnnotation) + `].orValue('').split(',').filter(w, w != '')`},
			// What the request scales: a listed workload through its scale subresource; the
			// ReplicaSet of a listed Deployment (named after it, owned by it), whose count the
			// Deployment sets; or the target of an autoscaler, which Kubernetes' own controller
			// would scale for whoever wrote it.
			{Name: "workload", Expression: `request.resource.resource == 'horizontalpodautoscalers' ? ` +
				`({'apps/deployment': 'deployments.apps', 'apps/statefulset': 'statefulsets.apps', 'apps/replicaset': 'replicasets.apps', '/replicationcontroller': 'replicationcontrollers'}` +
				`[?(object.spec.scaleTargetRef.?apiVersion.orValue('').contains('/') ? object.spec.scaleTargetRef.apiVersion.split('/')[0] : '') + '/' + object.spec.scaleTargetRef.kind.lowerAscii()].orValue('') + ` +
				`'/' + object.spec.scaleTargetRef.name) : ` +
				`request.resource.resource + (request.resource.group == '' ? '' : '.' + request.resource.group) + '/' + request.name`},
			{Name: "ofDeployment", Expression: `request.resource.resource == 'replicasets' && (request.?subResource.orValue('') == 'scale' ? ` +
				`variables.listed.exists(w, w.startsWith('deployments.apps/') && request.name.startsWith(w.substring(17) + '-')) : ` +
				`object.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'Deployment' && o.?controller.orValue(false) && ('deployments.apps/' + o.name) in variables.listed))`},
			{Name: "scalesRendered", Expression: `(variables.workload in variables.listed || variables.ofDeployment) && ` +
				`(request.?subResource.orValue('') == 'scale' || request.resource.resource == 'horizontalpodautoscalers' || object.spec != oldObject.spec)`},
		},
		Validations: []admissionregistrationv1.Validation{
			deny(`!variables.scalesRendered || authorizer.group('').resource('resourcequotas').namespace(namespaceObject.metadata.name).check('patch').allowed()`,
				"Landlord renders this workload for one of the tenant's components: only the platform scales it",
				`'`+`' + (request.resource.resource == 'horizontalpodautoscalers' ? 'an autoscaler of ' + variables.workload : request.resource.resource + ' ' + request.name) + `+
					`' would scale what Landlord renders for a component of tenant `+namespaceName+`: only the platform scales it. `+
					`Ask for other values of the component (its replicas), or scale workloads of your own'`),
		},
	})
}
