package tenantbackup

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
)

// A request's status tells the tenant how its backup or restore goes, in words of its own: the
// TenantBackup's and TenantRestore's messages name the operator's namespace, its Jobs, its
// Secrets, and whatever a failed dump printed, which are the platform's to read. Each reason the
// tenant may meet has a fixed message here; the request's own refusals, made of what the tenant
// wrote, say what they are.

// saidToTenant are the messages of the reasons a made backup or restore reports.
var saidToTenant = map[string]string{
	tenancyv1alpha1.ReasonBackupRefused:    "the platform refused it: the tenant is being deleted or moved, or does not have the databases the request names",
	tenancyv1alpha1.ReasonBackupMismatch:   "the backup cannot be restored into the tenant: it does not hold the databases the request names, or they moved to another engine or server version",
	tenancyv1alpha1.ReasonBackupNotReady:   "it waits for its backup, or for the safety backup of what it replaces",
	tenancyv1alpha1.ReasonRestoreWaiting:   "another restore writes into the tenant; it starts after it",
	tenancyv1alpha1.ReasonWaitingForServer: "it waits for a place on the database server",
	tenancyv1alpha1.ReasonJobRunning:       "it runs",
}

// computeBackupRequestStatus is a backup request's status after a reconcile: the phase of the
// backup it made, Ready once that succeeded, Reconciling while it waits or runs, Stalled when it
// failed or the request is refused (final: a refused request is never made later).
func computeBackupRequestStatus(br *tenancyv1alpha1.BackupRequest, o requestObservation) tenancyv1alpha1.BackupRequestStatus {
	s := *br.Status.DeepCopy()
	s.ObservedGeneration = br.Generation
	conds := conditions.For(&s.Conditions, br.Generation)
	if o.name != "" {
		s.Backup = o.name
	}
	if b, ok := o.made.(*tenancyv1alpha1.TenantBackup); ok {
		s.Phase = phaseOr(b.Status.Phase)
		s.CompletionTime, s.Size = b.Status.CompletionTime, b.Status.Size
		mirror(conds, "backup", b.Name, s.Phase, b.Status.Conditions,
			fmt.Sprintf("TenantBackup %s holds %d database(s), %d bytes", b.Name, len(b.Status.Databases), b.Status.Size))
	}
	requestErr(conds, &s.Phase, s.Backup, o)
	return s
}

// computeRestoreRequestStatus is a restore request's status after a reconcile, as
// computeBackupRequestStatus is a backup request's, with the restore's safety backup.
func computeRestoreRequestStatus(rr *tenancyv1alpha1.RestoreRequest, o requestObservation) tenancyv1alpha1.RestoreRequestStatus {
	s := *rr.Status.DeepCopy()
	s.ObservedGeneration = rr.Generation
	conds := conditions.For(&s.Conditions, rr.Generation)
	if o.name != "" {
		s.Restore = o.name
	}
	if rs, ok := o.made.(*tenancyv1alpha1.TenantRestore); ok {
		s.Phase = phaseOr(rs.Status.Phase)
		s.CompletionTime, s.SafetyBackup = rs.Status.CompletionTime, rs.Status.SafetyBackup
		done := fmt.Sprintf("restored TenantBackup %s", rs.Spec.Backup)
		if rs.Status.SafetyBackup != "" {
			done += fmt.Sprintf("; what it replaced is kept in TenantBackup %s", rs.Status.SafetyBackup)
		}
		mirror(conds, "restore", rs.Name, s.Phase, rs.Status.Conditions, done)
	}
	requestErr(conds, &s.Phase, s.Restore, o)
	return s
}

func phaseOr(p tenancyv1alpha1.BackupPhase) tenancyv1alpha1.BackupPhase {
	if p == "" {
		return tenancyv1alpha1.BackupPending
	}
	return p
}

// mirror sets the request's conditions from those of what it made.
func mirror(conds conditions.Draft, what, name string, phase tenancyv1alpha1.BackupPhase, made []metav1.Condition, done string) {
	reason, message := tenancyv1alpha1.ReasonProgressing, "the "+what+" has not started"
	if ready := meta.FindStatusCondition(made, tenancyv1alpha1.ReadyCondition); ready != nil && ready.Reason != "" {
		reason = ready.Reason
		if said, ok := saidToTenant[reason]; ok {
			message = "the " + what + ": " + said
		}
	}
	switch {
	case phase == tenancyv1alpha1.BackupSucceeded:
		conds.Ready(tenancyv1alpha1.ReasonSucceeded, done)
	case phase == tenancyv1alpha1.BackupFailed:
		conds.Stalled(reason, fmt.Sprintf("the %s failed (%s): the platform's administrators see why in %s", what, reason, name))
	case meta.IsStatusConditionTrue(made, tenancyv1alpha1.StalledCondition):
		if _, ok := saidToTenant[reason]; !ok {
			message = fmt.Sprintf("the %s is held (%s): the platform's administrators see why in %s", what, reason, name)
		}
		conds.Stalled(reason, message)
	default:
		conds.Reconciling(reason, message)
	}
}

// requestErr records what stopped the reconcile: a refusal of the request itself (final, so
// Failed), what it made gone or cancelled, or an error tried again. The error's own words stay in
// the operator's log: they may name the platform's servers and accounts.
func requestErr(conds conditions.Draft, phase *tenancyv1alpha1.BackupPhase, made string, o requestObservation) {
	var ref *refusal
	switch {
	case o.cancelled:
		// The refusal mirrored above is final: what was refused is deleted.
		*phase = tenancyv1alpha1.BackupFailed
	case o.gone && made != "" && *phase == tenancyv1alpha1.BackupSucceeded:
		conds.Ready(tenancyv1alpha1.ReasonBackupDeleted, made+" succeeded, and has since been deleted: the platform keeps a tenant's newest requested backups")
	case o.gone && made != "":
		*phase = tenancyv1alpha1.BackupFailed
		conds.Stalled(tenancyv1alpha1.ReasonBackupDeleted, made+" was deleted before it ended: make another request")
	case errors.As(o.err, &ref) && ref.reason == tenancyv1alpha1.ReasonBackupNotReady:
		*phase = tenancyv1alpha1.BackupPending
		conds.Reconciling(ref.reason, ref.message)
	case errors.As(o.err, &ref):
		*phase = tenancyv1alpha1.BackupFailed
		conds.Stalled(ref.reason, ref.message)
	case o.err != nil:
		conds.Reconciling(tenancyv1alpha1.ReasonProgressing, "Landlord could not answer the request yet, and tries again")
	}
}
