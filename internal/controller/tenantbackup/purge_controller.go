package tenantbackup

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// ReasonBackupsKept is the event of a Purged tenant whose backups, and the data key that opens
// them, are kept until backups.keepAfterPurge has passed.
const ReasonBackupsKept = "BackupsKept"

// ReasonBackupsPurged is the event of a Purged tenant whose backups are all deleted and whose
// data key is destroyed: no copy of its backups can be read any more.
const ReasonBackupsPurged = "BackupsPurged"

// ReasonExported is the event of a Purged tenant whose newest backup is written as an export to
// backups.exportAtPurge, before any of its backups is deleted.
const ReasonExported = "Exported"

// ReasonExportFailed is the event of a Purged tenant whose export could not be written: its
// backups and key are kept, and the export is tried again.
const ReasonExportFailed = "ExportFailed"

// ReasonNothingExported is the event of a Purged tenant that had no backup that succeeded when
// backups.exportAtPurge asked for its export: there is nothing to hand over.
const ReasonNothingExported = "NothingExported"

// Exporter writes a backup as an export where the platform hands it over.
type Exporter interface {
	Export(ctx context.Context, location, folder, tenantUID string) (*backup.Manifest, error)
}

// maxRecordedBackups bounds status.purge.backups.
const maxRecordedBackups = 100

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenants/finalizers,verbs=update
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackups,verbs=delete

// PurgeReconciler ends what a Purged tenant leaves in the backup store: it deletes the tenant's
// backups, at once or once backups.keepAfterPurge has passed, then destroys the tenant's data
// key, and records each step in the tenant's status.purge. A tenant that has backups carries
// BackupsFinalizer (the backup controller puts it there), so a Purged tenant that is deleted
// goes only after; any other tenant's backups are kept, and the finalizer only removed.
type PurgeReconciler struct {
	Client client.Client
	// APIReader reads the deletion record from the API server before an export is written.
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Store is nil when no backup store is configured.
	Store Store
	// Exports writes a Purged tenant's final export; nil when backups.exportAtPurge is empty.
	Exports Exporter
	Clock   clock.Clock
}

// SetupWithManager registers the controller: a Purged tenant, or one being deleted with the
// finalizer, wakes it, and so does any change to a backup of one.
func (r *PurgeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantbackuppurge").
		For(&tenancyv1alpha1.Tenant{}, builder.WithPredicates(predicate.NewPredicateFuncs(concerned))).
		Watches(&tenancyv1alpha1.TenantBackup{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: obj.(*tenancyv1alpha1.TenantBackup).Spec.Tenant}}}
		})).
		Complete(shutdown.Quiet(r))
}

// concerned passes the tenants this controller has anything to do with: Purged ones, and ones
// being deleted that still carry the finalizer. A living tenant with backups is none of its
// business, so the status writes of the fleet queue nothing here.
func concerned(obj client.Object) bool {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	return ok && (t.Spec.State == tenancyv1alpha1.StatePurged ||
		!t.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(t, tenancyv1alpha1.BackupsFinalizer))
}

