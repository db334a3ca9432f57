package tenantbackup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=backuprequests;restorerequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=backuprequests/status;restorerequests/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantrestores,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// ReasonBackupRequested is the event of a BackupRequest whose TenantBackup is made.
const ReasonBackupRequested = "BackupRequested"

// ReasonRestoreRequested is the event of a RestoreRequest whose TenantRestore is made.
const ReasonRestoreRequested = "RestoreRequested"

// RequestReconciler answers a tenant's own requests, made in its namespace: a BackupRequest
// becomes a TenantBackup of the namespace's tenant, a RestoreRequest a TenantRestore of one of
// that tenant's own backups into itself. The tenant is the namespace's, found from the
// namespace's label and confirmed by the tenant's status: nothing in a request names a tenant.
// What a request made carries the tenant's UID (BackupRequestLabel), by which the day's limits
// count and retention keeps the newest requested backups.
type RequestReconciler struct {
	Client client.Client
	// APIReader counts the day's requests: two requests a moment apart must not both pass
	// because the cache has not shown the first one's backup yet.
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// Enabled is false when the operator has no backup store: every request is refused.
	Enabled bool
}

// requestOf maps what a request made back to the request, by its annotation.
func requestOf(_ context.Context, obj client.Object) []reconcile.Request {
	ns, name, ok := splitRequest(obj.GetAnnotations()[tenancyv1alpha1.RequestAnnotation])
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
}

func splitRequest(v string) (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(v, "/")
	return namespace, name, ok && namespace != "" && name != ""
}

// madeForRequest passes the TenantBackups and TenantRestores made for a request.
func madeForRequest() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetAnnotations()[tenancyv1alpha1.RequestAnnotation] != ""
	})
}

// SetupWithManager registers two controllers, one per kind of request; each wakes on its
// request and on what it made.
func (r *RequestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if err := (&backupRequestReconciler{r}).setup(mgr); err != nil {
		return err
	}
	return (&restoreRequestReconciler{r}).setup(mgr)
}

// backupRequestReconciler and restoreRequestReconciler are the two kinds' reconcilers, over the
// RequestReconciler they share.
type (
	backupRequestReconciler  struct{ *RequestReconciler }
	restoreRequestReconciler struct{ *RequestReconciler }
)

func (r *backupRequestReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("backuprequest").
		For(&tenancyv1alpha1.BackupRequest{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&tenancyv1alpha1.TenantBackup{}, handler.EnqueueRequestsFromMapFunc(requestOf), builder.WithPredicates(madeForRequest())).
		Complete(shutdown.Quiet(r))
}

func (r *backupRequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcileBackup(ctx, req)
}

func (r *restoreRequestReconciler) setup(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("restorerequest").
		For(&tenancyv1alpha1.RestoreRequest{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&tenancyv1alpha1.TenantRestore{}, handler.EnqueueRequestsFromMapFunc(requestOf), builder.WithPredicates(madeForRequest())).
		Complete(shutdown.Quiet(r))
}

func (r *restoreRequestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.reconcileRestore(ctx, req)
}

// requestObservation is what one reconcile of a request learned and did.
type requestObservation struct {
	// made is the TenantBackup or TenantRestore made for the request, as last read; nil before
	// it is made, or once it is gone.
	made client.Object
	// name is its name, once made.
	name string
	// gone: what the request made, recorded in its status, is deleted.
	gone bool
	// cancelled: what was made was refused before it started, and is deleted: a restore so that
	// it never runs later over newer data, a backup so that it does not wait for good.
	cancelled bool
	// err stopped the reconcile: a refusal, final, or an error tried again.
	err error
}

func (r *RequestReconciler) reconcileBackup(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	br := &tenancyv1alpha1.BackupRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, br); err != nil || !br.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if br.Status.Phase == tenancyv1alpha1.BackupFailed {
		// Refused or failed: final, or a day's limit would pass on a restart.
		return ctrl.Result{}, nil
	}
	var o requestObservation
	o.err = r.backup(ctx, br, &o)
	if werr := writes.PatchStatus(ctx, r.Client, br, &br.Status, computeBackupRequestStatus(br, o), client.MergeFromWithOptimisticLock{}); werr != nil {
		return writes.RetryConflict(werr)
	}
	if _, refused := errors.AsType[*refusal](o.err); refused {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, o.err
}

// backup makes the request's TenantBackup, or follows the one it made, and applies the
// retention of the tenant's requested backups once it succeeded.
func (r *RequestReconciler) backup(ctx context.Context, br *tenancyv1alpha1.BackupRequest, o *requestObservation) error {
	if br.Status.Backup != "" {
		found, err := r.follow(ctx, br.Status.Backup, br.UID, &tenancyv1alpha1.TenantBackup{}, o)
		o.gone = !found && err == nil
		return err
	}
	t, err := r.tenantOf(ctx, br.Namespace)
	if err != nil {
		return err
	}
	// Made by an earlier reconcile whose status write was lost, it is followed, not made again.
	name := RequestedBackupName(t.Name, br.UID)
	if found, err := r.follow(ctx, name, br.UID, &tenancyv1alpha1.TenantBackup{}, o); found || err != nil {
		return err
	}
	if err := r.limit(ctx, func() client.ObjectList { return &tenancyv1alpha1.TenantBackupList{} }, t, *r.Config.Backups.SelfService.BackupsPerDay, "backup"); err != nil {
		return err
	}
	b := &tenancyv1alpha1.TenantBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{tenancyv1alpha1.BackupRequestLabel: string(t.UID), tenancyv1alpha1.BackupTenantLabel: t.Name},
			Annotations: requestAnnotations(br),
		},
		Spec: tenancyv1alpha1.TenantBackupSpec{Tenant: t.Name, Databases: br.Spec.Databases},
	}
	if err := r.Client.Create(ctx, b); err != nil {
		return fmt.Errorf("creating TenantBackup %s: %w", name, err)
	}
	o.made, o.name = b, name
	r.Recorder.Eventf(br, b, corev1.EventTypeNormal, ReasonBackupRequested, "Request", "TenantBackup %s of tenant %s made", name, t.Name)
	return nil
}

