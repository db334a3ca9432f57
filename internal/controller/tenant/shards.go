package tenant

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// Operator shards (--shard) split a cluster's tenants by their ShardLabel. Each shard caches
// every Tenant (domain conflicts and database server counts are cluster-wide questions) but
// only its own tenants' objects, which carry the tenant's shard label. Moving a tenant between
// shards is a relabel, and a handover in the tenant's status makes sure that exactly one shard
// writes the tenant's objects at any time, and that the one taking it over sees them all:
//
//  1. A tenant no shard has reconciled yet is claimed first, before any write, by a status write
//     under an optimistic lock (status.shard, and a Reconciling condition): a relabel during its
//     first reconcile then finds it owned, and is a handover like any other.
//  2. The shard that has the tenant (status.shard, or status.handoverTo once set) sees its label
//     name another shard. It writes nothing of the tenant again, forgets it, and records
//     status.handoverTo. Its reconciles of a tenant are serial, so none of its writes can come
//     after that; a shard being handed a tenant that is relabelled again hands it on the same
//     way, so there is never more than one shard writing.
//  3. The shard the label names waits for that record; or, when the shard that has the tenant
//     is not running (its leader election lease is released or expired), goes on without it.
//  4. It then reconciles the tenant taking it over: the tenant's objects still carry the old
//     shard label and are not in its cache, so a cache miss in the tenant's namespace is read
//     from the API server. Every object is written once, with the new label, and nothing is
//     taken for gone (a namespace to keep volumes of, a copy to prune) that still exists.
//  5. Only a takeover in which no phase failed or stalled and the namespace phase is done
//     records status.shard as the new shard; until then every reconcile takes over again, one
//     due within takeoverRecheck (the namespace it may be deleting is not in its cache, so its
//     going sends it no event), or after a stall's usual retry.

// handoverRecheck is how often a shard waiting for a tenant's handover looks again at whether
// the shard that reconciles it is still running (the handover's status write wakes it anyway).
const handoverRecheck = 30 * time.Second

// takeoverRecheck is how soon a takeover not yet recorded is looked at again.
const takeoverRecheck = 5 * time.Second

// ShardLeaseName is the leader election lease of a shard: Landlord's historical name for the
// default shard, so that upgrading to shards keeps the running operator's lease.
func ShardLeaseName(shard string) string {
	if shard == "" {
		return "landlord.tenancy.landlord.dev"
	}
	return "landlord-shard-" + shard + ".tenancy.landlord.dev"
}

// ShardLeases tells whether a shard's operator is running.
type ShardLeases interface {
	Running(ctx context.Context, shard string) (bool, error)
}

// LeaseShards reads the shards' leader election leases from the API server.
type LeaseShards struct {
	Reader client.Reader
	// Namespace holds the leases; "" when unknown (leader election off, out of a cluster): every
	// shard is then taken to run, and a tenant waits for its handover.
	Namespace string
	Now       func() time.Time

	mu sync.Mutex
	// seen is each shard's lease as last read, and when this process first saw it so: a lease
	// expires when it has not changed for its duration by this process's clock, as client-go's
	// leader election judges it, whatever the holder's clock wrote into it.
	seen map[string]seenLease
}

type seenLease struct {
	resourceVersion string
	at              time.Time
}

// Running reports whether shard's lease is held: it has a holder, and has changed within its
// duration. A lease released (no holder) or absent is not running; one seen for the first
// time is.
func (l *LeaseShards) Running(ctx context.Context, shard string) (bool, error) {
	if l.Namespace == "" {
		return true, nil
	}
	lease := &coordinationv1.Lease{}
	switch err := l.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: ShardLeaseName(shard)}, lease); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
		return false, nil
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]seenLease{}
	}
	last, ok := l.seen[shard]
	if !ok || last.resourceVersion != lease.ResourceVersion {
		l.seen[shard] = seenLease{resourceVersion: lease.ResourceVersion, at: now}
		return true, nil
	}
	duration := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 15)) * time.Second
	return now.Before(last.at.Add(duration)), nil
}

// shardOf is the shard a tenant's label assigns it to ("" for the default shard).
func shardOf(t *tenancyv1alpha1.Tenant) string { return t.Labels[tenancyv1alpha1.ShardLabel] }

// reconciledBy is the shard that has the tenant, and whether any has yet: the shard it was
// handed over to, once it was (from then on, that shard takes it over, or hands it on);
// otherwise status.shard, which is empty for the default shard, also every tenant's shard from
// before shards: a tenant with conditions and no status.shard is the default shard's.
func reconciledBy(t *tenancyv1alpha1.Tenant) (string, bool) {
	if h := t.Status.HandoverTo; h != nil {
		return *h, true
	}
	return t.Status.Shard, t.Status.Shard != "" || len(t.Status.Conditions) > 0
}

// shardStep is what a shard does with a tenant.
type shardStep int

const (
	// shardSkip: another shard's tenant.
	shardSkip shardStep = iota
	// shardReconcile: this shard's tenant, reconciled as usual.
	shardReconcile
	// shardHandOver: this shard has the tenant, and its label now names another shard.
	shardHandOver
	// shardTakeOver: the label names this shard, and the tenant was handed over to it.
	shardTakeOver
	// shardTakeOverIfStopped: the label names this shard; the shard that has the tenant has not
	// handed it over, and may be running.
	shardTakeOverIfStopped
)

