// Package shard is how operator shards (--shard) split a cluster's tenants by their
// ShardLabel: the leases that say which shards run, and the step each shard takes with each
// tenant. The tenant reconciler carries the steps out; landlordctl reads the leases. Each shard
// caches every Tenant (domain conflicts and database server counts are cluster-wide questions) but
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
//     due within seconds (the namespace it may be deleting is not in its cache, so its
//     going sends it no event), or after a stall's usual retry.
package shard

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// LeaseName is the leader election lease of a shard: Landlord's historical name for the
// default shard, so that upgrading to shards keeps the running operator's lease.
func LeaseName(shard string) string {
	if shard == "" {
		return "landlord.tenancy.landlord.dev"
	}
	return "landlord-shard-" + shard + ".tenancy.landlord.dev"
}

// Leases tells whether a shard's operator is running.
type Leases interface {
	Running(ctx context.Context, shard string) (bool, error)
}

// LeaseReader reads the shards' leader election leases from the API server.
type LeaseReader struct {
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
func (l *LeaseReader) Running(ctx context.Context, shard string) (bool, error) {
	if l.Namespace == "" {
		return true, nil
	}
	lease := &coordinationv1.Lease{}
	switch err := l.Reader.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: LeaseName(shard)}, lease); {
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

// Of is the shard a tenant's label assigns it to ("" for the default shard).
func Of(t *tenancyv1alpha1.Tenant) string { return t.Labels[tenancyv1alpha1.ShardLabel] }

// ReconciledBy is the shard that has the tenant, and whether any has yet: the shard it was
// handed over to, once it was (from then on, that shard takes it over, or hands it on);
// otherwise status.shard, which is empty for the default shard, also every tenant's shard from
// before shards: a tenant with conditions and no status.shard is the default shard's.
func ReconciledBy(t *tenancyv1alpha1.Tenant) (string, bool) {
	if h := t.Status.HandoverTo; h != nil {
		return *h, true
	}
	return t.Status.Shard, t.Status.Shard != "" || len(t.Status.Conditions) > 0
}

// Step is what a shard does with a tenant.
type Step int

const (
	// Skip: another shard's tenant.
	Skip Step = iota
	// Reconcile: this shard's tenant, reconciled as usual.
	Reconcile
	// HandOver: this shard has the tenant, and its label now names another shard.
	HandOver
	// TakeOver: the label names this shard, and the tenant was handed over to it.
	TakeOver
	// TakeOverIfStopped: the label names this shard; the shard that has the tenant has not
	// handed it over, and may be running.
	TakeOverIfStopped
)

// StepFor decides Step for the shard me.
func StepFor(me string, t *tenancyv1alpha1.Tenant) Step {
	owner, owned := ReconciledBy(t)
	switch {
	case Of(t) != me && owned && owner == me:
		return HandOver
	case Of(t) != me:
		return Skip
	case !owned:
		return Reconcile
	case owner != me:
		return TakeOverIfStopped
	case t.Status.HandoverTo != nil:
		return TakeOver
	default:
		return Reconcile
	}
}

// Events passes the events of the tenants this shard reconciles or has to hand over, and
// the status changes of a handover.
func Events(me string) (mine, handover predicate.Funcs) {
	concerns := func(o client.Object) bool {
		t, ok := o.(*tenancyv1alpha1.Tenant)
		if !ok {
			return false
		}
		owner, owned := ReconciledBy(t)
		return Of(t) == me || owned && owner == me
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

// Name is how logs and events name a shard.
func Name(shard string) string {
	if shard == "" {
		return "(default)"
	}
	return shard
}
