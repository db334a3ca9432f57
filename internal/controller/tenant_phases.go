package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/resources"
)

// outcome is what a phase observed. Exactly one of three holds: done (the phase's concern has
// converged), stalled (it cannot converge without a person), or neither (in progress, or a
// transient error in err that is retried with backoff).
type outcome struct {
	done    bool
	stalled bool
	reason  string
	message string
	err     error
}

func progressing(reason, format string, args ...any) outcome {
	return outcome{reason: reason, message: fmt.Sprintf(format, args...)}
}

// ensureNamespace applies the namespace and everything in it that an Active or Frozen tenant
// owns. Objects equal to the cached ones are not written.
func (r *TenantReconciler) ensureNamespace(ctx context.Context, t *tenancyv1alpha1.Tenant) outcome {
	nsName := r.Config.NamespaceName(t.Name)
	ns := &corev1.Namespace{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: nsName}, ns); {
	case err == nil && !ns.DeletionTimestamp.IsZero():
		// Back from Archived before the old namespace is gone: its deletion event re-triggers us.
		return progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", nsName)
	case err != nil && !apierrors.IsNotFound(err):
		return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
	}

	// resources.Build is a pure function of these and of the configuration, which is fixed for
	// the life of the process.
	inputs, err := apply.FingerprintOf(struct {
		Name, UID           string
		Labels, Annotations map[string]string
		Spec                tenancyv1alpha1.TenantSpec
	}{t.Name, string(t.UID), t.Labels, t.Annotations, t.Spec})
	if err != nil {
		return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
	}
	applier := &apply.Applier{Client: r.Client, APIReader: r.APIReader, Memo: r.Applied, Inputs: &inputs}
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
	return outcome{done: true, reason: tenancyv1alpha1.ReasonSucceeded, message: fmt.Sprintf("namespace %s is ready", nsName)}
}

// applyFailed classifies a write error: an object the API server rejects, or a name someone
// else holds, will not fix itself (Stalled); anything else is retried.
func (r *TenantReconciler) applyFailed(t *tenancyv1alpha1.Tenant, obj client.Object, err error) outcome {
	msg := fmt.Sprintf("applying %s: %v", objectRef(obj), err)
	var conflict *apply.ConflictError
	switch {
	case errors.As(err, &conflict):
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonOwnershipConflict, "Apply", "%s", msg)
		return outcome{stalled: true, reason: tenancyv1alpha1.ReasonOwnershipConflict, message: msg}
	case apierrors.IsForbidden(err):
		// Landlord's own role does not allow the kind (a component rendered something outside
		// what components may create): only a person can change that.
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonInvalidObject, "Apply", "%s", msg)
		return outcome{stalled: true, reason: tenancyv1alpha1.ReasonInvalidObject, message: msg}
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonInvalidObject, "Apply", "%s", msg)
		return outcome{stalled: true, reason: tenancyv1alpha1.ReasonInvalidObject, message: msg}
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonApplyFailed, "Apply", "%s", msg)
	return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: msg, err: err}
}

// removeNamespace deletes the namespace of an Archived or Purged tenant, and waits until it is
// gone: the namespace's deletion event re-triggers the reconcile.
func (r *TenantReconciler) removeNamespace(ctx context.Context, t *tenancyv1alpha1.Tenant) outcome {
	nsName := r.Config.NamespaceName(t.Name)
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: nsName}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(nsName)
			return outcome{done: true, reason: tenancyv1alpha1.ReasonNamespaceRemoved, message: fmt.Sprintf("namespace %s is removed while the tenant is %s", nsName, t.Spec.State)}
		}
		return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
	}
	if ns.DeletionTimestamp.IsZero() {
		if !metav1.IsControlledBy(ns, t) {
			return outcome{stalled: true, reason: tenancyv1alpha1.ReasonOwnershipConflict,
				message: fmt.Sprintf("namespace %s is not controlled by this tenant; not deleting it", nsName)}
		}
		if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); client.IgnoreNotFound(err) != nil {
			return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: fmt.Sprintf("deleting namespace %s: %v", nsName, err), err: err}
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonNamespaceRemoved, "Delete",
			"deleting namespace %s: the tenant is %s", nsName, t.Spec.State)
	}
	return progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "waiting for namespace %s to finish terminating", nsName)
}

