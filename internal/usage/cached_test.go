package usage_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/usage"
)

// A status write is a JSON merge patch, which leaves alone what it does not name: computed
// against a cached tenant whose usage is compact, it could not remove what a sample no longer
// has. Taken and decoded, as the reconciler does for a pending sample, it removes it.
func TestAStatusWriteFromACachedTenantRemovesWhatTheSampleNoLongerHas(t *testing.T) {
	sampled := &tenancyv1alpha1.TenantUsage{
		SampledAt: metav1.Now(),
		Resources: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")},
		Used:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
	}
	cached := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Status: tenancyv1alpha1.TenantStatus{Usage: sampled}}
	if err := usage.Compact(cached); err != nil {
		t.Fatal(err)
	}
	cached.ManagedFields = apply.CacheMarker // as the cache transform leaves it
	for _, tc := range []struct {
		name     string
		restore  bool
		wantNull bool
	}{
		{"restored, the write removes what pods use once the metrics API is gone", true, true},
		{"not restored, it could not: the reason the reconciler decodes it", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var patch string
			c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithInterceptorFuncs(interceptor.Funcs{
				SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
					data, err := p.Data(obj)
					patch = string(data)
					return err
				},
			}).Build()
			tenant := cached.DeepCopy()
			if tc.restore {
				tenant.Status.Usage = usage.Take(tenant).Usage() // as the reconciler does for a pending sample
			}
			next := *tenant.Status.DeepCopy()
			next.Usage = &tenancyv1alpha1.TenantUsage{SampledAt: metav1.Now(), Resources: sampled.Resources}
			if err := writes.PatchStatus(context.Background(), c, tenant, &tenant.Status, next); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(patch, `"used":null`); got != tc.wantNull {
				t.Errorf("the patch %s removes used: %v, want %v", patch, got, tc.wantNull)
			}
			if strings.Contains(patch, usage.CachedAnnotation) {
				t.Errorf("the patch %s carries the cache's record", patch)
			}
		})
	}
}
