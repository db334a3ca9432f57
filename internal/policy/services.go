package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// ServiceExposurePolicy keeps tenants from exposing services outside the cluster's ingress:
// NodePort and LoadBalancer Services open ports on every node or a cloud load balancer (the
// quota already caps them at zero; this says why), and externalIPs would take traffic for
// addresses the tenant does not own. Nor may a Service be of type ExternalName. Used
// as an Ingress backend, one naming web.tenant-b.svc.cluster.local makes the shared ingress
// controller proxy into tenant B, past tenant B's NetworkPolicies, which admit the controller
// (the CVE-2021-25740 pattern).
func ServiceExposurePolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(ServiceExposure, []admissionregistrationv1.NamedRuleWithOperations{rule("", []string{"v1"}, "services")},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{specChanged},
			Validations: []admissionregistrationv1.Validation{
				deny(`!(object.spec.?type.orValue('ClusterIP') in ['NodePort', 'LoadBalancer'])`,
					"Services of type NodePort or LoadBalancer are not allowed in tenant namespaces",
					`'Services of type ' + object.spec.type + ' are not allowed in `+namespaceName+`: use type ClusterIP and publish the service `+
						`through an Ingress or HTTPRoute for one of the tenant domains'`),
				deny(`object.spec.?type.orValue('ClusterIP') != 'ExternalName'`,
					"Services of type ExternalName are not allowed in tenant namespaces",
					`'Services of type ExternalName are not allowed in `+namespaceName+`: the ingress controller every tenant shares, and any client, `+
						`would be sent to ' + object.spec.?externalName.orValue('its externalName') + ', which may be another tenant\'s service. `+
						`Select your own pods with a ClusterIP Service, and call hosts outside the namespace by their own names'`),
				deny(`object.spec.?externalIPs.orValue([]).size() == 0`,
					"Services in tenant namespaces may not set spec.externalIPs",
					`'Services in `+namespaceName+` may not set spec.externalIPs (' + object.spec.externalIPs.join(', ') + `+
						`'): they would take traffic for addresses the tenant does not own; remove them'`),
			},
		})
}
