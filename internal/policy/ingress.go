package policy

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// LegacyIngressClassAnnotation names an Ingress's class the way it was done before
// spec.ingressClassName; controllers still honour it.
const LegacyIngressClassAnnotation = "kubernetes.io/ingress.class"

// InjectingIngressAnnotations are Ingress annotations that inject configuration into the ingress
// controller itself rather than tune the Ingress's own routes. The controller serves every
// tenant: such an annotation can proxy to another tenant's services, serve hosts the tenant does
// not own, send requests elsewhere, or read the controller's credentials.
//
// Sources: ingress-nginx's annotation risk levels (docs/user-guide/nginx-configuration/
// annotations-risk.md, "Critical" and "High") and its advisories CVE-2021-25742 (snippets),
// CVE-2023-5043 (configuration-snippet), CVE-2025-24514 (auth-url), CVE-2025-1097
// (auth-tls-match-cn) and CVE-2025-1098 (mirror-target, mirror-host); NGINX Inc.'s controller
// (nginx.org/server-snippets, nginx.org/location-snippets); HAProxy Technologies' controller
// (haproxy.org/*-config-snippet); haproxy-ingress (haproxy-ingress.github.io/config-*, formerly
// ingress.kubernetes.io/config-*). Traefik takes no configuration from Ingress annotations
// beyond references to its own Middleware objects, which it confines to the Ingress's namespace
// unless the platform allows otherwise.
var InjectingIngressAnnotations = struct {
	// Suffixes end any annotation key refused, whatever its prefix: every controller's snippets.
	Suffixes []string
	// Names are refused under any prefix (ingress-nginx's prefix is configurable).
	Names []string
	// Substrings of a name refuse it under any prefix: directives that proxy elsewhere.
	Substrings []string
	// Prefixes begin the keys refused: raw configuration sections.
	Prefixes []string
}{
	Suffixes: []string{"-snippet", "snippets"},
	Names: []string{
		"configuration-snippet", "server-snippet", "auth-snippet", "stream-snippet", "modsecurity-snippet",
		"auth-url", "auth-signin", "auth-proxy-set-headers", "auth-tls-match-cn",
		"server-alias",
		"mirror-target", "mirror-uri", "mirror-host",
	},
	Substrings: []string{"proxy-pass"},
	Prefixes:   []string{"haproxy-ingress.github.io/config-", "ingress.kubernetes.io/config-"},
}

// ReferringIngressAnnotations name a Secret or ConfigMap the controller reads for the Ingress,
// as "name" or "namespace/name" (ingress-nginx: basic-auth users, client CA, upstream TLS
// certificates, extra headers). The controller can read every namespace's, so they may name the
// Ingress's own namespace only: another tenant's CA or users must not let a tenant in.
var ReferringIngressAnnotations = []string{"auth-secret", "auth-tls-secret", "proxy-ssl-secret", "custom-headers"}

// injectingAnnotation is a CEL condition: annotation key k injects controller configuration.
func injectingAnnotation(k string) string {
	name := k + `.substring(` + k + `.lastIndexOf('/') + 1)`
	var conds []string
	for _, s := range InjectingIngressAnnotations.Suffixes {
		conds = append(conds, k+`.endsWith(`+cel(s)+`)`)
	}
	conds = append(conds, name+` in `+celList(InjectingIngressAnnotations.Names))
	for _, s := range InjectingIngressAnnotations.Substrings {
		conds = append(conds, name+`.contains(`+cel(s)+`)`)
	}
	for _, p := range InjectingIngressAnnotations.Prefixes {
		conds = append(conds, k+`.startsWith(`+cel(p)+`)`)
	}
	return strings.Join(conds, " || ")
}

// namespaceIngressClasses are the classes the tenant's Ingresses may name, from its namespace's
// annotation; none means any.
var namespaceIngressClasses = admissionregistrationv1.Variable{
	Name: "classes",
	Expression: `namespaceObject.metadata.?annotations[?'` + tenancyv1alpha1.IngressClassesAnnotation + `'].orValue('')` +
		`.split(',').filter(c, c != '')`,
}

