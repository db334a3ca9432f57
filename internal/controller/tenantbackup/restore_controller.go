package tenantbackup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/secret"
)

// SafetyBackupLabel on a TenantBackup names the TenantRestore it was taken for, and
// SafetyBackupUIDLabel that restore's UID: a restore deleted and made again under the same name
// is another restore, whose data to keep is that of its own time.
const (
	SafetyBackupLabel    = "tenancy.landlord.dev/restore"
	SafetyBackupUIDLabel = "tenancy.landlord.dev/restore-uid"
)

// Logins converges a tenant's database logins as the tenant controller does, as the server's
// administrator: after a restore, whatever the restored data's code did to the login (its
// password, its settings) is undone.
type Logins interface {
	Ensure(ctx context.Context, server string, acct database.Account) error
}

// SafetyBackupName is the TenantBackup a restore into the backup's own tenant takes first.
func SafetyBackupName(restore string) string { return restore + "-safety" }

// RestoreReconciler runs TenantRestores.
type RestoreReconciler struct {
	Client client.Client
	// APIReader confirms what the cache says is gone.
	APIReader client.Reader
	Config    *config.Config
	// Logins converges the logins written into once a restore has run.
	Logins   Logins
	Recorder events.EventRecorder
	Secrets  secret.TenantSecrets
	// Store is nil when no backup store is configured.
	Store Store

	// Moves is whether DatabaseMoves are served: a restore then waits while one of its tenant's
	// databases moves, whose copy would miss what it writes.
	Moves bool

	// writing holds the restores this process started, by the tenant they write into, until
	// they end (writers.go).
	writing writers
}

// SetupWithManager registers the controller: a restore's Job wakes it, and so does its backup's
// (or its safety backup's) progress.
func (r *RestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantrestore").
		For(&tenancyv1alpha1.TenantRestore{}, builder.WithPredicates(changed())).
		Owns(&batchv1.Job{}).
		Watches(&tenancyv1alpha1.TenantBackup{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor)).
		Watches(&tenancyv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, t client.Object) []reconcile.Request {
			return r.open(ctx, indexes.RestoreTenantKey(t.GetName()))
		})).
		Complete(shutdown.Quiet(r))
}

// waitingFor maps a backup's event to the open restores of it, or of which it is the safety
// backup.
func (r *RestoreReconciler) waitingFor(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.open(ctx, obj.GetName())
}

