package operator

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/shard"
)

// CheckNoLiveLeader refuses to start a process beside a live one: it returns an error naming the
// holder when the shard's leader election lease in namespace is held and was renewed within its
// duration. A process run from a workstation (`make run CLUSTER=current`) calls it before it
// starts: queued behind the installed operator's lease, it would look running and do nothing;
// taking the lease when the installed operator is gone is what it is for. Replicas in the
// cluster do not call it: a standby waiting for the lease is how leader election works.
func CheckNoLiveLeader(ctx context.Context, restCfg *rest.Config, namespace, shardName string, now time.Time) error {
	c, err := client.New(restCfg, client.Options{})
	if err != nil {
		return err
	}
	lease := &coordinationv1.Lease{}
	name := shard.LeaseName(shardName)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, lease); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading leader election lease %s/%s: %w", namespace, name, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" || lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return nil
	}
	expires := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	if now.After(expires) {
		return nil
	}
	return fmt.Errorf("another Landlord runs on this cluster: %s holds leader election lease %s/%s (renewed %s): "+
		"stop it (scale its Deployment to 0) before running one here, or the two would take turns at the same tenants and policies",
		holder, namespace, name, lease.Spec.RenewTime.UTC().Format(time.RFC3339))
}