// RequestedBackupName is the name of the TenantBackup made for a tenant's BackupRequest: the
// tenant's name (at most 50 characters) and the first 8 of the request's UID.
func RequestedBackupName(tenant string, uid types.UID) string {
	return fmt.Sprintf("%s-req-%s", tenant, string(uid)[:8])
}

// RequestedRestoreName is the name of the TenantRestore made for a tenant's RestoreRequest.
func RequestedRestoreName(uid types.UID) string { return "req-" + string(uid) }

func requestAnnotations(obj client.Object) map[string]string {
	return map[string]string{
		tenancyv1alpha1.RequestAnnotation:    obj.GetNamespace() + "/" + obj.GetName(),
		tenancyv1alpha1.RequestUIDAnnotation: string(obj.GetUID()),
	}
}

// follow reads what a request made, by name, into into, and reports whether it is there; one
// made for another request is, to this one, not there. A requested backup that succeeded has
// the tenant's requested backups' retention applied.
func (r *RequestReconciler) follow(ctx context.Context, name string, uid types.UID, into client.Object, o *requestObservation) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, into)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case into.GetAnnotations()[tenancyv1alpha1.RequestUIDAnnotation] != string(uid):
		return false, nil
	}
	o.made, o.name = into, name
	switch made := into.(type) {
	case *tenancyv1alpha1.TenantBackup:
		if made.Status.Phase == tenancyv1alpha1.BackupSucceeded {
			return true, r.retain(ctx, made)
		}
		if made.Status.Job == "" && made.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(made.Status.Conditions, tenancyv1alpha1.StalledCondition) {
			// Refused before it started (a database the tenant does not have): it holds
			// nothing, and would wait for good outside any retention. It is ended, and the
			// tenant asks again.
			if err := r.Client.Delete(ctx, made, client.Preconditions{UID: &made.UID}); client.IgnoreNotFound(err) != nil {
				return true, err
			}
			o.cancelled = true
		}
	case *tenancyv1alpha1.TenantRestore:
		if refusedBeforeStart(made) {
			// A refused restore waits for a change that would let it start, days later maybe,
			// over data written since: a tenant's is ended instead, and the tenant asks again.
			if err := r.Client.Delete(ctx, made, client.Preconditions{UID: &made.UID}); client.IgnoreNotFound(err) != nil {
				return true, err
			}
			o.cancelled = true
		}
	}
	return true, nil
}

// refusedBeforeStart reports whether a restore is refused (Stalled) and has no Job.
func refusedBeforeStart(rs *tenancyv1alpha1.TenantRestore) bool {
	return rs.Status.Job == "" && rs.DeletionTimestamp.IsZero() && rs.Status.Phase != tenancyv1alpha1.BackupSucceeded &&
		meta.IsStatusConditionTrue(rs.Status.Conditions, tenancyv1alpha1.StalledCondition)
}

