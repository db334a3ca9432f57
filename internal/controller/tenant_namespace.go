package controller

import (
	"context"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/resources"
)

// ensureNamespace applies the namespace and everything in it that an Active or Frozen tenant
// owns (RBAC, quota, limit range, network policies). Objects equal to the cached ones are not
// written.
func (r *TenantReconciler) ensureNamespace(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	ns := &corev1.Namespace{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: s.namespace}, ns); {
	case err == nil && !ns.DeletionTimestamp.IsZero():
		// Back from Archived before the old namespace is gone: its deletion event re-triggers us.
		return progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", s.namespace)
	case err != nil && !apierrors.IsNotFound(err):
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}

	// resources.Build is a pure function of these and of the configuration, which is fixed for
	// the life of the process.
	inputs, err := apply.FingerprintOf(struct {
		Name, UID           string
		Labels, Annotations map[string]string
		Spec                tenancyv1alpha1.TenantSpec
	}{t.Name, string(t.UID), t.Labels, t.Annotations, t.Spec})
	if err != nil {
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	applier := r.applier()
	applier.Inputs = &inputs
	var repaired []string
	for _, obj := range resources.Build(t, r.Config) {
		result, err := applier.Apply(ctx, obj)
		if err != nil {
			return r.applyFailed(t, obj, err)
		}
		if result == apply.Updated {
			repaired = append(repaired, objectRef(obj))
		}
	}
	if len(repaired) > 0 {
		sort.Strings(repaired)
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "Applied", "Apply",
			"updated %s", strings.Join(repaired, ", "))
	}
	// Before any component can create a claim that a provisioner would give a new, empty disk.
	if err := r.restoreVolumes(ctx, s); err != nil {
		return failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	return done(tenancyv1alpha1.ReasonSucceeded, "namespace %s is ready", s.namespace)
}

// removeNamespace deletes the namespace of an Archived or Purged tenant, and waits until it is
// gone: the namespace's deletion event re-triggers the reconcile. The components in it go with
// it, so their status goes too. An Archived tenant's volumes are kept first; a Purged tenant's
// kept volumes are deleted once the namespace is gone.
func (r *TenantReconciler) removeNamespace(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	s.status.Components = nil
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.namespace}, ns); err != nil {
		if !apierrors.IsNotFound(err) {
			return failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		r.forget(s.namespace)
		if t.Spec.State == tenancyv1alpha1.StatePurged && !conditionCurrent(t, tenancyv1alpha1.NamespaceReadyCondition, tenancyv1alpha1.ReasonNamespaceRemoved) {
			if err := r.purgeVolumes(ctx, s); err != nil {
				return failed(tenancyv1alpha1.ReasonApplyFailed, err)
			}
		}
		return done(tenancyv1alpha1.ReasonNamespaceRemoved, "namespace %s is removed while the tenant is %s", s.namespace, t.Spec.State)
	}
	if ns.DeletionTimestamp.IsZero() {
		if t.Spec.State != tenancyv1alpha1.StatePurged && metav1.IsControlledBy(ns, t) {
			if err := r.keepVolumes(ctx, s); err != nil {
				return failed(tenancyv1alpha1.ReasonApplyFailed, err)
			}
		}
		deleted, err := deleteIfControlled(ctx, r.Client, ns, t)
		switch {
		case err != nil:
			return failedf(tenancyv1alpha1.ReasonApplyFailed, "deleting namespace %s: %w", s.namespace, err)
		case !deleted:
			return stalled(tenancyv1alpha1.ReasonOwnershipConflict, "namespace %s is not controlled by this tenant; not deleting it", s.namespace)
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonNamespaceRemoved, "Delete",
			"deleting namespace %s: the tenant is %s", s.namespace, t.Spec.State)
	}
	return progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", s.namespace)
}

// applier applies the tenant's objects: cache-compared, remembered once found in place.
func (r *TenantReconciler) applier() *apply.Applier {
	return &apply.Applier{Client: r.Client, APIReader: r.APIReader, Memo: r.Applied}
}