// shardStepFor decides shardStep for the shard me.
func shardStepFor(me string, t *tenancyv1alpha1.Tenant) shardStep {
	owner, owned := reconciledBy(t)
	switch {
	case shardOf(t) != me && owned && owner == me:
		return shardHandOver
	case shardOf(t) != me:
		return shardSkip
	case !owned:
		return shardReconcile
	case owner != me:
		return shardTakeOverIfStopped
	case t.Status.HandoverTo != nil:
		return shardTakeOver
	default:
		return shardReconcile
	}
}

// shardEvents passes the events of the tenants this shard reconciles or has to hand over, and
// the status changes of a handover.
func shardEvents(me string) (mine, handover predicate.Funcs) {
	concerns := func(o client.Object) bool {
		t, ok := o.(*tenancyv1alpha1.Tenant)
		if !ok {
			return false
		}
		owner, owned := reconciledBy(t)
		return shardOf(t) == me || owned && owner == me
	}
	mine = predicate.NewPredicateFuncs(concerns)
	handover = predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldT, okOld := e.ObjectOld.(*tenancyv1alpha1.Tenant)
			newT, okNew := e.ObjectNew.(*tenancyv1alpha1.Tenant)
			return okOld && okNew && (oldT.Status.Shard != newT.Status.Shard ||
				!ptr.Equal(oldT.Status.HandoverTo, newT.Status.HandoverTo))
		},
	}
	return mine, handover
}

// shardGate runs the shard's part of a reconcile before anything else: done says the reconcile
// ends with res; otherwise takeover says the reconcile takes the tenant over (see above).
func (r *Reconciler) shardGate(ctx context.Context, t *tenancyv1alpha1.Tenant) (takeover, done bool, res ctrl.Result, err error) {
	switch shardStepFor(r.Shard, t) {
	case shardSkip:
		return false, true, ctrl.Result{}, nil
	case shardReconcile:
		// A suspended tenant has nothing written for it, and its status says Suspended, not
		// Reconciling, until it is resumed.
		if _, owned := reconciledBy(t); !owned && t.DeletionTimestamp.IsZero() && !t.Spec.Suspend {
			if err := r.claim(ctx, t); err != nil {
				res, err := writes.RetryConflict(err)
				return false, true, res, err
			}
		}
		return false, false, ctrl.Result{}, nil
	case shardHandOver:
		to := shardOf(t)
		next := *t.Status.DeepCopy()
		next.HandoverTo = &to
		// Until the shard named takes it over (one that does not run never will), the tenant
		// is in progress, and says why.
		conds := conditions.For(&next.Conditions, t.Generation)
		conds.Set(tenancyv1alpha1.ReconcilingCondition, metav1.ConditionTrue, tenancyv1alpha1.ReasonShardHandover,
			fmt.Sprintf("shard %s handed the tenant over to shard %s, which has not taken it over yet", shardName(r.Shard), shardName(to)))
		if err := writes.PatchStatus(ctx, r.Client, t, &t.Status, next, client.MergeFromWithOptimisticLock{}); err != nil {
			res, err := writes.RetryConflict(err)
			return false, true, res, err
		}
		r.forget(r.Config.NamespaceName(t.Name))
		log.FromContext(ctx).Info("tenant handed over to another shard", "tenant", t.Name, "shard", shardName(to))
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonShardHandover, "HandOver",
			"shard %s hands the tenant over to shard %s", shardName(r.Shard), shardName(to))
		return false, true, ctrl.Result{}, nil
	case shardTakeOverIfStopped:
		owner, _ := reconciledBy(t)
		running, err := r.Shards.Running(ctx, owner)
		if err != nil {
			return false, true, ctrl.Result{}, fmt.Errorf("reading the lease of shard %s: %w", shardName(owner), err)
		}
		if running {
			// Its handover (a status write) wakes this shard; the recheck is for a shard that
			// stops without handing over.
			log.FromContext(ctx).V(1).Info("waiting for the tenant's handover", "tenant", t.Name, "from", shardName(owner))
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
		fmt.Sprintf("shard %s is creating the tenant's objects", shardName(r.Shard)))
	return writes.PatchStatus(ctx, r.Client, t, &t.Status, next, client.MergeFromWithOptimisticLock{})
}

// shardName is how logs and events name a shard.
func shardName(shard string) string {
	if shard == "" {
		return "(default)"
	}
	return shard
}

// recordShard sets the status that ends a reconcile to name this shard as the tenant's, and says
// whether it did: after any reconcile that was not a takeover, and after a takeover in which no
// phase failed or stalled and the namespace phase is done. A stalled phase may have stopped
// before writing (or pruning) objects that still carry the old shard's label, which this
// shard's cache would then never hold; the takeover is tried again at the stall's own pace.
func (r *Reconciler) recordShard(next *tenancyv1alpha1.TenantStatus, takeover bool, results []phaseResult) bool {
	if takeover {
		for _, res := range results {
			if res.err != nil || res.stalled || res.condition == tenancyv1alpha1.NamespaceReadyCondition && !res.done {
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
