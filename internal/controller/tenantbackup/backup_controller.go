package tenantbackup

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/jobslots"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/secret"
)

// Finalizer keeps a TenantBackup until its objects are deleted from the store.
const Finalizer = "tenancy.landlord.dev/backup"

// Store is what the controllers read and delete of the backup store: manifests, whole backups,
// and the tenants' data keys, which they hand to the Jobs and destroy at a purge.
type Store interface {
	Manifest(ctx context.Context, location string) (*backup.Manifest, error)
	Delete(ctx context.Context, location string) error
	TenantKey(ctx context.Context, tenantUID string, create bool) ([]byte, error)
	DestroyTenantKey(ctx context.Context, tenantUID string) error
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackups,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackups/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantrestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantrestores/status,verbs=get;patch

// BackupReconciler runs TenantBackups.
type BackupReconciler struct {
	Client client.Client
	// APIReader confirms what the cache says is gone.
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Secrets holds the tenants' database credentials; the Job logs in with the tenant's own.
	Secrets secret.TenantSecrets
	// Store is nil when no backup store is configured.
	Store Store
	// Slots keeps each database server's Jobs within its limit, shared with the tenant
	// controller's migrations; SetupWithManager makes one when none is given.
	Slots *jobslots.Slots
}

// waitingRecheck is how soon (and up to as long again) a backup waiting for a place on a server
// looks again, should no Job's end wake it first (one woken that took no place, or a place freed
// by another process).
const waitingRecheck = time.Minute

// SetupWithManager registers the controller: a backup's Job wakes it, a Job that ends on a
// server wakes the backup that waited longest for a place on it, and a change to the tenant a
// waiting backup names wakes that backup.
func (r *BackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Slots == nil {
		r.Slots = &jobslots.Slots{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantbackup").
		For(&tenancyv1alpha1.TenantBackup{}, builder.WithPredicates(changed())).
		Owns(&batchv1.Job{}).
		Watches(&batchv1.Job{}, r.Slots.Wake(jobslots.Backups)).
		Watches(&tenancyv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(r.pendingOf)).
		Complete(shutdown.Quiet(r))
}

// changed passes a new generation and the start of a deletion; the controller's own status and
// finalizer writes wake nothing.
func changed() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}})
}

// pendingOf maps a tenant's event to the backups of it that have not started.
func (r *BackupReconciler) pendingOf(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &tenancyv1alpha1.TenantBackupList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.PendingBackupTenant: obj.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

func (r *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &tenancyv1alpha1.TenantBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.forget(ctx, b)
	}
	if !controllerutil.ContainsFinalizer(b, Finalizer) {
		orig := b.DeepCopy()
		controllerutil.AddFinalizer(b, Finalizer)
		if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return writes.RetryConflict(err)
		}
	}
	var o backupObservation
	switch b.Status.Phase {
	case tenancyv1alpha1.BackupSucceeded, tenancyv1alpha1.BackupFailed:
		return ctrl.Result{}, deletePlan(ctx, r.Client, r.Config.Backups.Namespace, b.Status.Job, b)
	case tenancyv1alpha1.BackupRunning:
		o.err = r.watch(ctx, b, &o)
	default:
		o.err = r.start(ctx, b, &o)
	}
	// Optimistic: a reconcile working from a copy older than the one that started the Job must
	// not write Pending over Running.
	if werr := writes.PatchStatus(ctx, r.Client, b, &b.Status, computeBackupStatus(b, o), client.MergeFromWithOptimisticLock{}); werr != nil {
		return writes.RetryConflict(werr)
	}
	// A refusal is the status's to say, not an error to try again.
	var ref *refusal
	if errors.As(o.err, &ref) {
		return ctrl.Result{}, nil
	}
	// Nor is a wait for a place on a server: a Job's end wakes the backup. The rechecks of a
	// night's waiting backups are spread, not all at the same second.
	if _, full := errors.AsType[*jobslots.Full](o.err); full {
		return ctrl.Result{RequeueAfter: waitingRecheck + rand.N(waitingRecheck)}, nil
	}
	if o.ended != nil && o.err == nil {
		// Once the end is recorded, the plan's passwords go; a deletion that fails is tried
		// again (the phase's branch above) and changes nothing of the verdict.
		return ctrl.Result{}, deletePlan(ctx, r.Client, r.Config.Backups.Namespace, b.Status.Job, b)
	}
	return ctrl.Result{}, o.err
}

