package tenant

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/shard"
)

// The protocol is in package shard; the reconciler's part of it is here.

// handoverRecheck is how often a shard waiting for a tenant's handover looks again at whether
// the shard that reconciles it is still running (the handover's status write wakes it anyway).
const handoverRecheck = 30 * time.Second

// takeoverRecheck is how soon a takeover not yet recorded is looked at again.
const takeoverRecheck = 5 * time.Second

// shardGate runs the shard's part of a reconcile before anything else: done says the reconcile
// ends with res; otherwise takeover says the reconcile takes the tenant over (see above).
func (r *Reconciler) shardGate(ctx context.Context, t *tenancyv1alpha1.Tenant) (takeover, done bool, res ctrl.Result, err error) {
	switch shard.StepFor(r.Shard, t) {
	case shard.Skip:
		return false, true, ctrl.Result{}, nil
	case shard.Reconcile:
		// A suspended tenant has nothing written for it, and its status says Suspended, not
		// Reconciling, until it is resumed.
		if _, owned := shard.ReconciledBy(t); !owned && t.DeletionTimestamp.IsZero() && !t.Spec.Suspend {
			if err := r.claim(ctx, t); err != nil {
				res, err := writes.RetryConflict(err)
				return false, true, res, err
			}
		}
		return false, false, ctrl.Result{}, nil
	case shard.HandOver:
		to := shard.Of(t)
		next := *t.Status.DeepCopy()
		next.HandoverTo = &to
		// Until the shard named takes it over (one that does not run never will), the tenant
		// is in progress, and says why.
		conds := conditions.For(&next.Conditions, t.Generation)
		conds.Set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonShardHandover,
			fmt.Sprintf("shard %s handed the tenant over to shard %s, which has not taken it over yet", shard.Name(r.Shard), shard.Name(to)))
		if err := writes.PatchStatus(ctx, r.Client, t, &t.Status, next, client.MergeFromWithOptimisticLock{}); err != nil {
			res, err := writes.RetryConflict(err)
			return false, true, res, err
		}
		r.forget(r.Config.NamespaceName(t.Name))
		log.FromContext(ctx).Info("tenant handed over to another shard", "tenant", t.Name, "shard", shard.Name(to))
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonShardHandover, "HandOver",
			"shard %s hands the tenant over to shard %s", shard.Name(r.Shard), shard.Name(to))
		return false, true, ctrl.Result{}, nil
	case shard.TakeOverIfStopped:
		owner, _ := shard.ReconciledBy(t)
		running, err := r.Shards.Running(ctx, owner)
		if err != nil {
			return false, true, ctrl.Result{}, fmt.Errorf("reading the lease of shard %s: %w", shard.Name(owner), err)
		}
		if running {
			// Its handover (a status write) wakes this shard; the recheck is for a shard that
			// stops without handing over.
			log.FromContext(ctx).V(1).Info("waiting for the tenant's handover", "tenant", t.Name, "from", shard.Name(owner))
			return false, true, ctrl.Result{RequeueAfter: handoverRecheck}, nil
		}
	}
	// What this shard remembers of the tenant's objects is from before another shard had them.
	r.forget(r.Config.NamespaceName(t.Name))
	return true, false, ctrl.Result{}, nil
}

// claim makes a tenant no shard has reconciled this shard's before anything of it is written:
// the optimistic lock fails if another shard claimed it since the cache saw it.
func (r *Reconciler) claim(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	next := *t.Status.DeepCopy()
	next.Shard = r.Shard
	conds := conditions.For(&next.Conditions, t.Generation)
	conds.Set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonProgressing,
		fmt.Sprintf("shard %s is creating the tenant's objects", shard.Name(r.Shard)))
	return writes.PatchStatus(ctx, r.Client, t, &t.Status, next, client.MergeFromWithOptimisticLock{})
}

// recordShard sets the status that ends a reconcile to name this shard as the tenant's, and says
// whether it did: after any reconcile that was not a takeover, and after a takeover in which no
// phase failed, stalled or waited (did not run) and the namespace and workloads phases are
// done. A stalled or waiting phase may not have written (or pruned) objects that still carry
// the old shard's label, which this shard's cache would then never hold; the takeover is tried
// again at the stall's or the wait's own pace.
func (r *Reconciler) recordShard(next *tenancyv1alpha1.TenantStatus, takeover bool, results []phaseResult) bool {
	if takeover {
		for _, res := range results {
			inNamespace := res.condition == tenancyv1alpha1.NamespaceReadyCondition || res.condition == tenancyv1alpha1.WorkloadsReadyCondition
			if res.Err != nil || res.Stalled || res.waited || inNamespace && !res.Done {
				return false
			}
		}
	}
	next.Shard, next.HandoverTo = r.Shard, nil
	return true
}

// takeoverKey marks the context of a reconcile that takes a tenant over; its value is the
// tenant's namespace.
type takeoverKey struct{}

func takingOver(ctx context.Context, namespace string) context.Context {
	return context.WithValue(ctx, takeoverKey{}, namespace)
}

// takeoverClient reads through the cache and, in a reconcile that takes a tenant over, reads a
// cache miss of the tenant's namespace or of an object in it from the API server: those objects
// still carry the shard label of the shard that had the tenant, which this shard's cache does
// not select.
type takeoverClient struct {
	client.Client
	api client.Reader
}

func (c *takeoverClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if ns, ok := ctx.Value(takeoverKey{}).(string); ok && apierrors.IsNotFound(err) &&
		(key.Namespace == ns || key.Namespace == "" && key.Name == ns) {
		return c.api.Get(ctx, key, obj)
	}
	return err
}

func (c *takeoverClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if ns, ok := ctx.Value(takeoverKey{}).(string); ok {
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		if lo.Namespace == ns && lo.FieldSelector == nil {
			return c.api.List(ctx, list, opts...)
		}
	}
	return c.Client.List(ctx, list, opts...)
}
