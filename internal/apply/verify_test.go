package apply_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					writes++
					return c.Patch(ctx, obj, patch, opts...)
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

// The cache can lag behind the API server. Here someone removes a field of a quota; Landlord
// repairs it, and the quota controller writes the status of the edited quota and then of the
// repaired one. When Landlord reads the quota whole for the second time, the API server's copy
// already carries the last status write, while the cache has yet to show the repaired version.
// That version has the same content as what was read, so it needs no third read: what is read
// is remembered by the digest the cache gives its content.
func TestAReadAheadOfTheCacheIsRememberedByItsContent(t *testing.T) {
	ctx := context.Background()
	server := fake.NewClientBuilder().Build()
	key := client.ObjectKey{Namespace: "tenant-acme", Name: "quota"}
	get := func() *corev1.ResourceQuota {
		q := &corev1.ResourceQuota{}
		if err := server.Get(ctx, key, q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	update := func(q *corev1.ResourceQuota) *corev1.ResourceQuota {
		if err := server.Update(ctx, q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	// cachedAs is the quota as the operator's cache keeps it: metadata and a content digest.
	cachedAs := func(q *corev1.ResourceQuota) *corev1.ResourceQuota {
		q = q.DeepCopy()
		digest, err := apply.ContentDigest(q)
		if err != nil {
			t.Fatal(err)
		}
		q.Spec, q.Status = corev1.ResourceQuotaSpec{}, corev1.ResourceQuotaStatus{}
		apply.KeepInCache(q, digest)
		return q
	}

	var inCache *corev1.ResourceQuota
	reads := 0
	cache := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			inCache.DeepCopyInto(obj.(*corev1.ResourceQuota))
			return nil
		},
	})
	apiReader := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	applier := &apply.Applier{Client: cache, APIReader: apiReader, Memo: apply.NewMemo()}
	reconcile := func(cached *corev1.ResourceQuota, want apply.Result, wantReads int, what string) {
		t.Helper()
		inCache = cachedAs(cached)
		result, err := applier.Apply(ctx, quota("50"))
		if err != nil {
			t.Fatal(err)
		}
		if result != want || reads != wantReads {
			t.Errorf("%s: %s after %d reads in all, want %s after %d", what, result, reads, want, wantReads)
		}
	}

	if _, err := (&apply.Applier{Client: server, APIReader: server}).Apply(ctx, quota("50")); err != nil {
		t.Fatal(err)
	}
	reconcile(get(), apply.Unchanged, 0, "the quota as applied is taken from the cache's record")
	edited := get()
	delete(edited.Spec.Hard, corev1.ResourcePods)
	edited = update(edited)
	reconcile(edited, apply.Repaired, 1, "the edited quota is read whole and repaired")
	// The quota controller's status write of the edited quota, which the API server took before
	// the repair; in the cache only now.
	editedCounted := edited.DeepCopy()
	editedCounted.ResourceVersion += "-counted"
	editedCounted.Status.Hard = corev1.ResourceList{}
	repaired := get()
	counted := repaired.DeepCopy()
	counted.Status.Hard = counted.Spec.Hard
	counted = update(counted)
	reconcile(editedCounted, apply.Unchanged, 2, "the edited quota's status write is read whole, and the server's copy is already repaired")
	reconcile(repaired, apply.Unchanged, 2, "the repaired quota, reaching the cache after that read, is known by its content")
	reconcile(counted, apply.Unchanged, 2, "the repaired quota's status write is known by its resourceVersion")
}