// start makes the backup's Secret and Job, once the tenant and the store allow it, and records
// in o what it made.
func (r *BackupReconciler) start(ctx context.Context, b *tenancyv1alpha1.TenantBackup, o *backupObservation) error {
	if r.Store == nil {
		return refuse(tenancyv1alpha1.ReasonBackupsNotConfigured, "the operator has no backup store: set backups.objects and backups.key in its configuration")
	}
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: b.Spec.Tenant}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(tenancyv1alpha1.ReasonTenantNotFound, "tenant %s does not exist", b.Spec.Tenant)
		}
		return err
	}
	servers, limits, err := serversOf(ctx, r.Client, t, b.Spec.Databases)
	if err != nil {
		return err
	}
	name := JobName(backup.OpBackup, b.UID)
	jobKey := client.ObjectKey{Namespace: r.Config.Backups.Namespace, Name: name}
	waiter := jobslots.Waiter{Queue: jobslots.Backups, Key: client.ObjectKeyFromObject(b)}
	// A restore's safety backup is someone waiting on their data: like the restore, it takes no
	// turn, but counts. Any other looks for a place first, from the cache alone, before the
	// store, the API server and the key service are asked anything: a night's backups waiting
	// their turn cost no more than that look each.
	urgent := b.Labels[SafetyBackupUIDLabel] != ""
	if !urgent {
		if err := r.Slots.Check(ctx, r.Client, waiter, limits, jobKey); err != nil {
			return err
		}
	}
	dbs, err := targets(ctx, r.Client, r.Secrets, r.Config, t, b.Spec.Databases)
	if err != nil {
		return err
	}
	if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.BackupsFinalizer) {
		// A tenant with backups is purged of them before it goes (PurgeReconciler).
		orig := t.DeepCopy()
		controllerutil.AddFinalizer(t, tenancyv1alpha1.BackupsFinalizer)
		if err := r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("marking tenant %s as one with backups: %w", t.Name, err)
		}
	}
	plan := backup.Plan{
		Operation: backup.OpBackup, Objects: r.Config.Backups.Objects,
		Location: Location(t.UID, b.UID), Tenant: t.Name, TenantUID: string(t.UID), Backup: b.Name,
		Databases: dbs, MaxBytes: r.Config.Backups.MaxDumpSize.Value(),
	}
	if b.Status.Location == "" {
		// Where the Job writes, and whose data it is, are recorded before there is a Job or a
		// key: a backup deleted with its status write after the Job lost would leave what the
		// Job wrote in the store, unknown, and a purge finds the backups of a tenant by its UID.
		o.recorded = &backupPlace{tenantUID: string(t.UID), location: plan.Location}
		if err := writes.PatchStatus(ctx, r.Client, b, &b.Status, computeBackupStatus(b, *o), client.MergeFromWithOptimisticLock{}); err != nil {
			return err
		}
	}
	if b.Status.TenantUID != string(t.UID) {
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s was deleted and created again since this backup was asked for", t.Name)
	}
	// The cache may not have seen the tenant purged yet: the API server says.
	live := &tenancyv1alpha1.Tenant{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(t), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if live.UID != t.UID || live.Spec.State == tenancyv1alpha1.StatePurged || !live.DeletionTimestamp.IsZero() {
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s is Purged, being deleted or was created again: its data is not backed up", t.Name)
	}
	// The Job gets the tenant's data key alone: it can open no other tenant's dumps.
	key, err := r.Store.TenantKey(ctx, string(t.UID), true)
	if errors.Is(err, backup.ErrKeyDestroyed) {
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s is purged: its data key is destroyed", t.Name)
	}
	if err != nil {
		return err
	}
	plan.TenantKey = key
	owner := *metav1.NewControllerRef(b, tenancyv1alpha1.GroupVersion.WithKind("TenantBackup"))
	create := func() error { return createJob(ctx, r.Client, r.Config.Backups, name, plan, owner, servers) }
	// Within each server's limit of Jobs at once, shared with migrations and restores: a backup
	// that finds one full waits, Pending, for a Job on it to end. A Job made by a reconcile
	// whose status write was lost holds its place already.
	err = r.Client.Get(ctx, jobKey, &batchv1.Job{})
	switch {
	case err == nil:
		r.Slots.Seen(jobKey)
		err = create()
	case !apierrors.IsNotFound(err):
	case urgent:
		err = create()
	default:
		err = r.Slots.Create(ctx, r.Client, waiter, limits, jobKey, create)
	}
	if err != nil {
		return err
	}
	o.now = metav1.Now()
	o.started = &backupJob{
		namespace: r.Config.Backups.Namespace, name: name, tenant: t.Name, databases: len(dbs),
		backupPlace: backupPlace{tenantUID: string(t.UID), location: plan.Location},
	}
	r.Recorder.Eventf(b, t, corev1.EventTypeNormal, tenancyv1alpha1.ReasonJobRunning, "Backup", "Job %s/%s started", r.Config.Backups.Namespace, name)
	return nil
}

