package operator

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
)

// newInformer is the cache's informer constructor, without the namespace index for the kinds
// Landlord never lists by namespace: it reads them by name, and an owner's change finds them
// by owner reference. That index holds, for every tenant namespace and every such kind, a set
// of its objects' keys: about 2 KB per tenant (20 MB at 10,000 tenants) that nothing reads. A
// list of one of these kinds in a namespace fails loudly ("Index with name namespace does not
// exist"), so a new read that needs the index is found by the first test that runs it.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if neverListedByNamespace(obj) {
		kept := toolscache.Indexers{}
		for name, fn := range indexers {
			if name != toolscache.NamespaceIndex {
				kept[name] = fn
			}
		}
		indexers = kept
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

func neverListedByNamespace(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Namespace, *rbacv1.RoleBinding, *corev1.ResourceQuota, *corev1.LimitRange,
		*networkingv1.NetworkPolicy, *corev1.ConfigMap, *corev1.Service:
		return true
	}
	return false
}
