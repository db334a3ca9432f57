package tenant

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// addFinalizer makes the tenant's deletion wait for finalize. A tenant created while the
// admission policy landlord-tenant-finalizer is in force has the finalizer already, and costs
// no patch; this adds it to one created before the policy, or whose finalizer was removed, so
// nothing depends on the policy. The patch carries the tenant's resourceVersion, so a tenant
// written since the cache saw it is looked at again first.
func (r *Reconciler) addFinalizer(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	orig := t.DeepCopy()
	controllerutil.AddFinalizer(t, tenancyv1alpha1.Finalizer)
	return r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// finalize runs when a tenant is deleted: its namespace goes with it. Data outside the cluster
// is dropped only for a Purged tenant, and then before the tenant goes; any other tenant's
// databases are left in place, and an event says so.
func (r *Reconciler) finalize(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.Finalizer) {
		return nil
	}
	namespace := r.Config.NamespaceName(t.Name)
	if t.Status.Namespace != "" && t.Status.Namespace != namespace {
		// The namespace prefix changed under the tenant: its data is in a namespace the
		// configuration no longer names. Deletion waits (retried with backoff) until the
		// prefix is restored, rather than keep or drop the wrong namespace's.
		return fmt.Errorf("tenant %s: its namespace is %s, but the operator's configuration names %s (namespacePrefix changed): restore namespacePrefix to delete it",
			t.Name, t.Status.Namespace, namespace)
	}
	s := newTenantScope(t, namespace)
	// A spare no customer has used holds no customer data: deleting it (scaling a pool down,
	// deleting a pool) drops its databases, as Purged would.
	purge := t.Spec.State == tenancyv1alpha1.StatePurged || t.IsUnallocatedSpare()
	if purge {
		if res := r.purgeDatabases(ctx, s); !res.Done {
			if res.Err != nil {
				return res.Err
			}
			return fmt.Errorf("purging databases: %s", res.Message)
		}
		if err := r.workloads().PurgeVolumes(ctx, s.workloadScope()); err != nil {
			return err
		}
	} else {
		r.databases().ReportKept(t)
	}
	ns := &corev1.Namespace{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: s.namespace}, ns); {
	case err == nil && ns.DeletionTimestamp.IsZero():
		// The volumes of a tenant that is not purged outlive its namespace, marked with its UID
		// for a tenant that adopts its data.
		if !purge && metav1.IsControlledBy(ns, t) {
			if err := r.workloads().KeepVolumes(ctx, s.workloadScope()); err != nil {
				return err
			}
		}
		deleted, err := writes.DeleteIfControlled(ctx, r.Client, r.APIReader, ns, t)
		if err != nil {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
		if deleted {
			log.FromContext(ctx).Info("deleted tenant namespace", "tenant", t.Name, "kind", "Namespace", "objectName", ns.Name)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	orig := t.DeepCopy()
	controllerutil.RemoveFinalizer(t, tenancyv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.forget(s.namespace)
	return nil
}

// forget drops what is remembered about a namespace that is gone.
func (r *Reconciler) forget(nsName string) {
	r.Applied.Forget(nsName)
	r.components().Forget(nsName)
}
