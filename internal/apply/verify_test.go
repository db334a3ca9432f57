package apply_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/landlord-dev/landlord/internal/apply"
)

func quota(pods string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "quota"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(pods)}},
	}
}

// An object the cache keeps without its body, carrying the digest Landlord applied it with and
// no other field manager, is taken for Landlord's without a read: that is what spares a restarted
// operator thousands of GETs. Verify is for when that is in doubt (a person asked for a
// reconcile): the object is read from the API server and compared whole, and a change that the
// cache's record does not show (here, made under Landlord's own field manager) is put right.
func TestVerifyComparesWithTheAPIServersCopyRatherThanTrustingTheCachesRecord(t *testing.T) {
	cases := map[string]struct {
		verify     bool
		want       apply.Result
		wantReads  int
		wantWrites int
		// wantPods is the quota's pods limit on the server afterwards.
		wantPods int64
	}{
		"without verify, the cache's record is trusted and nothing is read or written": {verify: false, want: apply.Unchanged, wantReads: 0, wantWrites: 0, wantPods: 5000},
		"with verify, the API server's copy is read and the drift repaired":            {verify: true, want: apply.Repaired, wantReads: 1, wantWrites: 1, wantPods: 50},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			server := fake.NewClientBuilder().Build()
			// Landlord applies the quota; the cache keeps it, as the operator's transform does,
			// with a digest of its content in place of its body.
			if _, err := (&apply.Applier{Client: server, APIReader: server}).Apply(ctx, quota("50")); err != nil {
				t.Fatal(err)
			}
			cached := &corev1.ResourceQuota{}
			if err := server.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: "quota"}, cached); err != nil {
				t.Fatal(err)
			}
			digest, err := apply.ContentDigest(cached)
			if err != nil {
				t.Fatal(err)
			}
			cached.Spec = corev1.ResourceQuotaSpec{}
			apply.KeepInCache(cached, digest)
			// On the server, the quota changes without the cache's record showing it.
			drifted := &corev1.ResourceQuota{}
			if err := server.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: "quota"}, drifted); err != nil {
				t.Fatal(err)
			}
			drifted.Spec.Hard[corev1.ResourcePods] = resource.MustParse("5000")
			if err := server.Update(ctx, drifted); err != nil {
				t.Fatal(err)
			}

			reads, writes := 0, 0
			cache := interceptor.NewClient(server, interceptor.Funcs{
				Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
					cached.DeepCopyInto(obj.(*corev1.ResourceQuota))
					return nil
				},
				Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
					writes++
					return c.Apply(ctx, obj, opts...)
				},
			})
			apiReader := interceptor.NewClient(server, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads++
					return c.Get(ctx, key, obj, opts...)
				},
			})
			applier := &apply.Applier{Client: cache, APIReader: apiReader, Memo: apply.NewMemo(), Verify: tc.verify}

			result, err := applier.Apply(ctx, quota("50"))
			if err != nil {
				t.Fatal(err)
			}
			if result != tc.want || reads != tc.wantReads || writes != tc.wantWrites {
				t.Errorf("result %s, %d reads, %d writes; want %s, %d reads, %d writes", result, reads, writes, tc.want, tc.wantReads, tc.wantWrites)
			}
			live := &corev1.ResourceQuota{}
			if err := server.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: "quota"}, live); err != nil {
				t.Fatal(err)
			}
			if got := live.Spec.Hard.Pods().Value(); got != tc.wantPods {
				t.Errorf("pods on the server = %d, want %d", got, tc.wantPods)
			}
		})
	}
}
