package tenantclaim

import (
	"context"
	"sync"
	"testing"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	. "github.com/landlord-dev/landlord/internal/controller/controllertest"
)

// Between a claim's Bound status write and the cache showing it, a spare's event can bring the
// claim back. The process knows it wrote that status: writing it again would be refused (the
// write carries the stale resourceVersion) and would only hold up the next customer's bind in
// the claim controller's queue. Under a mass create, a third of the claim controller's status
// writes were such refusals.
func TestAClaimThisProcessBoundIsNotWrittenAgainWhileTheCacheLags(t *testing.T) {
	ctx := context.Background()
	inner, _ := SignupClient(t, 1)
	pending := Get(t, inner, client.ObjectKey{Namespace: "default", Name: "new"}, &tenancyv1alpha1.TenantClaim{})
	lagging := false
	writes := 0
	c := interceptor.NewClient(inner.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if claim, ok := obj.(*tenancyv1alpha1.TenantClaim); ok && lagging && key.Name == pending.Name {
				// The cache still holds the claim as it was before its bind.
				pending.DeepCopyInto(claim)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes++
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			writes++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	cfg := config.Default()
	claims := &Reconciler{Client: c, Urgent: c, Config: &cfg, Recorder: events.NewFakeRecorder(10)}

	if _, err := claims.Reconcile(ctx, ClaimRequest("new")); err != nil {
		t.Fatal(err)
	}
	if got := Get(t, inner, client.ObjectKey{Namespace: "default", Name: "new"}, &tenancyv1alpha1.TenantClaim{}); got.Status.Phase != tenancyv1alpha1.ClaimBound {
		t.Fatalf("claim status = %+v, want Bound", got.Status)
	}
	if writes != 2 {
		t.Fatalf("the bind took %d writes, want 2 (the spare, the claim's status)", writes)
	}

	lagging, writes = true, 0
	for range 3 {
		if _, err := claims.Reconcile(ctx, ClaimRequest("new")); err != nil {
			t.Fatal(err)
		}
	}
	if writes != 0 {
		t.Errorf("%d writes for a claim this process bound, seen Pending in a lagging cache; want none", writes)
	}

	t.Run("once the cache shows it Bound, a later bind of a claim of the same name is written again", func(t *testing.T) {
		lagging = false
		if _, err := claims.Reconcile(ctx, ClaimRequest("new")); err != nil {
			t.Fatal(err)
		}
		if _, ok := claims.written.Load(client.ObjectKeyFromObject(pending)); ok {
			t.Error("the claim's written status is still remembered after the cache showed it")
		}
	})
}

// A claim bound and deleted before the cache showed it Bound is gone by the next reconcile, which
// then knows only its name: what the process remembered of it goes all the same, or a signup
// churn would grow the operator's memory with every such claim.
func TestAClaimDeletedBeforeTheCacheShowedItBoundLeavesNothingRemembered(t *testing.T) {
	ctx := context.Background()
	inner, reader := SignupClient(t, 1)
	cfg := config.Default()
	claims := &Reconciler{Client: reader, Urgent: reader, Config: &cfg, Recorder: events.NewFakeRecorder(10)}
	if _, err := claims.Reconcile(ctx, ClaimRequest("new")); err != nil {
		t.Fatal(err)
	}
	claim := Get(t, inner, client.ObjectKey{Namespace: "default", Name: "new"}, &tenancyv1alpha1.TenantClaim{})
	if err := inner.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Reconcile(ctx, ClaimRequest("new")); err != nil {
		t.Fatal(err)
	}
	remembered := 0
	for _, m := range []*sync.Map{&claims.binds, &claims.written} {
		m.Range(func(any, any) bool { remembered++; return true })
	}
	if remembered != 0 {
		t.Errorf("%d entries remembered for a claim that is gone", remembered)
	}
}
