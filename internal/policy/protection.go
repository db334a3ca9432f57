package policy

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Names of the policies that protect Landlord's own objects from accidents: a Tenant deleted
// while it serves a customer, a CRD deleted with every object of its kind, a label that decides
// what a tenant is changed by hand.
const (
	TenantDeletion = "landlord-tenant-deletion"
	TenantLabels   = "landlord-tenant-labels"
	CRDProtection  = "landlord-crd-protection"
)

// CRDNames are Landlord's CustomResourceDefinitions.
var CRDNames = []string{
	"tenants." + tenancyv1alpha1.GroupVersion.Group,
	"tenantpools." + tenancyv1alpha1.GroupVersion.Group,
	"tenantclaims." + tenancyv1alpha1.GroupVersion.Group,
	"databaseservers." + tenancyv1alpha1.GroupVersion.Group,
	"componenttemplates." + tenancyv1alpha1.GroupVersion.Group,
	"componentrollouts." + tenancyv1alpha1.GroupVersion.Group,
	"tenantbackups." + tenancyv1alpha1.GroupVersion.Group,
	"tenantrestores." + tenancyv1alpha1.GroupVersion.Group,
	"tenantbackupschedules." + tenancyv1alpha1.GroupVersion.Group,
	"backuprequests." + tenancyv1alpha1.GroupVersion.Group,
	"restorerequests." + tenancyv1alpha1.GroupVersion.Group,
	"databasemoves." + tenancyv1alpha1.GroupVersion.Group,
	"tenantclasses." + tenancyv1alpha1.GroupVersion.Group,
}

// guardedLabels and guardedAnnotations decide what a Tenant is (a pool's spare, a customer's
// tenant, a claim's): only the operator sets or removes them, since a deleted tenant's data is
// dropped or kept on what they say.
var (
	guardedLabels      = []string{tenancyv1alpha1.PoolLabel, tenancyv1alpha1.AllocatedLabel, tenancyv1alpha1.ClaimUIDLabel}
	guardedAnnotations = []string{tenancyv1alpha1.ClaimAnnotation}
)

// ProtectionObjects are the policies over Landlord's own cluster-scoped objects, and their
// bindings. op.User is the username the operator's requests carry.
func ProtectionObjects(op Operator) []client.Object {
	return []client.Object{
		TenantDeletionPolicy(), clusterBinding(TenantDeletion),
		TenantLabelsPolicy(op), clusterBinding(TenantLabels),
		CRDProtectionPolicy(), clusterBinding(CRDProtection),
	}
}

// clusterPolicy is a policy over cluster-scoped resources that fails closed.
func clusterPolicy(name string, rules []admissionregistrationv1.NamedRuleWithOperations, spec admissionregistrationv1.ValidatingAdmissionPolicySpec) *admissionregistrationv1.ValidatingAdmissionPolicy {
	spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: rules}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{TypeMeta: validatingTypeMeta, ObjectMeta: objectMeta(name), Spec: spec}
}

// clusterBinding denies what the named policy refuses; the policy's rules alone say what (a
// binding of a policy over tenant namespaces narrows it further: validatingBinding).
func clusterBinding(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   validatingBindingTypeMeta,
		ObjectMeta: objectMeta(name),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

func tenantRule(ops ...admissionregistrationv1.OperationType) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{tenancyv1alpha1.GroupVersion.Group},
			APIVersions: []string{"*"},
			Resources:   []string{"tenants"},
			Scope:       ptr.To(admissionregistrationv1.ClusterScope),
		},
	}}
}

// cel quotes a string for a CEL expression.
func cel(s string) string { return "'" + escape(s) + "'" }

func celList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = cel(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// TenantDeletionPolicy refuses to delete a Tenant that is Active or Frozen: the deletion takes
// the customer's namespace and application down at once, whether it comes from kubectl in the
// wrong context or from Flux pruning a file removed from Git. Archived first (the data is kept),
// or confirmed by name, it goes. An unallocated pool spare has no customer and goes as it is:
// the pool removes spares it no longer needs.
func TenantDeletionPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	// A spare as IsUnallocatedSpare has it: labelled with a pool, controlled by that pool, and
	// neither allocated nor claimed. A pool label alone (set by hand before the label policy
	// was installed) does not make a customer's tenant deletable.
	spare := fmt.Sprintf(`oldObject.metadata.?labels[?%[1]s].orValue('') != '' && oldObject.metadata.?labels[?%[2]s].orValue('') != 'true' && oldObject.metadata.?annotations[?%[3]s].orValue('') == '' && `+
		`oldObject.metadata.?ownerReferences.orValue([]).exists(o, o.kind == 'TenantPool' && o.name == oldObject.metadata.labels[%[1]s] && o.?controller.orValue(false))`,
		cel(tenancyv1alpha1.PoolLabel), cel(tenancyv1alpha1.AllocatedLabel), cel(tenancyv1alpha1.ClaimAnnotation))
	confirmed := fmt.Sprintf(`oldObject.metadata.?annotations[?%s].orValue('') == oldObject.metadata.name`, cel(tenancyv1alpha1.DeletionConfirmationAnnotation))
	return clusterPolicy(TenantDeletion, []admissionregistrationv1.NamedRuleWithOperations{tenantRule(admissionregistrationv1.Delete)},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{
				deny(`oldObject.spec.?state.orValue('Active') in ['Archived', 'Purged'] || `+confirmed+` || (`+spare+`)`,
					"an Active or Frozen tenant is not deleted: set spec.state: Archived first, or annotate it "+tenancyv1alpha1.DeletionConfirmationAnnotation+" with its name",
					`'tenant ' + oldObject.metadata.name + ' is ' + oldObject.spec.?state.orValue('Active') + `+
						`': deleting it would delete its namespace and stop its application now. Set spec.state: Archived first (in Git, when Flux or Argo CD applies it), `+
						`which keeps its data, or annotate it `+tenancyv1alpha1.DeletionConfirmationAnnotation+`: ' + oldObject.metadata.name + ' to delete it as it is'`),
			},
		})
}