// tenantOf is the tenant whose namespace this is: the namespace's tenant label names it, and
// the tenant's status must say it is its namespace (a namespace another tenant left behind,
// or one labelled by hand, is no tenant's).
func (r *RequestReconciler) tenantOf(ctx context.Context, namespace string) (*tenancyv1alpha1.Tenant, error) {
	if !r.Enabled || !r.Config.Backups.SelfService.Enabled {
		return nil, refuse(tenancyv1alpha1.ReasonSelfServiceOff, "the platform does not take backup or restore requests from tenants: ask its administrators")
	}
	notTenant := refuse(tenancyv1alpha1.ReasonTenantNotFound, "namespace %s is no tenant's: requests are made in a tenant's own namespace", namespace)
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	if apierrors.IsNotFound(err) {
		// The cache holds Landlord's namespaces only, and may not hold a new one yet: the API
		// server has the last word before a refusal, which is final.
		err = r.APIReader.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, notTenant
	case err != nil:
		return nil, err
	}
	name := ns.Labels[tenancyv1alpha1.TenantLabel]
	if name == "" {
		return nil, notTenant
	}
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notTenant
		}
		return nil, err
	}
	switch t.Status.Namespace {
	case namespace:
	case "":
		// A new tenant writes its namespace in its status at the end of its first reconcile:
		// a request made before is answered once it has, not refused.
		return nil, fmt.Errorf("tenant %s does not record its namespace yet", t.Name)
	default:
		return nil, notTenant
	}
	if err := refused(t); err != nil {
		return nil, err
	}
	return t, nil
}

// limit refuses a request beyond the day's: what requests of the tenant made in the last 24
// hours (restores' safety backups aside) is counted from the cache, which refuses a tenant over
// its limit at no request, then from the API server, which the cache may lag behind.
func (r *RequestReconciler) limit(ctx context.Context, newList func() client.ObjectList, t *tenancyv1alpha1.Tenant, perDay int32, what string) error {
	if perDay == 0 {
		return refuse(tenancyv1alpha1.ReasonRequestLimited, "the platform takes no %s requests from tenants: ask its administrators", what)
	}
	now := r.Clock.Now()
	for _, reader := range []client.Reader{r.Client, r.APIReader} {
		list := newList()
		if err := reader.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.BackupRequestLabel: string(t.UID)}); err != nil {
			return err
		}
		var recent []time.Time
		items, err := meta.ExtractList(list)
		if err != nil {
			return err
		}
		for _, item := range items {
			obj, err := meta.Accessor(item)
			if err != nil {
				return err
			}
			if at := obj.GetCreationTimestamp().Time; now.Sub(at) < 24*time.Hour && obj.GetLabels()[SafetyBackupUIDLabel] == "" {
				recent = append(recent, at)
			}
		}
		if len(recent) < int(perDay) {
			continue
		}
		slices.SortFunc(recent, func(a, b time.Time) int { return a.Compare(b) })
		next := recent[len(recent)-int(perDay)].Add(24 * time.Hour)
		return refuse(tenancyv1alpha1.ReasonRequestLimited, "the platform's daily limit of %s requests per tenant is %d, and tenant %s made %d in the last 24 hours: make another request after %s",
			what, perDay, t.Name, len(recent), next.UTC().Format(time.RFC3339))
	}
	return nil
}

// retain deletes the tenant's requested backups beyond the newest Keep that succeeded, and the
// failed ones older than the newest that succeeded, as a schedule's retention does its own.
func (r *RequestReconciler) retain(ctx context.Context, newest *tenancyv1alpha1.TenantBackup) error {
	list := &tenancyv1alpha1.TenantBackupList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.BackupRequestLabel: newest.Labels[tenancyv1alpha1.BackupRequestLabel]}); err != nil {
		return err
	}
	var backups []*tenancyv1alpha1.TenantBackup
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			backups = append(backups, &list.Items[i])
		}
	}
	keep := int(r.Config.Backups.SelfService.Keep)
	return deleteExpired(ctx, r.Client, r.Recorder, newest, backups, keep, byCreation, fmt.Sprintf("a tenant's newest %d requested backups are kept", keep))
}

