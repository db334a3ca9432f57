package admissionpolicy

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/policy"
)

// Reconciler installs Landlord's admission policies and bindings at start-up and keeps
// them as built: one deleted or edited by anyone is put back within seconds. An unchanged
// policy costs no request, since each is compared with the cache first.
type Reconciler struct {
	Client client.Client
	// APIReader reads a policy someone else added fields to, for the managed fields the cache
	// does not keep (see apply.Applier.WholeObject).
	APIReader client.Reader
	// Recorder reports each repair as an event on the policy.
	Recorder events.EventRecorder
	// Operator is the operator's identity, which the protection policies let set the labels
	// that carry meaning, and the namespaces its writes are confined to.
	Operator policy.Operator
	// Auditor, when set, judges what got into tenant namespaces while a policy was absent: once
	// the policies are in place at start-up, and again whenever one had to be created or
	// repaired (policyAuditDue).
	Auditor *Auditor
	// audits is the audit's schedule. Reconcile has one request, so it never runs twice at once.
	audits auditSchedule
	// settled mirrors the schedule for readers outside the reconcile: the start's audit has run
	// and no other is due.
	settled atomic.Bool
}

// AuditsSettled is whether the audits a start or a policy put back calls for have all run: a
// test that restarts the operator waits for it, so that no audit runs into the next test.
func (r *Reconciler) AuditsSettled() bool { return r.settled.Load() }

// The operator may read and change its own policies only, by name: a bug cannot switch off
// another admission policy of the cluster. (Kubernetes cannot restrict a create by name.) A
// test keeps the names in step with internal/policy.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings;mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=list;watch;create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings;mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;patch,resourceNames=landlord-node-pool-placement;landlord-node-pool;landlord-cost-code;landlord-service-exposure;landlord-ingress-hosts;landlord-route-hostnames;landlord-ingress-classes;landlord-ingress-annotations;landlord-managed-labels;landlord-operator-namespaces;landlord-tenant-deletion;landlord-tenant-labels;landlord-crd-protection;landlord-tenant-finalizer;landlord-pod-scheduling;landlord-disruption-budgets;landlord-pod-finalizers;landlord-controller-labels;landlord-component-scale;landlord-serving-finalizers;landlord-namespace-labels;landlord-managed-by-label;landlord-platform-namespaces;landlord-component-objects;landlord-managed-secrets;landlord-network-policy-peers;landlord-managed-network-policies;landlord-tenant-class-overrides

// policiesRequest is the one request the controller works on: the policies are few and are
// applied together.
var policiesRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "admission-policies"}}

// SetupWithManager registers the controller: it runs once at start-up and again on any change
// to a policy or binding Landlord manages.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
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
		Complete(shutdown.Quiet(r))
}

// Reconcile applies every policy and binding that differs from what Landlord builds.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	// Landlord's policy names are its own and have no owner object: a policy that lost its
	// managed label (and with it its place in the cache) is taken back.
	applier := &apply.Applier{Client: r.Client, APIReader: r.APIReader, ReservedNames: true,
		// A field anyone adds to a policy (an objectSelector, excludeResourceRules, resourceNames,
		// a matchCondition, a Warn action) can switch it off for most requests while every
		// field Landlord set is still in place: the whole spec is put back.
		WholeObject: true}
	var errs []error
	for _, obj := range policy.Objects(r.Operator) {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		applier.Repaired = writes.DriftRepaired(log.FromContext(ctx), r.Recorder, obj)
		result, err := applier.Apply(ctx, obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("applying %s %s: %w", kind, obj.GetName(), err))
			continue
		}
		if result != apply.Unchanged {
			log.FromContext(ctx).Info("admission policy "+result.String(), writes.ObjectLogKeys(obj)...)
			if auditedPolicies[obj.GetName()] {
				r.audits.gap(obj.GetName())
				r.settled.Store(false)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return r.auditTenantNamespaces(ctx)
}
