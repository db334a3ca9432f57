package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// TenantFinalizer is the policy that gives every new Tenant Landlord's finalizer.
const TenantFinalizer = "landlord-tenant-finalizer"

// TenantFinalizerObjects are the finalizer policy and its binding.
func TenantFinalizerObjects() []client.Object {
	return []client.Object{TenantFinalizerPolicy(), TenantFinalizerBinding()}
}

// TenantFinalizerPolicy adds Landlord's finalizer to every Tenant as it is created: a user's, a
// GitOps tool's, a pool's spare. The tenant then never needs the operator's own write of the
// finalizer, one request of the few a new tenant costs beyond its objects.
//
// It saves a write and guards nothing: the operator still adds the finalizer to a tenant that
// lacks it (one created before the policy, or whose finalizer was removed), so the policy fails
// open: a CEL error does not refuse a Tenant. One refusal is the API server's own: for up to
// about 5 seconds after the Tenant CRD is first served (a fresh install applies it and this
// policy together) or the API server starts, creates of Tenants are answered 503
// ServiceUnavailable, "Resource kind ... not found", whatever the failure policy, until the API
// server's poll of its OpenAPI document has seen the kind; clients retry
// (docs/troubleshooting.md). Only creates are matched: a
// finalizer removed later, by the operator when it finalizes or by hand, stays removed.
//
// The finalizer is metadata, and the mutation adds it only when missing, so a Tenant created
// with it is left as it is and a reinvocation changes nothing. It carries no field manager: a
// GitOps tool applying the Tenant server-side does not own it, and so never removes it.
func TenantFinalizerPolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	finalizer := cel(tenancyv1alpha1.Finalizer)
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   mutatingTypeMeta,
		ObjectMeta: objectMeta(TenantFinalizer),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{tenantRule(admissionregistrationv1.Create)},
			},
			Mutations: []admissionregistrationv1.Mutation{
				jsonPatch(
					`!has(object.metadata.finalizers) ?`,
					`  [JSONPatch{op: 'add', path: '/metadata/finalizers', value: [`+finalizer+`]}] :`,
					finalizer+` in object.metadata.finalizers ?`,
					`  [] :`,
					`  [JSONPatch{op: 'add', path: '/metadata/finalizers/-', value: `+finalizer+`}]`),
			},
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore),
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
}

// TenantFinalizerBinding applies TenantFinalizerPolicy to every Tenant: Tenants are
// cluster-scoped, so the policy's rules alone say what it reaches.
func TenantFinalizerBinding() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   mutatingBindingTypeMeta,
		ObjectMeta: objectMeta(TenantFinalizer),
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: TenantFinalizer},
	}
}