// watch follows the Job: a backup succeeded when its Job did and its manifest, written last,
// is in the store and holds what was asked for. How it ended is recorded in o; Reconcile
// deletes the plan once that is written.
func (r *BackupReconciler) watch(ctx context.Context, b *tenancyv1alpha1.TenantBackup, o *backupObservation) error {
	done, failed, msg, err := jobEnded(ctx, r.Client, r.APIReader, r.Config.Backups.Namespace, b.Status.Job)
	if err != nil || !done {
		return err
	}
	reason := failedJob
	if !failed {
		m, err := r.Store.Manifest(ctx, b.Status.Location)
		switch {
		case errors.Is(err, backup.ErrNoManifest):
			msg = fmt.Sprintf("Job %s/%s ended without writing the backup's manifest", r.Config.Backups.Namespace, b.Status.Job)
			reason = failedNoManifest
		case err != nil:
			return fmt.Errorf("reading the backup's manifest: %w", err)
		case m.TenantUID != b.Status.TenantUID || !holdsAsked(m, b.Spec.Databases):
			msg = "the backup's manifest is not the one this backup asked for"
			reason = failedWrongManifest
		default:
			r.succeeded(b, o, m)
			return nil
		}
	}
	// Nothing of a failed backup counts, and nothing of it is kept.
	if err := r.Store.Delete(ctx, b.Status.Location); err != nil {
		return fmt.Errorf("deleting what the failed backup wrote: %w", err)
	}
	o.now = metav1.Now()
	o.ended = &backupEnd{failed: true, message: msg}
	backupsTotal.WithLabelValues("failed").Inc()
	backupFailures.WithLabelValues(reason).Inc()
	r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonJobFailed, "Backup", "%s", msg)
	return nil
}

// succeeded records in o a backup whose Job wrote its manifest m, and counts and tells it.
func (r *BackupReconciler) succeeded(b *tenancyv1alpha1.TenantBackup, o *backupObservation, m *backup.Manifest) {
	o.now = metav1.Now()
	o.ended = &backupEnd{manifest: m}
	_, size, msg := manifestSummary(m)
	backupsTotal.WithLabelValues("succeeded").Inc()
	backupBytes.Add(float64(size))
	if b.Status.StartTime != nil {
		backupSeconds.Observe(time.Since(b.Status.StartTime.Time).Seconds())
	}
	r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonSucceeded, "Backup", "backed up %s", msg)
}

// holdsAsked reports whether the manifest holds every database asked for by name.
func holdsAsked(m *backup.Manifest, names []string) bool {
	for _, n := range names {
		if !slices.ContainsFunc(m.Databases, func(d backup.DumpEntry) bool { return d.Name == n }) {
			return false
		}
	}
	return len(m.Databases) > 0
}

// forget deletes the backup from the store once no Job of it can write any more (its Job and
// the Job's pods gone), and lets the TenantBackup go.
func (r *BackupReconciler) forget(ctx context.Context, b *tenancyv1alpha1.TenantBackup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, Finalizer) {
		return ctrl.Result{}, nil
	}
	j := &batchv1.Job{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Config.Backups.Namespace, Name: JobName(backup.OpBackup, b.UID)}, j)
	switch {
	case err == nil:
		if j.DeletionTimestamp.IsZero() {
			// Foreground: the Job stays until its pods are gone, and this waits for the Job.
			if err := r.Client.Delete(ctx, j, client.Preconditions{UID: &j.UID}, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	if b.Status.Location != "" {
		if b.Status.Location != Location(types.UID(b.Status.TenantUID), b.UID) {
			// Never another backup's objects, whatever the status says.
			return ctrl.Result{}, fmt.Errorf("status.location %q is not this backup's", b.Status.Location)
		}
		if r.Store == nil {
			return ctrl.Result{}, errors.New("the operator has no backup store to delete the backup from")
		}
		if err := r.Store.Delete(ctx, b.Status.Location); err != nil {
			return ctrl.Result{}, fmt.Errorf("deleting the backup from the store: %w", err)
		}
	}
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, b, client.MergeFrom(orig)))
}
