package tenantclaim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// refusal says why pool does not bind claim, made in a namespace labelled namespaceLabels, or
// "" when it does. Every label is judged, in key order, so that the message names the first of
// them the same way each time.
func refusal(pool *tenancyv1alpha1.TenantPool, claim *tenancyv1alpha1.TenantClaim, namespaceLabels map[string]string) string {
	if sel := pool.Spec.Claims.NamespaceSelector; sel != nil {
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return fmt.Sprintf("TenantPool %s's spec.claims.namespaceSelector is invalid (%v): it binds no claim", pool.Name, err)
		}
		if !selector.Matches(labels.Set(namespaceLabels)) {
			return fmt.Sprintf("TenantPool %s binds claims only from namespaces matching spec.claims.namespaceSelector (%s); namespace %s does not match",
				pool.Name, selector, claim.Namespace)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(claim.Spec.Labels)) {
		value := claim.Spec.Labels[key]
		i := slices.IndexFunc(pool.Spec.Claims.AllowedLabels, func(l tenancyv1alpha1.AllowedClaimLabel) bool { return l.Key == key })
		if i < 0 {
			return fmt.Sprintf("spec.labels.%s: TenantPool %s does not let a claim set the label %s (spec.claims.allowedLabels: %s)",
				key, pool.Name, key, allowedKeys(pool))
		}
		if allowed := pool.Spec.Claims.AllowedLabels[i].Values; len(allowed) > 0 && !slices.Contains(allowed, value) {
			return fmt.Sprintf("spec.labels.%s: TenantPool %s lets a claim set %s only to %s, not %q",
				key, pool.Name, key, strings.Join(allowed, ", "), value)
		}
	}
	return ""
}

// allowedKeys lists the label keys a pool lets claims set, for a message.
func allowedKeys(pool *tenancyv1alpha1.TenantPool) string {
	if len(pool.Spec.Claims.AllowedLabels) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(pool.Spec.Claims.AllowedLabels))
	for _, l := range pool.Spec.Claims.AllowedLabels {
		keys = append(keys, l.Key)
	}
	return strings.Join(keys, ", ")
}
