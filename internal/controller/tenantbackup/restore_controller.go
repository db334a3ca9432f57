package tenantbackup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/secret"
)

// SafetyBackupLabel on a TenantBackup names the TenantRestore it was taken for.
const SafetyBackupLabel = "tenancy.landlord.dev/restore"

// SafetyBackupName is the TenantBackup a restore into the backup's own tenant takes first.
func SafetyBackupName(restore string) string { return restore + "-safety" }

// RestoreReconciler runs TenantRestores.
type RestoreReconciler struct {
	Client   client.Client
	Config   *config.Config
	Recorder events.EventRecorder
	Secrets  secret.TenantSecrets
	// Store is nil when no backup store is configured.
	Store Store
}

// SetupWithManager registers the controller: a restore's Job wakes it, and so does its backup's
// (or its safety backup's) progress.
func (r *RestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantrestore").
		For(&tenancyv1alpha1.TenantRestore{}, builder.WithPredicates(changed())).
		Owns(&batchv1.Job{}).
		Watches(&tenancyv1alpha1.TenantBackup{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor)).
		Complete(shutdown.Quiet(r))
}

func (r *RestoreReconciler) waitingFor(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &tenancyv1alpha1.TenantRestoreList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenRestoreBackup: obj.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

func (r *RestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &tenancyv1alpha1.TenantRestore{}
	if err := r.Client.Get(ctx, req.NamespacedName, rs); err != nil || !rs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	next := *rs.Status.DeepCopy()
	next.ObservedGeneration = rs.Generation
	var err error
	switch rs.Status.Phase {
	case tenancyv1alpha1.BackupSucceeded, tenancyv1alpha1.BackupFailed:
		return ctrl.Result{}, deletePlan(ctx, r.Client, r.Config.Backups.Namespace, rs.Status.Job, rs)
	case tenancyv1alpha1.BackupRunning:
		err = r.watch(ctx, rs, &next)
	default:
		err = r.start(ctx, rs, &next)
	}
	var ref *refusal
	conds := conditions.For(&next.Conditions, rs.Generation)
	switch {
	case errors.As(err, &ref):
		if next.Phase == "" {
			next.Phase = tenancyv1alpha1.BackupPending
		}
		if ref.reason == tenancyv1alpha1.ReasonBackupNotReady {
			conds.Reconciling(ref.reason, ref.message)
		} else {
			conds.Stalled(ref.reason, ref.message)
		}
		err = nil
	case err != nil:
		conds.Reconciling(tenancyv1alpha1.ReasonStoreUnavailable, err.Error())
	}
	if werr := writes.PatchStatus(ctx, r.Client, rs, &rs.Status, next); werr != nil {
		return ctrl.Result{}, werr
	}
	return ctrl.Result{}, err
}

// start checks the backup and the tenant written into, takes the safety backup of a tenant whose
// own data is replaced, and then makes the Job.
func (r *RestoreReconciler) start(ctx context.Context, rs *tenancyv1alpha1.TenantRestore, next *tenancyv1alpha1.TenantRestoreStatus) error {
	if r.Store == nil {
		return refuse(tenancyv1alpha1.ReasonBackupsNotConfigured, "the operator has no backup store: set backups.objects and backups.key in its configuration")
	}
	b := &tenancyv1alpha1.TenantBackup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: rs.Spec.Backup}, b); err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(tenancyv1alpha1.ReasonBackupNotReady, "TenantBackup %s does not exist", rs.Spec.Backup)
		}
		return err
	}
	switch b.Status.Phase {
	case tenancyv1alpha1.BackupSucceeded:
	case tenancyv1alpha1.BackupFailed:
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup %s failed: there is nothing to restore", b.Name)
	default:
		return refuse(tenancyv1alpha1.ReasonBackupNotReady, "TenantBackup %s has not succeeded yet", b.Name)
	}
	name := rs.Spec.Tenant
	if name == "" {
		name = b.Spec.Tenant
	}
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return refuse(tenancyv1alpha1.ReasonTenantNotFound, "tenant %s does not exist", name)
		}
		return err
	}
	if next.TenantUID != "" && next.TenantUID != string(t.UID) {
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s was deleted and created again since this restore started", name)
	}
	own := string(t.UID) == b.Status.TenantUID
	if rs.Spec.Tenant == "" && !own {
		// The same name, another customer: their data is not replaced by the one before's unless
		// someone names them.
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "tenant %s is not the tenant backed up (it was deleted and created again): name it in spec.tenant to restore into it as a copy", name)
	}
	names, err := restored(b, rs.Spec.Databases)
	if err != nil {
		return err
	}
	dbs, err := targets(ctx, r.Client, r.Secrets, r.Config, t, names)
	if err != nil {
		var ref *refusal
		if errors.As(err, &ref) {
			ref.reason = tenancyv1alpha1.ReasonBackupMismatch
		}
		return err
	}
	for _, d := range dbs {
		i := slices.IndexFunc(b.Status.Databases, func(s tenancyv1alpha1.BackupDatabaseStatus) bool { return s.Name == d.Name })
		if got := b.Status.Databases[i].Engine; string(got) != string(d.Target.Engine) {
			return refuse(tenancyv1alpha1.ReasonBackupMismatch, "database %s is %s in the backup and %s in tenant %s", d.Name, got, d.Target.Engine, t.Name)
		}
	}
	next.Tenant = t.Name
	next.TenantUID = string(t.UID)
	if own {
		// The data about to be replaced is kept first.
		done, err := r.safetyBackup(ctx, rs, t, names, next)
		if err != nil || !done {
			return err
		}
	}
	jobName := JobName(backup.OpRestore, rs.UID)
	plan := backup.Plan{
		Operation: backup.OpRestore, Objects: r.Config.Backups.Objects, Key: r.Config.Backups.Key,
		Location: b.Status.Location, Tenant: t.Name, TenantUID: string(t.UID), Backup: b.Name,
		Databases: dbs, Clone: !own,
	}
	owner := *metav1.NewControllerRef(rs, tenancyv1alpha1.GroupVersion.WithKind("TenantRestore"))
	if err := createJob(ctx, r.Client, r.Config.Backups, jobName, plan, owner); err != nil {
		return err
	}
	now := metav1.Now()
	next.Phase = tenancyv1alpha1.BackupRunning
	next.Job = jobName
	next.StartTime = &now
	what := "replaces the data of"
	if !own {
		what = "copies the backup of tenant " + b.Spec.Tenant + " into"
	}
	conditions.For(&next.Conditions, rs.Generation).Reconciling(tenancyv1alpha1.ReasonJobRunning,
		fmt.Sprintf("Job %s/%s %s tenant %s (%s)", r.Config.Backups.Namespace, jobName, what, t.Name, strings.Join(names, ", ")))
	r.Recorder.Eventf(rs, t, corev1.EventTypeNormal, tenancyv1alpha1.ReasonJobRunning, "Restore", "Job %s/%s started", r.Config.Backups.Namespace, jobName)
	return nil
}

