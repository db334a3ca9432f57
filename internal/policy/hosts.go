package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// namespaceDomains are the DNS names the tenant may serve, from its namespace's annotation.
var namespaceDomains = admissionregistrationv1.Variable{
	Name: "domains",
	Expression: `namespaceObject.metadata.?annotations[?'` + tenancyv1alpha1.DomainsAnnotation + `'].orValue('')` +
		`.split(',').filter(d, d != '')`,
}

// allowedList names the allowed domains in a message.
var allowedList = admissionregistrationv1.Variable{
	Name:       "allowed",
	Expression: `size(variables.domains) == 0 ? 'none' : variables.domains.join(', ')`,
}

// allowed splices the allowed domains into a single-quoted string of a message expression.
const allowed = `' + variables.allowed + '`

// hostAllowed is a CEL condition: host h equals an allowed domain, or an allowed wildcard
// "*.x" covers it with exactly one more label. A wildcard host must itself be allowed: a
// wildcard domain does not cover a wider or narrower wildcard.
func hostAllowed(h string) string {
	return `variables.domains.exists(d, d == ` + h + ` || (d.startsWith('*.') && !` + h + `.startsWith('*') && ` +
		h + `.endsWith(d.substring(1)) && size(` + h + `) > size(d) - 1 && ` +
		`!` + h + `.substring(0, size(` + h + `) - size(d) + 1).contains('.')))`
}

// refused lists the hosts of variables.hosts the namespace may not serve, once each.
var refused = admissionregistrationv1.Variable{
	Name:       "refused",
	Expression: `variables.hosts.filter(host, !(` + hostAllowed("host") + `)).distinct()`,
}

// beyondDeletion matches every create and update of an Ingress or route but those that only
// serve its deletion: removing finalizers (a controller's, the garbage collector's, the
// tenant's own) and the garbage collector's changes to owner references. Labels and annotations
// are checked too, not only the spec: an object admitted before its namespace lost a domain
// must not be kept alive and retuned (a redirect annotation still takes the host's traffic), so
// an object for a domain the tenant no longer holds can only be deleted. Adding a finalizer is
// checked, since it would keep the object, and the host, from going.
var beyondDeletion = admissionregistrationv1.MatchCondition{
	Name: "beyond-deletion",
	Expression: `request.operation == 'CREATE' || object.spec != oldObject.spec || ` +
		`object.metadata.?labels.orValue({}) != oldObject.metadata.?labels.orValue({}) || ` +
		`object.metadata.?annotations.orValue({}) != oldObject.metadata.?annotations.orValue({}) || ` +
		`object.metadata.?finalizers.orValue([]).exists(f, !(f in oldObject.metadata.?finalizers.orValue([])))`,
}

// IngressHostsPolicy keeps a tenant's Ingresses to its own domains, so it can never take
// another tenant's (or the platform's) traffic: every host in spec.rules and spec.tls must be
// allowed, every rule must name a host, and no default backend may catch the rest. It is checked
// on every change but those deleting needs (beyondDeletion).
func IngressHostsPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(IngressHosts, []admissionregistrationv1.NamedRuleWithOperations{rule("networking.k8s.io", []string{"v1"}, "ingresses")},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{beyondDeletion},
			Variables: []admissionregistrationv1.Variable{
				namespaceDomains,
				allowedList,
				{Name: "hosts", Expression: `object.spec.?rules.orValue([]).filter(r, r.?host.orValue('') != '').map(r, r.host) + ` +
					`object.spec.?tls.orValue([]).map(t, t.?hosts.orValue([])).flatten()`},
				refused,
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`size(variables.refused) == 0`,
					"Ingress hosts in tenant namespaces must be among the tenant's domains",
					`'Ingress hosts ' + variables.refused.join(', ') + ' are not among the domains of `+namespaceName+` (`+allowed+`): `+
						`use one of those; the platform team adds domains to the Tenant'`),
				deny(`object.spec.?rules.orValue([]).all(r, r.?host.orValue('') != '')`,
					"every rule of an Ingress in a tenant namespace must name a host",
					`'every rule of an Ingress in `+namespaceName+` must name a host, one of `+allowed+`: a rule without one would take traffic for any host'`),
				deny(`!has(object.spec.defaultBackend)`,
					"Ingresses in tenant namespaces may not set spec.defaultBackend",
					`'Ingresses in `+namespaceName+` may not set spec.defaultBackend: it would take traffic for hosts the tenant does not own; `+
						`route with rules for its domains (`+allowed+`) instead'`),
			},
		})
}

