package config

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// MaxSchedulingAllowances bounds isolation.priorityClasses and isolation.tolerations: each is
// written on every tenant namespace, and read on every pod a tenant creates.
const MaxSchedulingAllowances = 16

// validateScheduling checks isolation.priorityClasses and isolation.tolerations. Each toleration
// must be written exactly as the admission policy writes a pod's ("key", "key=value", then
// ":Effect"), or it would match nothing.
func (i Isolation) validateScheduling() []error {
	var errs []error
	for path, list := range map[string][]string{"isolation.priorityClasses": i.PriorityClasses, "isolation.tolerations": i.Tolerations} {
		if len(list) > MaxSchedulingAllowances {
			errs = append(errs, fmt.Errorf("%s: %d entries, more than %d", path, len(list), MaxSchedulingAllowances))
		}
		for n, item := range list {
			if slices.Index(list, item) != n {
				errs = append(errs, fmt.Errorf("%s[%d]: %q is listed twice", path, n, item))
			}
		}
	}
	for n, class := range i.PriorityClasses {
		if msgs := validation.IsDNS1123Subdomain(class); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("isolation.priorityClasses[%d]: %q is not a PriorityClass name: %v", n, class, msgs))
		}
	}
	for n, tol := range i.Tolerations {
		if err := validateToleration(tol); err != nil {
			errs = append(errs, fmt.Errorf("isolation.tolerations[%d]: %q %w", n, tol, err))
		}
	}
	return errs
}

// validateToleration checks "key", "key=value", "key:Effect" or "key=value:Effect".
func validateToleration(s string) error {
	rest, effect, hasEffect := strings.Cut(s, ":")
	key, value, hasValue := strings.Cut(rest, "=")
	if hasEffect {
		switch corev1.TaintEffect(effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return fmt.Errorf("has effect %q, not NoSchedule, PreferNoSchedule or NoExecute", effect)
		}
	}
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		return fmt.Errorf("has no taint key: %v (write key, key=value, key:Effect or key=value:Effect)", msgs)
	}
	if strings.HasPrefix(key, "node.kubernetes.io/") {
		// Kubernetes' own: a cordoned node, one under pressure, one that failed. Tolerating them
		// would put tenants' pods on nodes being drained or evicting other tenants' pods.
		return fmt.Errorf("names a taint of Kubernetes' node lifecycle (node.kubernetes.io/): tenants' pods may not tolerate cordoned nodes or nodes under pressure")
	}
	if hasValue {
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return fmt.Errorf("has no taint value: %v", msgs)
		}
	}
	return nil
}

// MaxTrustedPrincipals bounds isolation.trustedPrincipals: each is checked on every request the
// guards see.
const MaxTrustedPrincipals = 16

// untrustable are the groups every user, every ServiceAccount or anyone at all is in: trusting
// one would let tenants past the guards.
var untrustable = []string{user.AllAuthenticated, user.AllUnauthenticated, serviceaccount.AllServiceAccountsGroup}

// validateTrusted checks isolation.trustedPrincipals: each a User, Group or ServiceAccount with
// a name, and none a principal a tenant could be or become. A tenant admin may create
// ServiceAccounts in its own namespace, so no ServiceAccount of a namespace that is or may
// become a tenant's (one named with prefix) may be trusted, under either spelling; nor may the
// groups of every ServiceAccount of such a namespace.
func (i Isolation) validateTrusted(prefix string) []error {
	var errs []error
	if len(i.TrustedPrincipals) > MaxTrustedPrincipals {
		errs = append(errs, fmt.Errorf("isolation.trustedPrincipals: %d entries, more than %d", len(i.TrustedPrincipals), MaxTrustedPrincipals))
	}
	tenantNamespace := func(ns string) bool { return strings.HasPrefix(ns, prefix) }
	for n, s := range i.TrustedPrincipals {
		path := fmt.Sprintf("isolation.trustedPrincipals[%d]", n)
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: required", path))
			continue
		}
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user.Anonymous {
				errs = append(errs, fmt.Errorf("%s.name: %q is every unauthenticated request, never trusted", path, s.Name))
			}
			if ns, _, err := serviceaccount.SplitUsername(s.Name); err == nil && tenantNamespace(ns) {
				errs = append(errs, fmt.Errorf("%s.name: %q is a ServiceAccount of namespace %s, which a tenant may hold (namespacePrefix %q)", path, s.Name, ns, prefix))
			}
		case rbacv1.GroupKind:
			if slices.Contains(untrustable, s.Name) {
				errs = append(errs, fmt.Errorf("%s.name: %q holds every user or ServiceAccount, tenants' too; name the tool's own group or ServiceAccount", path, s.Name))
			}
			if ns, ok := strings.CutPrefix(s.Name, serviceaccount.ServiceAccountGroupPrefix); ok && tenantNamespace(ns) {
				errs = append(errs, fmt.Errorf("%s.name: %q holds the ServiceAccounts of namespace %s, which a tenant may hold (namespacePrefix %q)", path, s.Name, ns, prefix))
			}
		case rbacv1.ServiceAccountKind:
			if msgs := validation.IsDNS1123Label(s.Namespace); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s.namespace: %q is not a namespace name: %v", path, s.Namespace, msgs))
			} else if tenantNamespace(s.Namespace) {
				errs = append(errs, fmt.Errorf("%s.namespace: %q is or may become a tenant's namespace (namespacePrefix %q), whose admins create ServiceAccounts; run the tool in a namespace of the platform's", path, s.Namespace, prefix))
			}
		default:
			errs = append(errs, fmt.Errorf("%s.kind: %q is not User, Group or ServiceAccount", path, s.Kind))
		}
		for m := range n {
			if p := i.TrustedPrincipals[m]; p.Kind == s.Kind && p.Name == s.Name && p.Namespace == s.Namespace {
				errs = append(errs, fmt.Errorf("%s: listed twice (also [%d])", path, m))
				break
			}
		}
	}
	return errs
}
