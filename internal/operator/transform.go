package operator

import (
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/landlord-dev/landlord/internal/apply"
)

// cacheTransform drops managed fields, as everywhere, after reading from them the one thing
// Landlord needs: whether someone else owns a field in an object's body
// (apply.MarkForeignFields), which drift repair of the isolation objects acts on.
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		if m, err := meta.Accessor(obj); err == nil {
			apply.MarkForeignFields(m)
		}
		return strip(obj)
	}
}