// RouteHostnamesPolicy does for Gateway API routes what IngressHostsPolicy does for Ingresses:
// spec.hostnames must be listed and allowed, since a route without hostnames takes every host
// its gateway listens on. It is installed whether or not the Gateway API is, so it is in force
// from the moment the CRDs appear.
func RouteHostnamesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(RouteHostnames, []admissionregistrationv1.NamedRuleWithOperations{
		rule("gateway.networking.k8s.io", []string{"*"}, "httproutes", "grpcroutes", "tlsroutes"),
	}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: []admissionregistrationv1.MatchCondition{beyondDeletion},
		Variables: []admissionregistrationv1.Variable{
			namespaceDomains,
			allowedList,
			{Name: "hosts", Expression: `object.spec.?hostnames.orValue([])`},
			refused,
		},
		Validations: []admissionregistrationv1.Validation{
			deny(`size(variables.refused) == 0`,
				"route hostnames in tenant namespaces must be among the tenant's domains",
				`'route hostnames ' + variables.refused.join(', ') + ' are not among the domains of `+namespaceName+` (`+allowed+`): `+
					`use one of those; the platform team adds domains to the Tenant'`),
			deny(`size(variables.hosts) > 0`,
				"routes in tenant namespaces must list spec.hostnames",
				`'routes in `+namespaceName+` must list spec.hostnames, from `+allowed+`: a route without hostnames would take traffic for every host of its gateway'`),
		},
	})
}

// ServingFinalizers is the policy over finalizers on the objects that serve a tenant's domains.
const ServingFinalizers = "landlord-serving-finalizers"

// ServingFinalizersPolicy refuses tenant users a finalizer on an Ingress or a Gateway API route,
// added at create or later: when a domain passes to another tenant, Landlord deletes the old
// holder's objects naming it and hands the domain over once they are gone, and a finalizer
// nothing removes would hold the new holder off until an administrator came. Controllers that
// clean up after an Ingress (a cloud load balancer's) add theirs as themselves: Kubernetes'
// own, ServiceAccounts of namespaces that are not tenants', the operator and the trusted
// principals are let through,
// and so is whoever may patch the namespace's quota (the platform's administrators). Removing a
// finalizer stays anyone's.
func ServingFinalizersPolicy(op Operator) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(ServingFinalizers, []admissionregistrationv1.NamedRuleWithOperations{
		rule("networking.k8s.io", []string{"v1"}, "ingresses"),
		rule("gateway.networking.k8s.io", []string{"*"}, "httproutes", "grpcroutes", "tlsroutes"),
	}, admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConditions: append([]admissionregistrationv1.MatchCondition{notTheOperatorNorKubernetes(op), {
			// An Ingress controller of the platform's (a cloud load balancer's, in a namespace of
			// its own) adds its finalizer as its ServiceAccount, which lives in no tenant
			// namespace: a tenant's ServiceAccounts all do.
			Name: "not-a-platform-service-account",
			Expression: `!(request.userInfo.username.startsWith('system:serviceaccount:') && ` +
				`!request.userInfo.username.split(':')[2].startsWith(` + cel(op.NamespacePrefix) + `))`,
		}}, op.trustedCondition()...),
		Variables: []admissionregistrationv1.Variable{
			{Name: "added", Expression: `object.metadata.?finalizers.orValue([]).filter(f, request.operation == 'CREATE' || !(f in oldObject.metadata.?finalizers.orValue([])))`},
		},
		Validations: []admissionregistrationv1.Validation{
			deny(`size(variables.added) == 0 || authorizer.group('').resource('resourcequotas').namespace(namespaceObject.metadata.name).check('patch').allowed()`,
				"Ingresses and routes in tenant namespaces may not be given finalizers: one would hold the handover of a domain to another tenant",
				`request.resource.resource + ' in `+namespaceName+` may not be given finalizers (' + variables.added.join(', ') + '): '+`+
					`'when a domain passes to another tenant, what names it here is deleted, and a finalizer would hold the new holder off'`),
		},
	})
}
