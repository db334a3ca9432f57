package policy

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// LandlordLabelPrefix begins every label key of Landlord's own (the tenant, the component, a
// shared secret's copy, ...).
const LandlordLabelPrefix = "tenancy.landlord.dev/"

// KubernetesControllers are the users whose requests ManagedLabelsPolicy lets copy Landlord's
// labels: Kubernetes' own controllers copy labels onto what they create (a Service's onto its
// EndpointSlices, a Deployment's pod template onto its ReplicaSets and Pods, a StatefulSet's
// claim templates onto its PersistentVolumeClaims), and those of what the operator made carry
// Landlord's. They run as kube-controller-manager, or under its per-controller ServiceAccounts in
// kube-system, which a tenant can neither create nor impersonate; what they copy from, the tenant
// cannot label (the templates are checked below).
var KubernetesControllers = struct {
	Prefix string
	Users  []string
}{Prefix: "system:serviceaccount:kube-system:", Users: []string{"system:kube-controller-manager"}}

// landlordLabels lists the labels of Landlord on a label map m, as "key=value": the managed-by
// label with Landlord's value (another tool's value is its own), and every key of Landlord's
// prefix.
func landlordLabels(m string) string {
	return fmt.Sprintf(`%[1]s.filter(k, k.startsWith(%[2]s) || (k == %[3]s && %[1]s[k] == %[4]s)).map(k, k + '=' + %[1]s[k])`,
		m, cel(LandlordLabelPrefix), cel(tenancyv1alpha1.ManagedByLabel), cel(tenancyv1alpha1.ManagedByValue))
}

// landlordLabelsBut is landlordLabels less the keys k of m for which skip, a CEL expression of k,
// holds.
func landlordLabelsBut(m, skip string) string {
	return fmt.Sprintf(`%[1]s.filter(k, !(%[5]s) && (k.startsWith(%[2]s) || (k == %[3]s && %[1]s[k] == %[4]s))).map(k, k + '=' + %[1]s[k])`,
		m, cel(LandlordLabelPrefix), cel(tenancyv1alpha1.ManagedByLabel), cel(tenancyv1alpha1.ManagedByValue), skip)
}

// costCodeSet is whether the object as it will be stored carries its namespace's cost code,
// which CostCodePolicy puts on every pod there: anyone may then have it (a tenant's own pod,
// created or updated), and whatever code the object carried before (the namespace's code
// changed) goes with the update.
var costCodeSet = `variables.costCode != '' && variables.objectLabels[?` + cel(tenancyv1alpha1.CostCodeLabel) + `].orValue('') == variables.costCode`

// templateLabels lists the label maps of obj that Kubernetes' controllers copy onto objects they
// create: pod templates (workloads, CronJobs' job templates, PodTemplates), StatefulSets' claim
// templates and generic ephemeral volumes' claim templates.
func templateLabels(obj string) string {
	ephemeral := func(volumes string) string {
		return volumes + `.orValue([]).map(v, v.?ephemeral.?volumeClaimTemplate.?metadata.?labels.orValue({}))`
	}
	return `[` + strings.Join([]string{
		obj + `.?spec.?template.?metadata.?labels.orValue({})`,
		obj + `.?template.?metadata.?labels.orValue({})`,
		obj + `.?spec.?jobTemplate.?metadata.?labels.orValue({})`,
		obj + `.?spec.?jobTemplate.?spec.?template.?metadata.?labels.orValue({})`,
	}, ", ") + `] + ` +
		obj + `.?spec.?volumeClaimTemplates.orValue([]).map(t, t.?metadata.?labels.orValue({})) + ` +
		ephemeral(obj+`.?spec.?volumes`) + ` + ` +
		ephemeral(obj+`.?spec.?template.?spec.?volumes`) + ` + ` +
		ephemeral(obj+`.?spec.?jobTemplate.?spec.?template.?spec.?volumes`)
}