func (r *PurgeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if t.Spec.State != tenancyv1alpha1.StatePurged {
		if !t.DeletionTimestamp.IsZero() {
			// Deleted without being purged: its backups are its data, and are kept.
			if err := r.release(ctx, t); err != nil {
				return writes.RetryConflict(err)
			}
		}
		return ctrl.Result{}, nil
	}
	if r.Store == nil {
		if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.BackupsFinalizer) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, errors.New("tenant is Purged and has backups, but the operator has no backup store to delete them from: configure backups.objects and backups.key")
	}
	if t.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.BackupsFinalizer) && (t.Status.Purge == nil || t.Status.Purge.Completed == nil) {
		// Deleting the Purged tenant now waits for its backups to go.
		orig := t.DeepCopy()
		controllerutil.AddFinalizer(t, tenancyv1alpha1.BackupsFinalizer)
		if err := r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return writes.RetryConflict(err)
		}
	}
	now := metav1.NewTime(r.Clock.Now())
	first := t.Status.Purge == nil
	rec := r.record(t, now)
	backups := &tenancyv1alpha1.TenantBackupList{}
	if err := r.Client.List(ctx, backups, client.MatchingFields{indexes.BackupTenantUID: string(t.UID)}); err != nil {
		return ctrl.Result{}, err
	}
	note(rec, backups.Items, now, first)
	if first {
		// The record comes first: what is deleted after is in it, whatever stops this
		// reconcile half-way.
		if err := r.writeRecord(ctx, t, rec); err != nil {
			return writes.RetryConflict(err)
		}
		// Its write wakes this again; the recheck is the safety net.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}

	if rec.Completed == nil && (r.Exports != nil && (rec.Export == nil || rec.Export.Completed == nil) || rec.Export != nil && rec.Export.Completed == nil) {
		// The export comes before anything is deleted, and nothing is deleted in the reconcile
		// that writes it: only once the record says it is whole. A cache that has not shown the
		// record of an export written whole yet would have it written again: the API server's
		// record is read first.
		fresh := &tenancyv1alpha1.Tenant{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(t), fresh); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		if p := fresh.Status.Purge; p != nil && p.Export != nil && p.Export.Completed != nil {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		step, err := r.export(ctx, t, rec, backups.Items)
		if werr := r.saveRecord(ctx, t, rec); werr != nil {
			return writes.RetryConflict(werr)
		}
		for _, ev := range step.events {
			r.Recorder.Eventf(t, nil, ev.kind, ev.reason, "Export", "%s", ev.note)
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: step.wait}, nil
	}

	var res ctrl.Result
	var err error
	if rec.KeepUntil != nil && now.Before(rec.KeepUntil) {
		res.RequeueAfter = rec.KeepUntil.Sub(now.Time)
	} else {
		res, err = r.drop(ctx, t, rec, backups.Items, now)
	}
	if werr := r.writeRecord(ctx, t, rec); werr != nil {
		return writes.RetryConflict(werr)
	}
	if err != nil || rec.Completed == nil {
		return res, err
	}
	if err := r.release(ctx, t); err != nil {
		return writes.RetryConflict(err)
	}
	return res, nil
}

// exportStep is what one try at the export did: the events to send once the record holding it
// is written, and when to look again.
type exportStep struct {
	events []exportEvent
	wait   time.Duration
}

type exportEvent struct{ kind, reason, note string }

func (s *exportStep) say(kind, reason, format string, args ...any) {
	s.events = append(s.events, exportEvent{kind: kind, reason: reason, note: fmt.Sprintf(format, args...)})
}

// export takes the tenant's final export one step: it waits for a backup still running, chooses
// the newest backup that succeeded and records the choice (written before any file, so that a
// retry exports the same backup), then writes it into <tenant>-<tenant UID>/ of
// backups.exportAtPurge and records it whole. The write runs on a context of its own, bounded by
// backups.timeout, not by the reconcile's timeout: a large dump takes longer.
func (r *PurgeReconciler) export(ctx context.Context, t *tenancyv1alpha1.Tenant, rec *tenancyv1alpha1.PurgeRecord, backups []tenancyv1alpha1.TenantBackup) (exportStep, error) {
	var step exportStep
	if r.Exports == nil {
		step.say(corev1.EventTypeWarning, ReasonExportFailed, "backups.exportAtPurge was unset while the tenant's export was not written whole: nothing is deleted until it is set again and the export is written")
		return step, errors.New("the tenant's export is not written whole, and backups.exportAtPurge is unset: set it again")
	}
	if rec.Export == nil {
		rec.Export = &tenancyv1alpha1.PurgeExport{Location: withoutQuery(r.Config.Backups.ExportAtPurge), Folder: t.Name + "-" + string(t.UID) + "/"}
	}
	ex := rec.Export
	var newest, recorded *tenancyv1alpha1.TenantBackup
	for i := range backups {
		b := &backups[i]
		if b.Status.Phase == tenancyv1alpha1.BackupRunning && ex.Backup == "" {
			// Started before the purge, it may be the newest: the choice waits for its end.
			step.wait = 30 * time.Second
			return step, nil
		}
		if b.Status.Phase != tenancyv1alpha1.BackupSucceeded || !b.DeletionTimestamp.IsZero() || b.Status.CompletionTime == nil {
			continue
		}
		if b.Name == ex.Backup {
			recorded = b
		}
		if newest == nil || b.Status.CompletionTime.After(newest.Status.CompletionTime.Time) {
			newest = b
		}
	}
	now := metav1.NewTime(r.Clock.Now())
	switch {
	case recorded != nil:
	case newest == nil && ex.Backup != "":
		ex.Completed = &now
		step.say(corev1.EventTypeWarning, ReasonNothingExported, "TenantBackup %s, chosen for the tenant's export, was deleted before the export was written, and no other backup of the tenant succeeded: nothing was exported to %s", ex.Backup, ex.Location)
		return step, nil
	case newest == nil:
		ex.Completed = &now
		step.say(corev1.EventTypeWarning, ReasonNothingExported, "the tenant had no backup that succeeded: nothing was exported to %s", ex.Location)
		return step, nil
	default:
		if ex.Backup != "" {
			step.say(corev1.EventTypeWarning, ReasonExportFailed, "TenantBackup %s, chosen for the tenant's export, was deleted before the export was written: TenantBackup %s is exported instead", ex.Backup, newest.Name)
		}
		// The choice is recorded before any file is written.
		ex.Backup, ex.BackupCompleted = newest.Name, newest.Status.CompletionTime
		// The record's write wakes this; the recheck is the safety net.
		step.wait = 10 * time.Second
		return step, nil
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.Config.Backups.Timeout.Duration)
	defer cancel()
	m, err := r.Exports.Export(ectx, recorded.Status.Location, ex.Folder, string(t.UID))
	if err != nil {
		step.say(corev1.EventTypeWarning, ReasonExportFailed, "writing TenantBackup %s as an export to %s %s failed; the backups and the key are kept, and the export is tried again", recorded.Name, ex.Location, ex.Folder)
		return step, fmt.Errorf("exporting TenantBackup %s: %w", recorded.Name, err)
	}
	done := metav1.NewTime(r.Clock.Now())
	ex.Databases, ex.Completed = int32(len(m.Databases)), &done
	step.say(corev1.EventTypeNormal, ReasonExported, "wrote TenantBackup %s (%d database(s), as of %s) as an export to %s %s", recorded.Name, len(m.Databases),
		recorded.Status.CompletionTime.UTC().Format(time.RFC3339), ex.Location, ex.Folder)
	step.wait = 10 * time.Second
	return step, nil
}

// saveRecord writes the record after an export, which may have taken long: on a context of its
// own, and again over a newer tenant when the tenant's status changed meanwhile (only this
// controller writes status.purge), so that an export written whole is not written again.
func (r *PurgeReconciler) saveRecord(ctx context.Context, t *tenancyv1alpha1.Tenant, rec *tenancyv1alpha1.PurgeRecord) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// The cache shows the tenant's newer status within moments.
	backoff := wait.Backoff{Steps: 10, Duration: 100 * time.Millisecond, Factor: 1.5}
	return retry.RetryOnConflict(backoff, func() error {
		err := r.writeRecord(wctx, t, rec)
		if apierrors.IsConflict(err) {
			fresh := &tenancyv1alpha1.Tenant{}
			if gerr := r.Client.Get(wctx, client.ObjectKeyFromObject(t), fresh); gerr != nil {
				return gerr
			}
			*t = *fresh
		}
		return err
	})
}

