package policy

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// TenantClassOverrides is the policy that refuses a Tenant setting a field its TenantClass does
// not let it set.
const TenantClassOverrides = "landlord-tenant-class-overrides"

// TenantClassObjects are the class policy and its binding.
func TenantClassObjects() []client.Object {
	return []client.Object{TenantClassOverridesPolicy(), TenantClassOverridesBinding()}
}

// classField is a field of a Tenant's spec a class may let its tenants set: its name in
// spec.overrides, and whether the Tenant sets it, in CEL.
type classField struct {
	field tenancyv1alpha1.ClassField
	set   string
}

// unchanged is CEL for an update that leaves the spec's field as it was: such a field is let
// through (as Kubernetes ratchets validation), so that a tenant admitted before its class
// changed can still be archived, purged or relabelled.
func (f classField) unchanged() string {
	name := string(f.field)
	return fmt.Sprintf(`(request.operation == 'UPDATE' && has(oldObject.spec.%[1]s) && has(object.spec.%[1]s) && oldObject.spec.%[1]s == object.spec.%[1]s)`, name)
}

// classFields are the fields a class governs, in the order of the spec and of
// tenantclass.Check, which states the same rules for the operator.
var classFields = []classField{
	{tenancyv1alpha1.ClassFieldQuota, `has(object.spec.quota) && size(object.spec.quota) > 0`},
	{tenancyv1alpha1.ClassFieldLimits, `has(object.spec.limits)`},
	{tenancyv1alpha1.ClassFieldPodSecurity, `object.spec.?podSecurity.orValue('') != ''`},
	{tenancyv1alpha1.ClassFieldNodePool, `object.spec.?nodePool.orValue('') != ''`},
	{tenancyv1alpha1.ClassFieldCostCode, `object.spec.?costCode.orValue('') != ''`},
	{tenancyv1alpha1.ClassFieldMaintenanceWindows, `object.spec.?maintenanceWindows.orValue([]).size() > 0`},
}

// TenantClassOverridesPolicy refuses a Tenant of a class that sets a field the class's
// spec.overrides does not list, or names a component its spec.components.allowed does not,
// with a message naming the field. Its binding evaluates it once per TenantClass (each the
// param); each validation holds for every class but the tenant's own.
//
// Creates and updates changing the spec are checked, each field as Kubernetes ratchets
// validation: an update that leaves a field as it was is let through, so a tenant admitted
// before its class changed can still be archived, purged, suspended or relabelled; the operator
// stalls it (ClassOverrideRefused) until the field goes, but converges it whatever its class
// once Archived or Purged. The policy fails open: a class the API server
// cannot evaluate (its CustomResourceDefinition not yet installed) refuses no Tenant, and the
// operator's own check, the same rules in Go (internal/tenantclass), still stalls the tenant.
func TenantClassOverridesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	validations := make([]admissionregistrationv1.Validation, 0, len(classFields)+3)
	for _, f := range classFields {
		validations = append(validations, deny(
			fmt.Sprintf(`!variables.mine || !(%s) || '%s' in variables.overrides || %s`, f.set, f.field, f.unchanged()), "",
			fmt.Sprintf(`'spec.%s: TenantClass ' + params.metadata.name + ' does not let its tenants set %s (its spec.overrides)'`, f.field, f.field)))
	}
	for _, engine := range []string{"postgres", "mysql"} {
		dbs := `object.spec.?databases.?` + engine + `.orValue([])`
		// A server pinned before, on an update, is let through.
		pinned := `(d.?server.orValue('') == '' || (request.operation == 'UPDATE' && oldObject.spec.?databases.?` + engine +
			`.orValue([]).exists(o, o.name == d.name && o.?server.orValue('') == d.server)))`
		validations = append(validations, deny(
			fmt.Sprintf(`!variables.mine || '%s' in variables.overrides || %s.all(d, %s)`, tenancyv1alpha1.ClassFieldDatabaseServers, dbs, pinned), "",
			fmt.Sprintf(`'spec.databases.%s[name=' + %s.filter(d, !%s)[0].name + '].server: TenantClass ' + params.metadata.name + `+
				`' does not let its tenants choose their database servers (spec.overrides: %s)'`, engine, dbs, pinned, tenancyv1alpha1.ClassFieldDatabaseServers)))
	}
	// A component run before, on an update, is let through.
	allowed := `(c.name in variables.allowed || (request.operation == 'UPDATE' && oldObject.spec.?components.orValue([]).exists(o, o.name == c.name)))`
	validations = append(validations, deny(
		`!variables.mine || size(variables.allowed) == 0 || object.spec.?components.orValue([]).all(c, `+allowed+`)`, "",
		`'spec.components[name=' + object.spec.components.filter(c, !`+allowed+`)[0].name + ']: TenantClass ' + params.metadata.name + `+
			`' does not let its tenants run it (spec.components.allowed: ' + variables.allowed.join(', ') + ')'`))
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   validatingTypeMeta,
		ObjectMeta: objectMeta(TenantClassOverrides),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "TenantClass"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{tenantRule(admissionregistrationv1.Create, admissionregistrationv1.Update)},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "names-a-class", Expression: `object.spec.?class.orValue('') != ''`},
				specChanged,
			},
			Variables: []admissionregistrationv1.Variable{
				{Name: "mine", Expression: `object.spec.class == params.metadata.name`},
				{Name: "overrides", Expression: `params.spec.?overrides.orValue([])`},
				{Name: "allowed", Expression: `params.spec.?components.?allowed.orValue([])`},
			},
			Validations:   validations,
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		},
	}
}

// TenantClassOverridesBinding evaluates TenantClassOverridesPolicy against every TenantClass;
// with none, every Tenant is let through (a tenant naming a class that does not exist stalls).
func TenantClassOverridesBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := clusterBinding(TenantClassOverrides)
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{
		Selector:                &metav1.LabelSelector{},
		ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
	}
	return b
}
