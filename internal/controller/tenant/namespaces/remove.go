package namespaces

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/tenant/workloads"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// Remove deletes the namespace of an Archived or Purged tenant, and waits until it is gone: the
// namespace's deletion event re-triggers the reconcile. An Archived tenant's volumes are kept
// first; a Purged tenant's kept volumes are deleted once the namespace is gone. removed is
// whether the tenant's condition reports the namespace removed for its generation already: it
// is then not confirmed again, nor are the volumes deleted again.
func (e *Engine) Remove(ctx context.Context, s Scope, removed bool) phase.Result {
	t := s.Tenant
	ns := &corev1.Namespace{}
	err := e.Client.Get(ctx, client.ObjectKey{Name: s.Namespace}, ns)
	if apierrors.IsNotFound(err) && !removed {
		// Gone by the cache is confirmed once by the API server before the namespace is
		// reported removed (and a Purged tenant's volumes deleted): a shard's cache never holds
		// a namespace another shard labelled, and a watch can be behind.
		err = e.APIReader.Get(ctx, client.ObjectKey{Name: s.Namespace}, ns)
	}
	if err != nil {
		if !apierrors.IsNotFound(err) {
			return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		e.Forget(s.Namespace)
		if t.Spec.State == tenancyv1alpha1.StatePurged && !removed {
			if err := e.Volumes.PurgeVolumes(ctx, s.volumes()); err != nil {
				return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
			}
		}
		return phase.Done(tenancyv1alpha1.ReasonNamespaceRemoved, "namespace %s is removed while the tenant is %s", s.Namespace, t.Spec.State)
	}
	if ns.DeletionTimestamp.IsZero() {
		if t.Spec.State != tenancyv1alpha1.StatePurged && metav1.IsControlledBy(ns, t) {
			if err := e.Volumes.KeepVolumes(ctx, s.volumes()); err != nil {
				return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
			}
		}
		deleted, err := writes.DeleteIfControlled(ctx, e.Client, e.APIReader, ns, t)
		switch {
		case err != nil:
			return phase.Failedf(tenancyv1alpha1.ReasonApplyFailed, "deleting namespace %s: %w", s.Namespace, err)
		case !deleted:
			return phase.Stalled(tenancyv1alpha1.ReasonOwnershipConflict, "namespace %s is not controlled by this tenant; not deleting it", s.Namespace)
		}
		e.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonNamespaceRemoved, "Delete",
			"deleting namespace %s: the tenant is %s", s.Namespace, t.Spec.State)
	}
	return phase.Progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", s.Namespace)
}

// volumes is the reconcile as the workloads engine sees it, for the tenant's volumes.
func (s Scope) volumes() workloads.Scope {
	return workloads.Scope{Tenant: s.Tenant, Namespace: s.Namespace, Status: s.Status}
}