// record is the tenant's deletion record so far, or a new one begun now.
func (r *PurgeReconciler) record(t *tenancyv1alpha1.Tenant, now metav1.Time) *tenancyv1alpha1.PurgeRecord {
	if t.Status.Purge != nil {
		return t.Status.Purge.DeepCopy()
	}
	rec := &tenancyv1alpha1.PurgeRecord{Started: now, Store: withoutQuery(r.Config.Backups.Objects), KeyStore: withoutQuery(r.Config.Backups.Keys)}
	if rec.KeyStore == "" {
		rec.KeyStore = rec.Store + " (keys/)"
	}
	if keep := r.Config.Backups.KeepAfterPurge.Duration; keep > 0 {
		until := metav1.NewTime(now.Add(keep))
		rec.KeepUntil = &until
	}
	return rec
}

// note records the tenant's backups: all of them when the record begins, and any found later
// (one whose Job was started from a view of the tenant from before its purge); and it marks
// deleted those recorded that are gone.
func note(rec *tenancyv1alpha1.PurgeRecord, backups []tenancyv1alpha1.TenantBackup, now metav1.Time, first bool) {
	if first {
		rec.BackupCount = int32(len(backups))
		for _, b := range backups {
			rec.Backups = append(rec.Backups, tenancyv1alpha1.PurgedBackup{Name: b.Name, Location: b.Status.Location, Created: b.CreationTimestamp})
		}
		// The newest are listed when there are too many.
		slices.SortStableFunc(rec.Backups, func(a, b tenancyv1alpha1.PurgedBackup) int { return b.Created.Compare(a.Created.Time) })
		if len(rec.Backups) > maxRecordedBackups {
			rec.Backups = rec.Backups[:maxRecordedBackups]
		}
	} else if int(rec.BackupCount) == len(rec.Backups) {
		// (With more than the list holds, one missing from it may be one left out of it.)
		for _, b := range backups {
			if len(rec.Backups) < maxRecordedBackups && !slices.ContainsFunc(rec.Backups, func(x tenancyv1alpha1.PurgedBackup) bool { return x.Name == b.Name }) {
				rec.Backups = append(rec.Backups, tenancyv1alpha1.PurgedBackup{Name: b.Name, Location: b.Status.Location, Created: b.CreationTimestamp})
				rec.BackupCount++
			}
		}
	}
	for i := range rec.Backups {
		b := &rec.Backups[i]
		if b.Deleted == nil && !slices.ContainsFunc(backups, func(x tenancyv1alpha1.TenantBackup) bool { return x.Name == b.Name }) {
			b.Deleted = &now
		}
	}
}

