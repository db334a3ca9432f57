package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/policy"
)

// PolicyReconciler installs Landlord's admission policies and bindings at start-up and keeps
// them as built: one deleted or edited by anyone is put back within seconds. An unchanged
// policy costs no request, since each is compared with the cache first.
type PolicyReconciler struct {
	Client client.Client
	// Operator is the operator's identity, which the protection policies let set the labels
	// that carry meaning, and the namespaces its writes are confined to.
	Operator policy.Operator
}

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings;mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;list;watch;create;patch

// policiesRequest is the one request the controller works on: the policies are few and are
// applied together.
var policiesRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "admission-policies"}}

// SetupWithManager registers the controller: it runs once at start-up and again on any change
// to a policy or binding Landlord manages.
func (r *PolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{policiesRequest}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("policy").
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(policiesRequest)
			return nil
		})).
		Watches(&admissionregistrationv1.MutatingAdmissionPolicy{}, all).
		Watches(&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, all).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicy{}, all).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, all).
		Complete(r)
}

// Reconcile applies every policy and binding that differs from what Landlord builds.
func (r *PolicyReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	// Landlord's policy names are its own and have no owner object: a policy that lost its
	// managed label (and with it its place in the cache) is taken back.
	applier := &apply.Applier{Client: r.Client, ReservedNames: true}
	var errs []error
	for _, obj := range policy.Objects(r.Operator) {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		replaced, err := r.replaceEditedSpec(ctx, obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("restoring %s %s: %w", kind, obj.GetName(), err))
			continue
		}
		if replaced {
			// The write brings the policy back through the cache; it is applied then.
			log.FromContext(ctx).Info("admission policy restored", "kind", kind, "name", obj.GetName())
			continue
		}
		result, err := applier.Apply(ctx, obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("applying %s %s: %w", kind, obj.GetName(), err))
			continue
		}
		if result != apply.Unchanged {
			log.FromContext(ctx).Info("admission policy "+result.String(), "kind", kind, "name", obj.GetName())
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// replaceEditedSpec replaces the spec of a cached policy that was edited, whole. A server-side
// apply would not do: it merges keyed and set-like lists (matchConditions, validationActions)
// with entries that other field managers added, and one added matchCondition or Warn action can
// switch a policy off.
func (r *PolicyReconciler) replaceEditedSpec(ctx context.Context, desired client.Object) (bool, error) {
	live, ok := desired.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("cannot copy %T", desired)
	}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return false, err
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false, err
	}
	if apply.Contains(have["spec"], want["spec"]) {
		return false, nil
	}
	patch, err := json.Marshal([]map[string]any{
		// A policy changed since the cache saw it fails the patch, and the reconcile is retried
		// with the change in view, rather than overwritten unseen.
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.GetResourceVersion()},
		{"op": "replace", "path": "/spec", "value": want["spec"]},
	})
	if err != nil {
		return false, err
	}
	return true, r.Client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(apply.FieldOwner))
}