// TenantLabelsPolicy lets only the operator add, change or remove the labels, annotations and
// TenantPool owner references that say a tenant is a pool's spare or a customer's: a pool label
// or owner put on by hand would make the tenant count as a spare, and an allocation removed by
// hand would make its deletion drop a customer's databases as a spare's.
func TenantLabelsPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	var same []string
	for _, k := range guardedLabels {
		same = append(same, fmt.Sprintf(`object.metadata.?labels[?%[1]s].orValue('') == (request.operation == 'CREATE' ? '' : oldObject.metadata.?labels[?%[1]s].orValue(''))`, cel(k)))
	}
	for _, k := range guardedAnnotations {
		same = append(same, fmt.Sprintf(`object.metadata.?annotations[?%[1]s].orValue('') == (request.operation == 'CREATE' ? '' : oldObject.metadata.?annotations[?%[1]s].orValue(''))`, cel(k)))
	}
	// A pool's owner reference makes a tenant the pool's, to delete when it shrinks: only the
	// operator adds one. Removing one (the garbage collector orphaning a pool's tenants) makes
	// a tenant no spare, which is the safe way.
	poolOwners := `%s.metadata.?ownerReferences.orValue([]).filter(o, o.kind == 'TenantPool').map(o, o.name + '/' + o.uid)`
	same = append(same, fmt.Sprintf(`%s.all(r, request.operation != 'CREATE' && r in %s)`, fmt.Sprintf(poolOwners, "object"), fmt.Sprintf(poolOwners, "oldObject")))
	keys := append(append([]string{}, guardedLabels...), guardedAnnotations...)
	return clusterPolicy(TenantLabels, []admissionregistrationv1.NamedRuleWithOperations{tenantRule(admissionregistrationv1.Create, admissionregistrationv1.Update)},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: append([]admissionregistrationv1.MatchCondition{{
				Name: "not-the-operator", Expression: `request.userInfo.username != ` + cel(op.User),
			}}, op.trustedCondition()...),
			Validations: []admissionregistrationv1.Validation{
				deny(strings.Join(same, " && "),
					"only Landlord's operator sets or removes "+strings.Join(keys, ", ")+" on a Tenant, or adds a TenantPool owner reference",
					`'only Landlord\'s operator sets or removes `+strings.Join(keys, ", ")+`, or adds a TenantPool owner reference, on tenant ' + object.metadata.name + `+
						`': a TenantPool creates spares and a TenantClaim allocates one; leave them as they are'`),
				// A tenant moved to another cluster is never made Active here again: it would use
				// the databases the moved tenant uses (the move itself takes it through Frozen to
				// Archived). Bringing it back takes two steps, the annotation's removal first.
				deny(fmt.Sprintf(`request.operation == 'CREATE' || oldObject.metadata.?annotations[?%[1]s].orValue('') == '' || object.spec.?state.orValue('Active') != 'Active' || oldObject.spec.?state.orValue('Active') == 'Active'`,
					cel(tenancyv1alpha1.MovedToAnnotation)),
					"a Tenant moved to another cluster is not made Active again",
					fmt.Sprintf(`'tenant ' + object.metadata.name + ' was moved to ' + oldObject.metadata.annotations[%[1]s] + ', which uses its data now: it is not made Active here again. '`+
						` + 'To bring it back here on purpose, remove the annotation %[2]s first'`, cel(tenancyv1alpha1.MovedToAnnotation), tenancyv1alpha1.MovedToAnnotation)),
			},
		})
}

// CRDProtectionPolicy refuses to delete Landlord's CustomResourceDefinitions: deleting one
// deletes every object of its kind, and deleting tenants.tenancy.landlord.dev every tenant with
// its namespace. Uninstalling takes stopping the operator (which puts the binding back) and
// deleting the binding first.
func CRDProtectionPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return clusterPolicy(CRDProtection, []admissionregistrationv1.NamedRuleWithOperations{{
		ResourceNames: CRDNames,
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{"apiextensions.k8s.io"},
				APIVersions: []string{"v1"},
				Resources:   []string{"customresourcedefinitions"},
				Scope:       ptr.To(admissionregistrationv1.ClusterScope),
			},
		},
	}}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		Validations: []admissionregistrationv1.Validation{
			deny(`!(oldObject.metadata.name in `+celList(CRDNames)+`)`,
				"Landlord's CustomResourceDefinitions are not deleted while "+CRDProtection+" is bound",
				`'deleting CustomResourceDefinition ' + oldObject.metadata.name + ' would delete every object of its kind (every Tenant, with its namespace, for tenants). `+
					`To uninstall Landlord: archive or purge the tenants, stop the operator, delete the ValidatingAdmissionPolicyBinding `+CRDProtection+`, then the CRDs'`),
		},
	})
}
