package operator

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rules(verbs ...string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs}}
}

func TestCacheTransform(t *testing.T) {
	t.Run("roles with equal rules share one copy", func(t *testing.T) {
		transform := cacheTransform()
		a, _ := transform(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "a"}, Rules: rules("get", "list")})
		b, _ := transform(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "b"}, Rules: rules("get", "list")})
		c, _ := transform(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "c"}, Rules: rules("get")})
		ra, rb, rc := a.(*rbacv1.Role).Rules, b.(*rbacv1.Role).Rules, c.(*rbacv1.Role).Rules
		if &ra[0] != &rb[0] {
			t.Error("equal rules are not shared")
		}
		if &ra[0] == &rc[0] || len(rc[0].Verbs) != 1 {
			t.Error("different rules were merged")
		}
	})
	t.Run("managed fields are stripped", func(t *testing.T) {
		out, _ := cacheTransform()(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "landlord"}},
		}})
		if len(out.(*rbacv1.RoleBinding).ManagedFields) != 0 {
			t.Error("managed fields kept")
		}
	})
	t.Run("the set of distinct rules is bounded", func(t *testing.T) {
		s := &ruleSets{sets: map[string][]rbacv1.PolicyRule{}}
		for i := range 2 * maxRuleSets {
			s.intern(rules(fmt.Sprint("verb", i)))
		}
		if len(s.sets) != maxRuleSets {
			t.Errorf("%d rule sets kept, want at most %d", len(s.sets), maxRuleSets)
		}
	})
}
