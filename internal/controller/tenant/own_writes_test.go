package tenant

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// TestAReconcileOfATenantOlderThanItsOwnLastWriteWorksFromThatWrite: the cache sees a status
// write a moment after it is made. A reconcile that read the tenant from before then would
// work from a status older than the one just written: it would provision "again" (a second
// Provisioned event), take a component's version change for a first apply (no
// ComponentApplied event), and write the older view back over the newer one.
func TestAReconcileOfATenantOlderThanItsOwnLastWriteWorksFromThatWrite(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", UID: types.UID("acme-uid"), Generation: 1, Finalizers: []string{tenancyv1alpha1.Finalizer}},
		Spec:       tenancyv1alpha1.TenantSpec{Suspend: true},
	}
	var (
		stale   *tenancyv1alpha1.Tenant // what a lagging cache answers, when set
		patches int
	)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tenant).WithStatusSubresource(&tenancyv1alpha1.Tenant{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c ctrl.WithWatch, key ctrl.ObjectKey, obj ctrl.Object, opts ...ctrl.GetOption) error {
				if got, ok := obj.(*tenancyv1alpha1.Tenant); ok && stale != nil {
					stale.DeepCopyInto(got)
					return nil
				}
				return c.Get(ctx, key, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c ctrl.Client, sub string, obj ctrl.Object, patch ctrl.Patch, opts ...ctrl.SubResourcePatchOption) error {
				patches++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	cfg := config.Default()
	r := &Reconciler{Client: c, Config: &cfg}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "acme"}}

	before := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, ctrl.ObjectKeyFromObject(tenant), before); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if patches != 1 {
		t.Fatalf("the first reconcile wrote the status %d times, want 1", patches)
	}

	t.Run("a reconcile reading the tenant from before its own write works from what it wrote", func(t *testing.T) {
		stale = before
		defer func() { stale = nil }()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if patches != 1 {
			t.Errorf("the reconcile of the older tenant wrote its status again (%d writes in all, want 1)", patches)
		}
		if res != (reconcile.Result{}) {
			t.Errorf("result = %+v, want none", res)
		}
	})

	t.Run("once the cache holds the write, it is forgotten, and the tenant reconciled as usual", func(t *testing.T) {
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if patches != 1 || res != (reconcile.Result{}) {
			t.Errorf("writes = %d, result = %+v; want 1 and no requeue", patches, res)
		}
		if len(r.own.byName) != 0 {
			t.Errorf("the write is still remembered once the cache holds it: %v", r.own.byName)
		}
	})
}