// open are the restores not ended under an index key: a backup's name, or a tenant's key.
func (r *RestoreReconciler) open(ctx context.Context, key string) []reconcile.Request {
	list := &tenancyv1alpha1.TenantRestoreList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenRestoreBackup: key}); err != nil {
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
	err := r.Client.Get(ctx, req.NamespacedName, rs)
	switch {
	case apierrors.IsNotFound(err), err == nil && !rs.DeletionTimestamp.IsZero():
		// A restore deleted while it ran: its Job goes with it.
		r.writing.releaseNamed(req.Name, "")
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	// One deleted and made again under this name before this reconcile saw it go writes no more.
	r.writing.releaseNamed(rs.Name, rs.UID)
	var o restoreObservation
	switch rs.Status.Phase {
	case tenancyv1alpha1.BackupSucceeded, tenancyv1alpha1.BackupFailed:
		return ctrl.Result{}, deletePlan(ctx, r.Client, r.Config.Backups.Namespace, rs.Status.Job, rs)
	case tenancyv1alpha1.BackupRunning:
		o.err = r.watch(ctx, rs, &o)
	default:
		o.err = r.start(ctx, rs, &o)
	}
	// Optimistic: a reconcile working from a copy older than the one that started the Job must
	// not write Pending over Running.
	if werr := writes.PatchStatus(ctx, r.Client, rs, &rs.Status, computeRestoreStatus(rs, o), client.MergeFromWithOptimisticLock{}); werr != nil {
		return writes.RetryConflict(werr)
	}
	// A refusal is the status's to say, not an error to try again.
	var ref *refusal
	switch {
	case errors.As(o.err, &ref) && ref.reason == tenancyv1alpha1.ReasonRestoreWaiting:
		// The other restore's end is no event of this one's.
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	case errors.As(o.err, &ref):
		return ctrl.Result{}, nil
	case o.ended != nil && o.err == nil:
		// Once the end is recorded, the plan's passwords go; a deletion that fails is tried
		// again (the phase's branch above) and changes nothing of the verdict.
		return ctrl.Result{}, deletePlan(ctx, r.Client, r.Config.Backups.Namespace, rs.Status.Job, rs)
	}
	return ctrl.Result{}, o.err
}

// start checks the backup and the tenant written into, takes the safety backup of a tenant whose
// own data is replaced, and then makes the Job, recording in o what it found and made.
func (r *RestoreReconciler) start(ctx context.Context, rs *tenancyv1alpha1.TenantRestore, o *restoreObservation) error {
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
	if rs.Status.TenantUID != "" && rs.Status.TenantUID != string(t.UID) {
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
	if !own && t.Annotations[tenancyv1alpha1.AcceptCopyFromAnnotation] != b.Status.TenantUID {
		// A copy runs the source's code as the tenant's logins: only a tenant that says it takes
		// copies of that one (the same customer's staging) gets one.
		return refuse(tenancyv1alpha1.ReasonBackupRefused, "tenant %s does not accept copies of tenant %s: a copy runs the backed-up tenant's code (functions, checks, views, triggers) as %s's logins, so only a tenant of the same customer should take one; annotate it %s=%s to accept",
			t.Name, b.Spec.Tenant, t.Name, tenancyv1alpha1.AcceptCopyFromAnnotation, b.Status.TenantUID)
	}
	o.tenant = &restoreTenant{name: t.Name, uid: string(t.UID)}
	if move, err := r.moving(ctx, t, names); err != nil || move != "" {
		if err != nil {
			return err
		}
		return refuse(tenancyv1alpha1.ReasonRestoreWaiting, "DatabaseMove %s is moving a database of tenant %s; this restore starts after it", move, t.Name)
	}
	if other, err := r.restoreInto(ctx, rs, t); err != nil || other != "" {
		if err != nil {
			return err
		}
		return refuse(tenancyv1alpha1.ReasonRestoreWaiting, "TenantRestore %s is writing into tenant %s; this one starts after it", other, t.Name)
	}
	// The data about to be replaced is kept first, the tenant's own or a copy's.
	if done, err := r.safetyBackup(ctx, rs, t, names, o); err != nil || !done {
		return err
	}
	if other, ok := r.writing.take(string(t.UID), rs); !ok {
		// Started by this process a moment ago, and not in the cache yet.
		return refuse(tenancyv1alpha1.ReasonRestoreWaiting, "TenantRestore %s is writing into tenant %s; this one starts after it", other, t.Name)
	}
	jobName := JobName(backup.OpRestore, rs.UID)
	plan := backup.Plan{
		Operation: backup.OpRestore, Objects: r.Config.Backups.Objects,
		Location: b.Status.Location, Tenant: t.Name, TenantUID: string(t.UID), Backup: b.Name,
		Databases: dbs, Clone: !own,
	}
	if err := r.openWith(ctx, b, &plan); err != nil {
		r.writing.release(rs.UID)
		return err
	}
	// A restore is someone waiting on their data: it takes no turn, but counts against its
	// servers' limits, so that backups and migrations wait for it.
	servers, _, err := serversOf(ctx, r.Client, t, names)
	if err != nil {
		r.writing.release(rs.UID)
		return err
	}
	owner := *metav1.NewControllerRef(rs, tenancyv1alpha1.GroupVersion.WithKind("TenantRestore"))
	if err := createJob(ctx, r.Client, r.Config.Backups, jobName, plan, owner, servers); err != nil {
		r.writing.release(rs.UID)
		return err
	}
	o.now = metav1.Now()
	o.started = &restoreJob{namespace: r.Config.Backups.Namespace, name: jobName, tenant: t.Name, databases: names}
	if !own {
		o.started.copyOf = b.Spec.Tenant
	}
	r.Recorder.Eventf(rs, t, corev1.EventTypeNormal, tenancyv1alpha1.ReasonJobRunning, "Restore", "Job %s/%s started", r.Config.Backups.Namespace, jobName)
	return nil
}

// moving names a move under way of one of the databases a restore writes, or "": a restore
// into a database being copied would be lost at the switch, and one into its copy replaced by
// it.
func (r *RestoreReconciler) moving(ctx context.Context, t *tenancyv1alpha1.Tenant, names []string) (string, error) {
	if !r.Moves {
		return "", nil
	}
	list := &tenancyv1alpha1.DatabaseMoveList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenMoveTenant: t.Name}); err != nil {
		return "", err
	}
	for _, m := range list.Items {
		// From its fence to its switch (or the end of its rollback); a move waiting to be
		// confirmed holds the old copy only, which a restore does not write.
		under := m.Status.Phase == tenancyv1alpha1.MoveCopying || m.Status.Phase == tenancyv1alpha1.MoveSwitching || m.Status.Phase == tenancyv1alpha1.MoveRollingBack
		if under && slices.Contains(names, m.Spec.Database) {
			return m.Name, nil
		}
	}
	return "", nil
}

