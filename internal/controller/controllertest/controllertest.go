// Package controllertest holds what the reconcilers' unit tests share: a cluster of pools,
// spares and claims, a reader that charges each list what the manager's cache would, the
// requests a handler queued, and the reading of a status by kstatus and by Argo CD that each
// reconciler's computeStatus is held to. Only tests import it.
package controllertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/test/argocd"
)

// CacheVisits counts the lists made through it and the objects each makes the cache visit. The
// manager's cache answers a list by index from the index, visiting what it returns, and any
// other list (a label selector included) by visiting every object of the kind; the fake client
// stands in for the cache, and this reader charges each list what the cache would. A get reads
// one object by its key, whatever the number of objects, and is counted apart (Gets).
type CacheVisits struct {
	client.Client
	Lists, Visited, Gets int
}

func (c *CacheVisits) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.Gets++
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *CacheVisits) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	c.Lists++
	o := client.ListOptions{}
	o.ApplyOptions(opts)
	if o.FieldSelector != nil {
		c.Visited += meta.LenList(list)
		return nil
	}
	all, _ := list.DeepCopyObject().(client.ObjectList)
	if err := c.Client.List(ctx, all, client.InNamespace(o.Namespace)); err != nil {
		return err
	}
	c.Visited += meta.LenList(all)
	return nil
}

// BuilderIndexes registers indexes with a fake client as the manager does with its cache.
type BuilderIndexes struct{ *fake.ClientBuilder }

func (b BuilderIndexes) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	b.WithIndex(obj, field, fn)
	return nil
}

// SignupCluster is a pool "signup" of three Ready spares that has handed out n tenants to n
// Bound claims, n tenants of no pool, a claim "waiting" Pending on the pool and a new claim
// "new" on it.
func SignupCluster(n int) []client.Object {
	pool := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: "signup", UID: "pool-uid", Finalizers: []string{tenancyv1alpha1.Finalizer}},
		Spec:       tenancyv1alpha1.TenantPoolSpec{Replicas: 3},
	}
	owner := *metav1.NewControllerRef(pool, tenancyv1alpha1.GroupVersion.WithKind("TenantPool"))
	ready := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonSucceeded, LastTransitionTime: metav1.Now()}}
	objs := []client.Object{pool}
	for i := range 3 {
		objs = append(objs, &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("signup-spare-%d", i), Generation: 1,
				Labels:          map[string]string{tenancyv1alpha1.PoolLabel: "signup"},
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Status: tenancyv1alpha1.TenantStatus{ObservedGeneration: 1, Conditions: ready},
		})
	}
	for i := range n {
		uid := fmt.Sprintf("claim-uid-%d", i)
		objs = append(objs,
			&tenancyv1alpha1.Tenant{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("customer-%d", i), Generation: 1,
					Labels: map[string]string{
						tenancyv1alpha1.PoolLabel: "signup", tenancyv1alpha1.AllocatedLabel: "true", tenancyv1alpha1.ClaimUIDLabel: uid,
					},
					Annotations: map[string]string{tenancyv1alpha1.ClaimAnnotation: fmt.Sprintf("default/bound-%d", i)},
				},
				Status: tenancyv1alpha1.TenantStatus{ObservedGeneration: 1, Conditions: ready},
			},
			&tenancyv1alpha1.Tenant{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("direct-%d", i), Generation: 1},
				Status:     tenancyv1alpha1.TenantStatus{ObservedGeneration: 1, Conditions: ready},
			},
			&tenancyv1alpha1.TenantClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("bound-%d", i), UID: types.UID(uid)},
				Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup"},
				Status:     tenancyv1alpha1.TenantClaimStatus{Phase: tenancyv1alpha1.ClaimBound, Tenant: fmt.Sprintf("customer-%d", i)},
			})
	}
	return append(objs,
		&tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "waiting", UID: "waiting-uid"},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup"},
			Status:     tenancyv1alpha1.TenantClaimStatus{Phase: tenancyv1alpha1.ClaimPending, Reason: tenancyv1alpha1.ReasonNoReadySpare},
		},
		&tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "new", UID: "new-uid", CreationTimestamp: metav1.Now()},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup", Organization: "New Customer"},
		})
}

// Queued drains a queue into the requests it held.
func Queued(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []reconcile.Request {
	var out []reconcile.Request
	for q.Len() > 0 {
		req, _ := q.Get()
		q.Done(req)
		q.Forget(req)
		out = append(out, req)
	}
	return out
}

// PoolRequest is the request of the pool name.
func PoolRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// ClaimRequest is the request of the claim name in the namespace "default".
func ClaimRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}}
}

// NewQueue is a controller's queue, for a handler under test to add to.
func NewQueue() workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
}

// SignupClient is a fake client over SignupCluster(n) with every index registered, standing in
// for the manager's cache, and a reader over it that charges each list what the cache would.
func SignupClient(t testing.TB, n int) (client.Client, *CacheVisits) {
	t.Helper()
	builder := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithStatusSubresource(&tenancyv1alpha1.Tenant{}, &tenancyv1alpha1.TenantPool{}, &tenancyv1alpha1.TenantClaim{}).
		WithObjects(SignupCluster(n)...)
	if err := indexes.Add(context.Background(), BuilderIndexes{ClientBuilder: builder}); err != nil {
		t.Fatal(err)
	}
	inner := builder.Build()
	return inner, &CacheVisits{Client: inner}
}

// Get reads the object of key into obj and returns it, failing the test when it cannot.
func Get[T client.Object](t testing.TB, c client.Reader, key client.ObjectKey, obj T) T {
	t.Helper()
	if err := c.Get(context.Background(), key, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// argoCDReading is the Argo CD health that says what each kstatus status says: Current is
// Healthy, InProgress Progressing, Failed Degraded. Landlord writes no status kstatus reads
// otherwise.
var argoCDReading = map[status.Status]string{
	status.CurrentStatus:    argocd.Healthy,
	status.InProgressStatus: argocd.Progressing,
	status.FailedStatus:     argocd.Degraded,
}

// KstatusAgreesWithArgoCD reads obj, one of Landlord's objects with the status a reconciler
// computed, as kstatus does (Flux's health checks, kubectl wait, cli-utils) and as the Argo CD
// health check Landlord ships for its kind does (test/argocd), fails the test unless the two
// say the same, and returns both readings for the caller to check against what it expects.
// Argo CD's Suspended, which a rollout halted by its spec with waves to go is, has no kstatus
// counterpart: kstatus reads the Ready False alone it reports as InProgress (not there yet, and
// Flux waits on it), and the two agree when Argo CD says Suspended where kstatus says
// InProgress.
func KstatusAgreesWithArgoCD(t testing.TB, obj client.Object) (status.Status, string) {
	t.Helper()
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: raw}
	if u.GetKind() == "" {
		gvk, err := apiutil.GVKForObject(obj, tenancyv1alpha1.Scheme())
		if err != nil {
			t.Fatal(err)
		}
		u.SetGroupVersionKind(gvk)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	health, err := argocd.HealthOf(u)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := argoCDReading[res.Status]
	switch {
	case !ok:
		t.Errorf("kstatus reads %s %s as %s (%s), which no Argo CD health stands for", u.GetKind(), u.GetName(), res.Status, res.Message)
	case health.Status == argocd.Suspended && res.Status == status.InProgressStatus:
	case health.Status != want:
		t.Errorf("kstatus reads %s %s as %s (%s), Argo CD as %s (%s); want %s", u.GetKind(), u.GetName(), res.Status, res.Message, health.Status, health.Message, want)
	}
	return res.Status, health.Status
}