// restored are the databases a restore writes: those named, each of which the backup must
// hold, or all it holds.
func restored(b *tenancyv1alpha1.TenantBackup, asked []string) ([]string, error) {
	var held []string
	for _, d := range b.Status.Databases {
		held = append(held, d.Name)
	}
	if len(asked) == 0 {
		return held, nil
	}
	var missing []string
	for _, n := range asked {
		if !slices.Contains(held, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup %s holds no database %s", b.Name, strings.Join(missing, ", "))
	}
	return asked, nil
}

// safetyBackup takes a backup of the databases about to be replaced and reports whether it
// succeeded; a restore whose safety backup failed writes nothing.
func (r *RestoreReconciler) safetyBackup(ctx context.Context, rs *tenancyv1alpha1.TenantRestore, t *tenancyv1alpha1.Tenant, names []string, next *tenancyv1alpha1.TenantRestoreStatus) (bool, error) {
	name := SafetyBackupName(rs.Name)
	b := &tenancyv1alpha1.TenantBackup{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, b)
	if apierrors.IsNotFound(err) {
		// Not owned by the restore: the data it keeps outlives the restore.
		b = &tenancyv1alpha1.TenantBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{SafetyBackupLabel: rs.Name}},
			Spec:       tenancyv1alpha1.TenantBackupSpec{Tenant: t.Name, Databases: names},
		}
		if err := r.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating the safety backup %s: %w", name, err)
		}
		next.SafetyBackup = name
		return false, refuse(tenancyv1alpha1.ReasonBackupNotReady, "taking safety backup %s of tenant %s before its data is replaced", name, t.Name)
	}
	if err != nil {
		return false, err
	}
	if b.Labels[SafetyBackupLabel] != rs.Name || b.Spec.Tenant != t.Name {
		return false, refuse(tenancyv1alpha1.ReasonBackupRefused, "TenantBackup %s exists and is not this restore's safety backup", name)
	}
	next.SafetyBackup = name
	switch b.Status.Phase {
	case tenancyv1alpha1.BackupSucceeded:
		if b.Status.TenantUID != string(t.UID) {
			return false, refuse(tenancyv1alpha1.ReasonBackupRefused, "safety backup %s is of another tenant %s (deleted and created again)", name, t.Name)
		}
		return true, nil
	case tenancyv1alpha1.BackupFailed:
		return false, refuse(tenancyv1alpha1.ReasonJobFailed, "safety backup %s failed, so nothing was restored", name)
	}
	return false, refuse(tenancyv1alpha1.ReasonBackupNotReady, "taking safety backup %s of tenant %s before its data is replaced", name, t.Name)
}

func (r *RestoreReconciler) watch(ctx context.Context, rs *tenancyv1alpha1.TenantRestore, next *tenancyv1alpha1.TenantRestoreStatus) error {
	done, failed, msg, err := jobEnded(ctx, r.Client, r.Config.Backups.Namespace, rs.Status.Job)
	if err != nil || !done {
		return err
	}
	now := metav1.Now()
	next.CompletionTime = &now
	conds := conditions.For(&next.Conditions, rs.Generation)
	if failed {
		next.Phase = tenancyv1alpha1.BackupFailed
		conds.Stalled(tenancyv1alpha1.ReasonJobFailed, msg)
		restoresTotal.WithLabelValues("failed").Inc()
		r.Recorder.Eventf(rs, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonJobFailed, "Restore", "%s", msg)
	} else {
		next.Phase = tenancyv1alpha1.BackupSucceeded
		conds.Ready(tenancyv1alpha1.ReasonSucceeded, fmt.Sprintf("restored TenantBackup %s into tenant %s", rs.Spec.Backup, rs.Status.Tenant))
		restoresTotal.WithLabelValues("succeeded").Inc()
		r.Recorder.Eventf(rs, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonSucceeded, "Restore", "restored TenantBackup %s into tenant %s", rs.Spec.Backup, rs.Status.Tenant)
	}
	return deletePlan(ctx, r.Client, r.Config.Backups.Namespace, rs.Status.Job, rs)
}
