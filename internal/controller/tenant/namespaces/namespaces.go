// Package namespaces keeps a tenant's namespace and the objects in it that bound the tenant
// (RBAC, quota, limit range, network policies): built by internal/resources from the tenant with
// the domains it holds, applied through internal/apply with drift repaired, the node pool its
// pods were placed on recorded on it, a RoleBinding whose roleRef changed bound again; and,
// once the tenant is Archived or Purged, the namespace deleted, its volumes kept first (or a
// Purged tenant's deleted once it is gone) through the workloads engine. The tenant reconciler's
// namespace phase of each lifecycle state calls it, and its workloads engine records the pods'
// new pool through it.
package namespaces

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/tenant/workloads"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/resources"
)

// The namespace and the objects in it are written and deleted here; the tenant reconciler's
// watches of them, and its finalizer's delete of the namespace, are through the same rules.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch;create;patch
// Tenant RoleBindings are deleted only to change their roleRef, which Kubernetes never updates.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch

// Engine is what a tenant's namespace needs of the operator. Its fields are set once, before its
// first use.
type Engine struct {
	// Client reads through the cache and writes; APIReader reads what the cache does not hold (a
	// namespace's record of its pods' pool not yet seen, a binding's roleRef, a namespace gone
	// by the cache).
	Client    client.Client
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Applied remembers the owned objects found in place (the tenant reconciler's memo).
	Applied *apply.Memo
	// Volumes keeps the volumes of a namespace about to be deleted, and deletes a Purged
	// tenant's once it is gone.
	Volumes *workloads.Engine
	// Forget drops what the tenant reconciler remembers of a namespace that is gone.
	Forget func(namespace string)
	// ApplyFailed classifies a failed write of one of the tenant's objects and records it, as the
	// tenant reconciler does for every object it writes.
	ApplyFailed phase.ApplyFailed
}

// Scope is one reconcile of one tenant, as the engine sees it: the tenant as the cache holds it
// (read only); the tenant as its namespace is built from, its domains those it holds (nil when
// they could not be decided, for the reason in DomainsErr); the name of its namespace; whether a
// reconcile was asked for (the objects are then compared with the API server's copies rather
// than trusted); and the status draft whose status.volumes the volumes kept or deleted write.
type Scope struct {
	Tenant     *tenancyv1alpha1.Tenant
	Applied    *tenancyv1alpha1.Tenant
	DomainsErr error
	Namespace  string
	Verify     bool
	Status     *tenancyv1alpha1.TenantStatus
}

// applier writes the tenant's objects: cache-compared, remembered once found in place, and
// compared with the API server's copies when a reconcile was asked for.
func (e *Engine) applier(s Scope) *apply.Applier {
	return &apply.Applier{Client: e.Client, APIReader: e.APIReader, Memo: e.Applied, Verify: s.Verify}
}

// Ensure applies the namespace and everything in it that an Active or Frozen tenant owns (RBAC,
// quota, limit range, network policies), built from the tenant with the domains it holds
// (s.Applied). Objects equal to the cached ones are not written. It returns the node pool the
// namespace's pods were placed on: a new namespace has none yet, and is created recording the
// tenant's pool.
func (e *Engine) Ensure(ctx context.Context, s Scope) (podsPool string, res phase.Result) {
	ns := &corev1.Namespace{}
	getErr := e.Client.Get(ctx, client.ObjectKey{Name: s.Namespace}, ns)
	switch err := getErr; {
	case err == nil && !ns.DeletionTimestamp.IsZero():
		// Back from Archived before the old namespace is gone: its deletion event re-triggers us.
		return "", phase.Progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", s.Namespace)
	case err != nil && !apierrors.IsNotFound(err):
		return "", phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	// Never built from domains not decided on.
	t := s.Applied
	if t == nil {
		return "", phase.Failedf(tenancyv1alpha1.ReasonApplyFailed, "deciding which domains the tenant holds: %w", s.DomainsErr)
	}

	podsPool = t.Spec.NodePool
	if getErr == nil {
		var err error
		if podsPool, err = e.podsPool(ctx, ns, t.Spec.NodePool); err != nil {
			return podsPool, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
	}

	applier, err := e.namespaceApplier(ctx, s, t, podsPool)
	if err != nil {
		return podsPool, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	objs := resources.Build(t, e.Config)
	// Until the pods placed on the old pool are deleted (the workloads phase), the record keeps
	// naming it, so that a crash in between leaves the move to the next reconcile rather than
	// forgotten.
	resources.SetPodsPool(objs, podsPool)
	// The objects changed to what the spec and configuration now say (a repair of drift is
	// reported on its own, by applier.Repaired).
	var updated []string
	for _, obj := range objs {
		result, err := applier.Apply(ctx, obj)
		if rb, ok := obj.(*rbacv1.RoleBinding); ok && apierrors.IsInvalid(err) {
			result, err = e.rebind(ctx, applier, t, rb)
		}
		if err != nil {
			return podsPool, e.ApplyFailed(t, obj, err)
		}
		if result == apply.Updated {
			updated = append(updated, writes.ObjectRef(obj))
		}
	}
	if len(updated) > 0 {
		sort.Strings(updated)
		e.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonApplied, "Apply",
			"updated %s", strings.Join(updated, ", "))
	}
	return podsPool, phase.Done(tenancyv1alpha1.ReasonSucceeded, "namespace %s is ready", s.Namespace)
}

// NamespaceWithPool is the tenant's namespace as built from s.Applied, recording that its pods
// are placed on pool, and the applier that writes it: the workloads engine records there the
// pool it moved the pods to.
func (e *Engine) NamespaceWithPool(ctx context.Context, s Scope, pool string) (*corev1.Namespace, *apply.Applier, error) {
	t := s.Applied
	applier, err := e.namespaceApplier(ctx, s, t, pool)
	if err != nil {
		return nil, nil, err
	}
	ns := resources.Namespace(t, e.Config)
	resources.SetPodsPool([]client.Object{ns}, pool)
	return ns, applier, nil
}

// namespaceApplier applies the objects of the tenant's namespace, built from t (the tenant with
// the domains it holds) with its pods placed on podsPool.
func (e *Engine) namespaceApplier(ctx context.Context, s Scope, t *tenancyv1alpha1.Tenant, podsPool string) (*apply.Applier, error) {
	// resources.Build is a pure function of these and of the configuration, which is fixed for
	// the life of the process; the pods' pool is recorded on the namespace.
	inputs, err := namespaceInputs(t, podsPool)
	if err != nil {
		return nil, err
	}
	applier := e.applier(s)
	applier.Inputs = &inputs
	// These objects are the isolation boundary: anything someone else adds to them is removed.
	applier.WholeObject = true
	applier.Repaired = writes.DriftRepaired(log.FromContext(ctx).WithValues("tenant", t.Name), e.Recorder, t)
	return applier, nil
}

// namespaceInputs digests what the tenant's namespace and the objects in it are built from: the
// tenant, and the pool its pods were placed on.
func namespaceInputs(t *tenancyv1alpha1.Tenant, podsPool string) (apply.Fingerprint, error) {
	return apply.FingerprintOf(struct {
		Name, UID           string
		Labels, Annotations map[string]string
		Spec                tenancyv1alpha1.TenantSpec
		PodsPool            string
	}{t.Name, string(t.UID), t.Labels, t.Annotations, t.Spec, podsPool})
}

// podsPool is the node pool the pods of the tenant's namespace ns (from the cache) were placed
// on. A record that differs from the tenant's pool is confirmed by the API server before pods are
// deleted for it: the cache may not yet have seen the record of a move just made, and the pods
// recreated on the new pool would be deleted a second time. Reading it only then keeps a tenant
// whose pool did not change free of requests.
func (e *Engine) podsPool(ctx context.Context, ns *corev1.Namespace, pool string) (string, error) {
	placed := resources.PodsPool(ns)
	if placed == pool {
		return placed, nil
	}
	live := &corev1.Namespace{}
	switch err := e.APIReader.Get(ctx, client.ObjectKeyFromObject(ns), live); {
	case apierrors.IsNotFound(err):
		// Gone since: the namespace is created anew, with no pod on any pool.
		return pool, nil
	case err != nil:
		return "", err
	}
	return resources.PodsPool(live), nil
}

// rebind replaces a tenant RoleBinding whose roleRef is not the desired one (a binding of the
// namespaced Role each tenant had before the shared ClusterRoles): Kubernetes refuses to change
// a roleRef, so the old binding is deleted and the new one created. Its subjects lose access
// for the moment between the two requests.
func (e *Engine) rebind(ctx context.Context, applier *apply.Applier, t *tenancyv1alpha1.Tenant, desired *rbacv1.RoleBinding) (apply.Result, error) {
	// From the API server: the cache keeps bindings without their roleRef.
	live := &rbacv1.RoleBinding{}
	if err := e.APIReader.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return apply.Unchanged, err
	}
	if live.RoleRef == desired.RoleRef {
		return apply.Unchanged, fmt.Errorf("applying RoleBinding %s: the API server refused it although its roleRef is unchanged", desired.Name)
	}
	switch deleted, err := writes.DeleteIfControlled(ctx, e.Client, e.APIReader, live, t); {
	case err != nil:
		return apply.Unchanged, err
	case !deleted:
		return apply.Unchanged, &apply.ConflictError{Kind: "RoleBinding", Name: desired.Name, Owner: "tenant " + t.Name}
	}
	return applier.Apply(ctx, desired)
}