// finalize runs when a tenant is deleted: its namespace goes with it. Data outside the cluster
// is dropped only for a Purged tenant, and then before the tenant goes; any other tenant's
// databases are left in place, and an event says so.
func (r *TenantReconciler) finalize(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.Finalizer) {
		return nil
	}
	// A spare no customer has used holds no customer data: deleting it (scaling a pool down,
	// deleting a pool) drops its databases, as Purged would.
	if t.Spec.State == tenancyv1alpha1.StatePurged || IsUnallocatedSpare(t) {
		if res := r.purgeDatabases(ctx, t); !res.done {
			if res.err != nil {
				return res.err
			}
			return fmt.Errorf("purging databases: %s", res.message)
		}
	} else {
		r.reportKeptDatabases(t)
	}
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: r.Config.NamespaceName(t.Name)}, ns)
	switch {
	case err == nil && ns.DeletionTimestamp.IsZero() && metav1.IsControlledBy(ns, t):
		if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
		log.FromContext(ctx).Info("deleted tenant namespace", "namespace", ns.Name)
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	orig := t.DeepCopy()
	controllerutil.RemoveFinalizer(t, tenancyv1alpha1.Finalizer)
	if err := r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	r.forget(r.Config.NamespaceName(t.Name))
	return nil
}

// forget drops what is remembered about a namespace that is gone.
func (r *TenantReconciler) forget(nsName string) {
	r.Applied.Forget(nsName)
	r.rendered.forget(nsName)
}

func objectRef(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if obj.GetNamespace() == "" {
		return kind + "/" + obj.GetName()
	}
	return kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// phaseResult is one phase's outcome and the condition that reports it.
type phaseResult struct {
	condition string
	outcome
}

func waitingForNamespace() outcome {
	return progressing(tenancyv1alpha1.ReasonNamespaceNotReady, "waiting for the namespace")
}

// copySharedSecrets copies the template secrets shared with the tenant into its namespace and
// removes copies whose source is gone or no longer shared with it. Reads come from the cache;
// only copies that differ are written.
func (r *TenantReconciler) copySharedSecrets(ctx context.Context, t *tenancyv1alpha1.Tenant) outcome {
	nsName := r.Config.NamespaceName(t.Name)
	templates := &corev1.SecretList{}
	if err := r.Client.List(ctx, templates, client.InNamespace(r.Config.Secrets.TemplateNamespace)); err != nil {
		return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
	}
	desired, invalid := resources.SharedSecrets(t, nsName, templates.Items)
	for _, e := range invalid {
		// The template is wrong, not the tenant: the event goes on the template secret, and the
		// tenant goes on with the secrets that are valid.
		r.Recorder.Eventf(e.Source, t, corev1.EventTypeWarning, tenancyv1alpha1.ReasonInvalidObject, "Share", "%v", e.Err)
	}

	applier := &apply.Applier{Client: r.Client, APIReader: r.APIReader, Memo: r.Applied}
	keep := make(map[string]bool, len(desired))
	for _, s := range desired {
		keep[s.Name] = true
		if _, err := applier.Apply(ctx, s); err != nil {
			return r.applyFailed(t, s, err)
		}
	}

	copies := &corev1.SecretList{}
	if err := r.Client.List(ctx, copies, client.InNamespace(nsName), client.MatchingLabels{
		tenancyv1alpha1.SharedCopyLabel: "true", tenancyv1alpha1.TenantLabel: t.Name,
	}); err != nil {
		return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
	}
	for i := range copies.Items {
		c := &copies.Items[i]
		if keep[c.Name] || !metav1.IsControlledBy(c, t) {
			continue
		}
		if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
			return outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: fmt.Sprintf("removing secret %s/%s: %v", nsName, c.Name, err), err: err}
		}
	}

	return outcome{done: true, reason: tenancyv1alpha1.ReasonSucceeded, message: fmt.Sprintf("%d shared secrets in place", len(desired))}
}