func (r *RequestReconciler) reconcileRestore(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rr := &tenancyv1alpha1.RestoreRequest{}
	err := r.Client.Get(ctx, req.NamespacedName, rr)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, r.cancelOrphans(ctx, req.NamespacedName)
	case err != nil:
		return ctrl.Result{}, err
	case !rr.DeletionTimestamp.IsZero():
		return ctrl.Result{}, nil
	}
	if rr.Status.Phase == tenancyv1alpha1.BackupFailed || rr.Status.Phase == tenancyv1alpha1.BackupSucceeded {
		return ctrl.Result{}, nil
	}
	var o requestObservation
	o.err = r.restore(ctx, rr, &o)
	if werr := writes.PatchStatus(ctx, r.Client, rr, &rr.Status, computeRestoreRequestStatus(rr, o), client.MergeFromWithOptimisticLock{}); werr != nil {
		return writes.RetryConflict(werr)
	}
	if ref, refused := errors.AsType[*refusal](o.err); refused {
		if ref.reason == tenancyv1alpha1.ReasonBackupNotReady {
			// The backup named is the tenant's, and has not started: nothing of it wakes this.
			return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, o.err
}

// cancelOrphans deletes the restores made for a deleted request that have not started: a
// tenant that takes its request back stops what it asked for, while it can. One whose Job runs
// runs to its end, since stopping it half-way would leave the databases half-written.
func (r *RequestReconciler) cancelOrphans(ctx context.Context, request client.ObjectKey) error {
	list := &tenancyv1alpha1.TenantRestoreList{}
	if err := r.Client.List(ctx, list, client.HasLabels{tenancyv1alpha1.BackupRequestLabel}); err != nil {
		return err
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if rs.Annotations[tenancyv1alpha1.RequestAnnotation] != request.String() || rs.Status.Job != "" ||
			rs.Status.Phase == tenancyv1alpha1.BackupSucceeded || rs.Status.Phase == tenancyv1alpha1.BackupFailed || !rs.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, rs, client.Preconditions{UID: &rs.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting TenantRestore %s: %w", rs.Name, err)
		}
	}
	return nil
}

// restore makes the request's TenantRestore, once the backup named is the tenant's own, or
// follows the one it made.
func (r *RequestReconciler) restore(ctx context.Context, rr *tenancyv1alpha1.RestoreRequest, o *requestObservation) error {
	if rr.Status.Restore != "" {
		found, err := r.follow(ctx, rr.Status.Restore, rr.UID, &tenancyv1alpha1.TenantRestore{}, o)
		o.gone = !found && err == nil
		return err
	}
	t, err := r.tenantOf(ctx, rr.Namespace)
	if err != nil {
		return err
	}
	name := RequestedRestoreName(rr.UID)
	if found, err := r.follow(ctx, name, rr.UID, &tenancyv1alpha1.TenantRestore{}, o); found || err != nil {
		return err
	}
	// Another tenant's backup, or one of a tenant of the same name before this one, is answered
	// as one that does not exist: a request learns nothing of what is not its tenant's.
	notFound := refuse(tenancyv1alpha1.ReasonBackupNotFound, "TenantBackup %s does not exist, or is not tenant %s's", rr.Spec.Backup, t.Name)
	b := &tenancyv1alpha1.TenantBackup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: rr.Spec.Backup}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return notFound
		}
		return err
	}
	switch {
	case b.Spec.Tenant != t.Name, b.Status.TenantUID != "" && b.Status.TenantUID != string(t.UID):
		return notFound
	case b.Status.TenantUID == "" && meta.IsStatusConditionTrue(b.Status.Conditions, tenancyv1alpha1.StalledCondition):
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup %s was refused: there is nothing to restore", b.Name)
	case b.Status.TenantUID == "":
		return refuse(tenancyv1alpha1.ReasonBackupNotReady, "TenantBackup %s has not started yet", b.Name)
	case b.Status.Phase == tenancyv1alpha1.BackupFailed:
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup %s failed: there is nothing to restore", b.Name)
	}
	if err := r.limit(ctx, func() client.ObjectList { return &tenancyv1alpha1.TenantRestoreList{} }, t, *r.Config.Backups.SelfService.RestoresPerDay, "restore"); err != nil {
		return err
	}
	rs := &tenancyv1alpha1.TenantRestore{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{tenancyv1alpha1.BackupRequestLabel: string(t.UID)},
			Annotations: requestAnnotations(rr),
		},
		// No tenant named: the backup's own, whose UID the restore controller checks again,
		// and whose data it keeps in a safety backup before replacing it.
		Spec: tenancyv1alpha1.TenantRestoreSpec{Backup: b.Name, Databases: rr.Spec.Databases},
	}
	if err := r.Client.Create(ctx, rs); err != nil {
		return fmt.Errorf("creating TenantRestore %s: %w", name, err)
	}
	o.made, o.name = rs, name
	r.Recorder.Eventf(rr, rs, corev1.EventTypeNormal, ReasonRestoreRequested, "Request", "TenantRestore %s of TenantBackup %s into tenant %s made", name, b.Name, t.Name)
	return nil
}