// ManagedLabelsPolicy lets only the operator set, change or remove Landlord's labels on
// anything in tenant namespaces, or put them in a template Kubernetes' controllers copy labels
// from. The operator's cache holds exactly what carries its managed-by label, so a
// tenant labelling its own Secrets or ConfigMaps could fill the operator's memory, and an object
// labelled with a tenant's name could be taken for Landlord's.
func ManagedLabelsPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(ManagedLabels, []admissionregistrationv1.NamedRuleWithOperations{everyNamespacedWrite()}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{notTheOperatorNorKubernetes(op)}, op.trustedCondition()...),
		Variables: []admissionregistrationv1.Variable{
			namespaceCostCode,
			{Name: "objectLabels", Expression: `object.metadata.?labels.orValue({})`},
			{Name: "oldObjectLabels", Expression: `request.operation == 'CREATE' ? {} : oldObject.metadata.?labels.orValue({})`},
			{Name: "labels", Expression: landlordLabelsBut("variables.objectLabels", `k == `+cel(tenancyv1alpha1.CostCodeLabel)+` && `+costCodeSet)},
			{Name: "oldLabels", Expression: landlordLabelsBut("variables.oldObjectLabels", `k == `+cel(tenancyv1alpha1.CostCodeLabel)+` && `+costCodeSet)},
			{Name: "changed", Expression: `variables.labels.filter(l, !(l in variables.oldLabels)) + variables.oldLabels.filter(l, !(l in variables.labels))`},
			{Name: "templates", Expression: templateLabels("object")},
			{Name: "oldTemplates", Expression: `request.operation == 'CREATE' ? [] : ` + templateLabels("oldObject")},
			// No template may carry the cost code: a workload selecting its pods by it would stop
			// matching them once the code changes, and make new ones without end.
			{Name: "templateLabels", Expression: `variables.templates.map(m, ` + landlordLabels("m") + `).flatten()`},
			{Name: "oldTemplateLabels", Expression: `variables.oldTemplates.map(m, ` + landlordLabels("m") + `).flatten()`},
			{Name: "added", Expression: `variables.templateLabels.filter(l, !(l in variables.oldTemplateLabels)).distinct()`},
		},
		Validations: []admissionregistrationv1.Validation{
			deny(`size(variables.changed) == 0`,
				"only Landlord's operator sets, changes or removes Landlord's labels in tenant namespaces",
				`'only Landlord\'s operator sets, changes or removes Landlord\'s labels in `+namespaceName+` (`+tenancyv1alpha1.ManagedByLabel+`=`+tenancyv1alpha1.ManagedByValue+
					` and `+LandlordLabelPrefix+`*), and this request changes ' + variables.changed.join(', ') + `+
					`': leave them as they are, and label your own objects with keys of your own'`),
			deny(`size(variables.added) == 0`,
				"only Landlord's operator sets, changes or removes Landlord's labels in tenant namespaces, templates included",
				`'only Landlord\'s operator sets, changes or removes Landlord\'s labels in `+namespaceName+`, and this template would have Kubernetes copy ' + `+
					`variables.added.join(', ') + ' onto what it creates: label your pods and claims with keys of your own'`),
		},
	})
}

// everyNamespacedWrite matches creates and updates of every namespaced resource (subresources
// aside).
func everyNamespacedWrite() admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"},
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		},
	}
}

// notTheOperatorNorKubernetes is the match condition that leaves the operator's requests and
// those of Kubernetes' controllers alone.
func notTheOperatorNorKubernetes(op Operator) admissionregistrationv1.MatchCondition {
	return admissionregistrationv1.MatchCondition{
		Name: "not-the-operator-nor-kubernetes",
		Expression: `!(request.userInfo.username in ` + celList(append([]string{op.User}, KubernetesControllers.Users...)) + `) && ` +
			`!request.userInfo.username.startsWith(` + cel(KubernetesControllers.Prefix) + `)`,
	}
}