// IngressClassesPolicy keeps a tenant's Ingresses to the ingress controllers it may use: the
// class in spec.ingressClassName and in the legacy kubernetes.io/ingress.class annotation must
// both be among the namespace's classes. While the namespace lists classes, an Ingress naming
// none is refused too: a controller watching Ingresses without a class, or the cluster's
// default class, may be any controller (the DefaultIngressClass admission plugin fills in the
// default class first, so with a default that is allowed, an Ingress naming none is admitted).
// A namespace listing no classes leaves the class to the tenant.
func IngressClassesPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	legacy := func(obj string) string {
		return obj + `.metadata.?annotations[?'` + LegacyIngressClassAnnotation + `'].orValue('')`
	}
	return validatingPolicy(IngressClasses, []admissionregistrationv1.NamedRuleWithOperations{rule("networking.k8s.io", []string{"v1"}, "ingresses")},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "class-changed",
				Expression: `request.operation == 'CREATE' || object.spec != oldObject.spec || ` + legacy("object") + ` != ` + legacy("oldObject"),
			}},
			Variables: []admissionregistrationv1.Variable{
				namespaceIngressClasses,
				{Name: "named", Expression: `(object.spec.?ingressClassName.orValue('') != '' ? [object.spec.ingressClassName] : []) + ` +
					`(` + legacy("object") + ` != '' ? [` + legacy("object") + `] : [])`},
				{Name: "refused", Expression: `variables.named.filter(c, !(c in variables.classes)).distinct()`},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`size(variables.classes) == 0 || size(variables.refused) == 0`,
					"Ingresses in tenant namespaces may name only the tenant's Ingress classes",
					`'Ingress class ' + variables.refused.join(', ') + ' is not allowed in `+namespaceName+`: set spec.ingressClassName to one of ' + `+
						`variables.classes.join(', ') + ' and leave out the `+LegacyIngressClassAnnotation+` annotation; the platform team adds classes to the Tenant'`),
				deny(`size(variables.classes) == 0 || size(variables.named) > 0`,
					"Ingresses in tenant namespaces must name one of the tenant's Ingress classes",
					`'Ingresses in `+namespaceName+` must name their class: set spec.ingressClassName to one of ' + variables.classes.join(', ') + `+
						`'. An Ingress without one may be served by any controller that takes them, or by the cluster\'s default class'`),
			},
		})
}

// IngressAnnotationsPolicy refuses Ingress annotations that inject configuration into the
// shared ingress controller (InjectingIngressAnnotations), and references to another
// namespace's Secrets and ConfigMaps (ReferringIngressAnnotations). Other annotations, which
// tune the Ingress's own routes, stay the tenant's.
func IngressAnnotationsPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return validatingPolicy(IngressAnnotations, []admissionregistrationv1.NamedRuleWithOperations{rule("networking.k8s.io", []string{"v1"}, "ingresses")},
		admissionregistrationv1.ValidatingAdmissionPolicySpec{
			// On every change but those deleting needs, as the hosts are: an annotation admitted
			// before this policy, or before the list grew, is not kept alive by later edits.
			MatchConditions: []admissionregistrationv1.MatchCondition{beyondDeletion},
			Variables: []admissionregistrationv1.Variable{
				{Name: "annotations", Expression: `object.metadata.?annotations.orValue({})`},
				{Name: "injecting", Expression: `variables.annotations.filter(k, ` + injectingAnnotation("k") + `)`},
				{Name: "foreign", Expression: `variables.annotations.filter(k, k.substring(k.lastIndexOf('/') + 1) in ` + celList(ReferringIngressAnnotations) + ` && ` +
					`variables.annotations[k].contains('/') && !variables.annotations[k].startsWith(namespaceObject.metadata.name + '/'))`},
			},
			Validations: []admissionregistrationv1.Validation{
				deny(`size(variables.injecting) == 0`,
					"Ingresses in tenant namespaces may not carry annotations that inject configuration into the ingress controller (snippets, auth URLs, server aliases, mirrors)",
					`(size(variables.injecting) == 1 ? 'the Ingress annotation ' + variables.injecting[0] + ' is' : 'the Ingress annotations ' + variables.injecting.join(', ') + ' are') + `+
						`' not allowed in `+namespaceName+`: they inject configuration into the ingress controller every tenant shares, which could reach other tenants\' `+
						`traffic and the controller\'s credentials. Remove them; annotations that tune your own routes (rewrites, timeouts, body size, redirects) stay allowed, `+
						`and the platform team can configure the controller itself'`),
				deny(`size(variables.foreign) == 0`,
					"Ingress annotations in tenant namespaces may refer only to Secrets and ConfigMaps of their own namespace",
					`'the Ingress annotations ' + variables.foreign.map(k, k + '=' + variables.annotations[k]).join(', ') + ' refer to another namespace than `+namespaceName+`: `+
						`the ingress controller would use another tenant\'s Secret or ConfigMap. Name one in `+namespaceName+`, without a namespace'`),
			},
		})
}