// openWith gives the plan what opens the backup's dumps: the data key of the tenant backed up
// (a copy's Job gets the source's, which opens that tenant's dumps and no other's), or, for a
// backup taken before tenants had keys of their own, the store's key. Which one is the
// backup's own status's to say (the operator wrote it when it made the backup's Job), never the
// manifest's, which any Job could write.
func (r *RestoreReconciler) openWith(ctx context.Context, b *tenancyv1alpha1.TenantBackup, plan *backup.Plan) error {
	m, err := r.Store.Manifest(ctx, b.Status.Location)
	switch {
	case errors.Is(err, backup.ErrNoManifest):
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup %s has no manifest in the store: its objects were deleted", b.Name)
	case err != nil:
		return fmt.Errorf("reading the backup's manifest: %w", err)
	case m.TenantUID != b.Status.TenantUID:
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "the manifest of TenantBackup %s in the store is not the tenant's it backed up", b.Name)
	case b.Status.Format < backup.ManifestFormat:
		plan.Key = r.Config.Backups.Key
		return nil
	}
	key, err := r.Store.TenantKey(ctx, b.Status.TenantUID, false)
	switch {
	case errors.Is(err, backup.ErrKeyDestroyed):
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup %s cannot be read: the data key of the tenant it backs up was destroyed when that tenant was purged", b.Name)
	case errors.Is(err, backup.ErrNoKey):
		return refuse(tenancyv1alpha1.ReasonBackupMismatch, "TenantBackup %s cannot be read: the keys' store holds no data key of the tenant it backs up (backups.keys or the objects' prefix changed since, or the key was deleted by hand)", b.Name)
	case err != nil:
		return err
	}
	plan.TenantKey = key
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
func (r *RestoreReconciler) safetyBackup(ctx context.Context, rs *tenancyv1alpha1.TenantRestore, t *tenancyv1alpha1.Tenant, names []string, o *restoreObservation) (bool, error) {
	name := SafetyBackupName(rs.Name)
	// Recorded first, so that any change to it (an earlier restore's deleted) wakes this one.
	o.safetyBackup = name
	b := &tenancyv1alpha1.TenantBackup{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, b)
	if apierrors.IsNotFound(err) {
		// Not owned by the restore: the data it keeps outlives the restore.
		b = &tenancyv1alpha1.TenantBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{SafetyBackupLabel: rs.Name, SafetyBackupUIDLabel: string(rs.UID)}},
			Spec:       tenancyv1alpha1.TenantBackupSpec{Tenant: t.Name, Databases: names},
		}
		if by := rs.Labels[tenancyv1alpha1.BackupRequestLabel]; by != "" {
			// A tenant's own restore's: kept among the tenant's requested backups, whose
			// retention deletes it once newer ones succeeded (never while a restore reads it).
			b.Labels[tenancyv1alpha1.BackupRequestLabel] = by
		}
		if err := r.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("creating the safety backup %s: %w", name, err)
		}
		return false, refuse(tenancyv1alpha1.ReasonBackupNotReady, "taking safety backup %s of tenant %s before its data is replaced", name, t.Name)
	}
	if err != nil {
		return false, err
	}
	if b.Labels[SafetyBackupUIDLabel] != string(rs.UID) || b.Spec.Tenant != t.Name || !slices.Equal(b.Spec.Databases, names) || !b.DeletionTimestamp.IsZero() {
		// An earlier restore's of the same name keeps that restore's time, not now's.
		return false, refuse(tenancyv1alpha1.ReasonBackupRefused, "TenantBackup %s exists and is not this restore's safety backup (an earlier restore of this name took it, or it is being deleted): delete it, or name the restore otherwise", name)
	}
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

