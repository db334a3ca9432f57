package operator

import (
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// cacheTransform strips managed fields, as everywhere, and lets cached Roles with the same rules
// share one copy of them. Every tenant has the same three Roles, and their rules were the largest
// part of the cache after the objects' metadata (16 KB per tenant). Nothing changes an object in
// the cache: readers get a deep copy, or (the applier) only read.
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	rules := &ruleSets{sets: map[string][]rbacv1.PolicyRule{}}
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		if role, ok := obj.(*rbacv1.Role); ok {
			role.Rules = rules.intern(role.Rules)
		}
		return obj, nil
	}
}

// ruleSets holds the distinct rule lists seen, up to maxRuleSets: Roles edited by hand into
// many shapes are cached as they are rather than grow the set without bound.
type ruleSets struct {
	mu   sync.Mutex
	sets map[string][]rbacv1.PolicyRule
}

const maxRuleSets = 64

func (s *ruleSets) intern(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	list := rbacv1.Role{Rules: rules}
	raw, err := list.Marshal()
	if err != nil {
		return rules
	}
	key := string(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if shared, ok := s.sets[key]; ok {
		return shared
	}
	if len(s.sets) < maxRuleSets {
		s.sets[key] = rules
	}
	return rules
}
