package config

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
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
	if hasValue {
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			return fmt.Errorf("has no taint value: %v", msgs)
		}
	}
	return nil
}