// watch follows the Job: once it ended, the logins written into are set back, and how it ended
// is recorded in o.
func (r *RestoreReconciler) watch(ctx context.Context, rs *tenancyv1alpha1.TenantRestore, o *restoreObservation) error {
	done, failed, msg, err := jobEnded(ctx, r.Client, r.APIReader, r.Config.Backups.Namespace, rs.Status.Job)
	if err != nil || !done {
		return err
	}
	// The restored data's code ran as the tenant's logins, whether the Job then failed or not:
	// their passwords and limits are Landlord's again before the restore ends.
	skipped, err := r.converge(ctx, rs)
	if err != nil {
		return err
	}
	// Ended: another restore may write into the tenant (once the cache shows this one's end too).
	r.writing.release(rs.UID)
	o.now = metav1.Now()
	if skipped != "" {
		msg = strings.TrimPrefix(msg+"; ", "; ") + "the logins were not set back: " + skipped
		r.Recorder.Eventf(rs, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonBackupRefused, "Restore", "the logins of tenant %s were not set back: %s", rs.Status.Tenant, skipped)
	}
	o.ended = &restoreEnd{failed: failed, message: msg}
	if failed {
		restoresTotal.WithLabelValues("failed").Inc()
		r.Recorder.Eventf(rs, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonJobFailed, "Restore", "%s", msg)
	} else {
		done := restoredMessage(rs, msg)
		restoresTotal.WithLabelValues("succeeded").Inc()
		r.Recorder.Eventf(rs, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonSucceeded, "Restore", "%s", done)
	}
	return nil
}

// restoreInto names another restore that writes into the tenant now, if one does: two at once
// would interleave their drops and loads.
func (r *RestoreReconciler) restoreInto(ctx context.Context, rs *tenancyv1alpha1.TenantRestore, t *tenancyv1alpha1.Tenant) (string, error) {
	list := &tenancyv1alpha1.TenantRestoreList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenRestoreBackup: indexes.RestoreTenantUIDKey(string(t.UID))}); err != nil {
		return "", err
	}
	for _, other := range list.Items {
		if other.UID != rs.UID && other.Status.Phase == tenancyv1alpha1.BackupRunning {
			return other.Name, nil
		}
	}
	return "", nil
}

// converge sets the logins of the databases written back to what Landlord keeps of them
// (password, limits), as the server's administrator, once the restore's Job has run. A tenant
// gone, or whose data may no longer be touched, is not converged, and the reason is returned
// for the restore's message: the restore ends all the same. A server that does not answer is
// an error, retried.
func (r *RestoreReconciler) converge(ctx context.Context, rs *tenancyv1alpha1.TenantRestore) (skipped string, err error) {
	if r.Logins == nil {
		return "", nil
	}
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: rs.Status.Tenant}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("tenant %s is gone", rs.Status.Tenant), nil
		}
		return "", err
	}
	if string(t.UID) != rs.Status.TenantUID {
		return fmt.Sprintf("tenant %s was deleted and created again", rs.Status.Tenant), nil
	}
	names := rs.Spec.Databases
	if len(names) == 0 {
		b := &tenancyv1alpha1.TenantBackup{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: rs.Spec.Backup}, b); client.IgnoreNotFound(err) != nil {
			return "", err
		}
		for _, d := range b.Status.Databases {
			if slices.ContainsFunc(t.Status.Databases, func(s tenancyv1alpha1.DatabaseStatus) bool { return s.Name == d.Name }) {
				names = append(names, d.Name)
			}
		}
	}
	// The store is read again after the logins were set: a rotation the tenant controller saved
	// and set in between would otherwise be undone, its new password in the tenant's Secret and
	// the old one on the server. Each round sets only the logins whose password changed.
	set := map[string]string{}
	for round := 1; ; round++ {
		dbs, err := targets(ctx, r.Client, r.Secrets, r.Config, t, names)
		var ref *refusal
		if errors.As(err, &ref) {
			return ref.message, nil
		}
		if err != nil {
			return "", fmt.Errorf("converging tenant %s's logins: %w", t.Name, err)
		}
		changed := false
		for _, d := range dbs {
			if pw, ok := set[d.Name]; ok && pw == d.Target.Password {
				continue
			}
			if round > convergeRounds {
				return "", fmt.Errorf("converging the login of tenant %s's database %s: its stored password changed %d times while it was set; trying again", t.Name, d.Name, convergeRounds)
			}
			changed = true
			i := slices.IndexFunc(t.Status.Databases, func(s tenancyv1alpha1.DatabaseStatus) bool { return s.Name == d.Name })
			acct := database.Account{Database: d.Target.Database, Username: d.Target.Username, Password: d.Target.Password, Owner: string(t.UID)}
			sqlCtx, cancel := context.WithTimeout(ctx, r.Config.Databases.Timeout.Duration)
			err := r.Logins.Ensure(sqlCtx, t.Status.Databases[i].Server, acct)
			cancel()
			if err != nil {
				return "", fmt.Errorf("converging the login of tenant %s's database %s: %w", t.Name, d.Name, err)
			}
			set[d.Name] = d.Target.Password
		}
		if !changed {
			return "", nil
		}
	}
}

// convergeRounds bounds how often converge sets a login whose stored password keeps changing.
const convergeRounds = 3