// drop deletes the tenant's backups (their own finalizer deletes their objects from the store)
// and, once none is left, destroys the tenant's data key.
func (r *PurgeReconciler) drop(ctx context.Context, t *tenancyv1alpha1.Tenant, rec *tenancyv1alpha1.PurgeRecord, backups []tenancyv1alpha1.TenantBackup, now metav1.Time) (ctrl.Result, error) {
	if len(backups) > 0 {
		for i := range backups {
			b := &backups[i]
			if !b.DeletionTimestamp.IsZero() {
				continue
			}
			if err := r.Client.Delete(ctx, b, client.Preconditions{UID: &b.UID}); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("deleting TenantBackup %s: %w", b.Name, err)
			}
		}
		// Each backup's deletion wakes this again; the recheck is the safety net.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if rec.KeyDestroyed == nil {
		if err := r.Store.DestroyTenantKey(ctx, string(t.UID)); err != nil {
			return ctrl.Result{}, err
		}
		rec.KeyDestroyed = &now
	}
	if rec.Completed == nil {
		rec.Completed = &now
		kept := ""
		if rec.KeepUntil != nil {
			kept = fmt.Sprintf(", kept until %s", rec.KeepUntil.UTC().Format(time.RFC3339))
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonBackupsPurged, "Purge",
			"deleted the tenant's %d backup(s)%s and destroyed its data key: no copy of them can be read", rec.BackupCount, kept)
	}
	return ctrl.Result{}, nil
}

func (r *PurgeReconciler) writeRecord(ctx context.Context, t *tenancyv1alpha1.Tenant, rec *tenancyv1alpha1.PurgeRecord) error {
	next := *t.Status.DeepCopy()
	first := next.Purge == nil
	next.Purge = rec
	// Optimistic: a reconcile that read the tenant before the record was first written would
	// begin it again, without the backups already deleted.
	if err := writes.PatchStatus(ctx, r.Client, t, &t.Status, next, client.MergeFromWithOptimisticLock{}); err != nil {
		return err
	}
	if first && rec.KeepUntil != nil && rec.BackupCount > 0 {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonBackupsKept, "Purge",
			"keeping the tenant's %d backup(s) and its data key until %s (backups.keepAfterPurge)", rec.BackupCount, rec.KeepUntil.UTC().Format(time.RFC3339))
	}
	return nil
}

// release removes the finalizer.
func (r *PurgeReconciler) release(ctx context.Context, t *tenancyv1alpha1.Tenant) error {
	if !controllerutil.ContainsFinalizer(t, tenancyv1alpha1.BackupsFinalizer) {
		return nil
	}
	orig := t.DeepCopy()
	controllerutil.RemoveFinalizer(t, tenancyv1alpha1.BackupsFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// withoutQuery is a store URL without its query, which may hold an endpoint's credentials, but
// for its prefix, which says where in the bucket the objects are.
func withoutQuery(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	prefix := u.Query().Get("prefix")
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	if prefix != "" {
		u.RawQuery = url.Values{"prefix": {prefix}}.Encode()
	}
	return strings.TrimSuffix(u.String(), "?")
}
