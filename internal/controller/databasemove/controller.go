// Package databasemove runs DatabaseMoves: one of a tenant's databases moved to another server
// of its engine, live. A move is a table of phases, each recorded in the move's status before
// the side effects of the next begin, so that an operator killed at any step resumes where it
// was, or rolls back:
//
//   - Pending: checks (the tenant, its database in place, the target server Ready and of the
//     engine, no other move of the database) and records where the database is and where it
//     goes. Nothing is changed.
//   - Copying: the copy's plan (a Secret, the one record of the fence's and the new login's
//     passwords until the switch), the database and login made on the target server, the
//     writers fenced (the old login given the fence's password, its sessions ended), and a Job
//     (`landlord job`, operation copy) that dumps, loads and compares every table.
//   - Switching: the copy proven, the secret store's record names the new server; the tenant
//     controller, which leaves the database alone while it is fenced, reads it and publishes
//     the new server in the tenant's Secret and status.
//   - Switched: the cut-over's downtime is measured; the old database is kept, fenced, as of the
//     cut-over, until spec.confirmed.
//   - Dropping, then Succeeded: the old database and login dropped.
//   - RollingBack, then Failed: before the switch only (a failed copy, the move deleted, the
//     tenant leaving Active or Frozen): the copy on the target server dropped, the old login
//     given its password back.
//
// No step drops data of record: the target's copy is dropped only before the switch, while the
// old database is the tenant's; the old one only once confirmed (or the tenant Purged).
package databasemove

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/secret"
)

// Finalizer keeps a move until what it holds is settled: a move deleted before its switch is
// rolled back first.
const Finalizer = "tenancy.landlord.dev/database-move"

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databasemoves,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databasemoves/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databasemoves/finalizers,verbs=update

// Reconciler runs DatabaseMoves.
type Reconciler struct {
	Client client.Client
	// APIReader confirms, before a rollback gives the old login its password back, that the
	// tenant is still there and not Purged: the cache may lag a purge that dropped the database.
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Secrets holds the tenants' credentials records: the switch is a record rewritten.
	Secrets secret.TenantSecrets
	// Databases reaches the servers as their administrator.
	Databases *database.Connections
	Clock     clock.PassiveClock
	// Restores is whether TenantRestores are served (and indexed): a move then waits for a
	// restore writing into its tenant, whose end sets the logins back.
	Restores bool
}

// SetupWithManager registers the controller: a move's Job wakes it, and so does its tenant
// (whose status says when the switch reached its Secret).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("databasemove").
		For(&tenancyv1alpha1.DatabaseMove{}).
		Owns(&batchv1.Job{}).
		Watches(&tenancyv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(r.movesOfTenant)).
		Complete(shutdown.Quiet(r))
}

func (r *Reconciler) movesOfTenant(ctx context.Context, t client.Object) []reconcile.Request {
	list := &tenancyv1alpha1.DatabaseMoveList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenMoveTenant: t.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, m := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
	}
	return out
}

// step is one phase's work: it changes the status draft (the next phase, and what it found)
// and says when to look again.
type step func(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (time.Duration, error)

func (r *Reconciler) steps() map[tenancyv1alpha1.DatabaseMovePhase]step {
	return map[tenancyv1alpha1.DatabaseMovePhase]step{
		"":                              r.prepare,
		tenancyv1alpha1.MovePending:     r.prepare,
		tenancyv1alpha1.MoveCopying:     r.copying,
		tenancyv1alpha1.MoveSwitching:   r.switching,
		tenancyv1alpha1.MoveSwitched:    r.switched,
		tenancyv1alpha1.MoveDropping:    r.dropping,
		tenancyv1alpha1.MoveRollingBack: r.rollingBack,
		tenancyv1alpha1.MoveSucceeded:   nil,
		tenancyv1alpha1.MoveFailed:      nil,
	}
}

// Reconcile runs the step of the move's phase, then writes the status. A move deleted runs
// its rollback (before the switch) first.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := &tenancyv1alpha1.DatabaseMove{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, m)
	}
	if !m.Terminal() && !controllerutil.ContainsFinalizer(m, Finalizer) {
		controllerutil.AddFinalizer(m, Finalizer)
		if err := r.Client.Update(ctx, m); err != nil {
			return writes.RetryConflict(err)
		}
	}
	run := r.steps()[m.Status.Phase]
	s := m.Status.DeepCopy()
	var (
		after time.Duration
		err   error
	)
	if run != nil {
		after, err = run(ctx, m, s)
	}
	var ref *refusal
	if errors.As(err, &ref) {
		r.fail(m, s, ref.reason, ref.message)
		err = nil
	}
	r.conditions(m, s, err)
	if werr := r.writeStatus(ctx, m, s); werr != nil {
		if err == nil {
			// A move changed since the cache saw it (its confirmation, a deletion) is looked
			// at again: what this reconcile did is made again, the same, by the next.
			return writes.RetryConflict(werr)
		}
		return ctrl.Result{}, errors.Join(err, werr)
	}
	if m.Terminal() && controllerutil.ContainsFinalizer(m, Finalizer) {
		controllerutil.RemoveFinalizer(m, Finalizer)
		if err := r.Client.Update(ctx, m); err != nil {
			return writes.RetryConflict(err)
		}
	}
	return ctrl.Result{RequeueAfter: after}, err
}

// writeStatus writes the draft when it differs from what the move holds, and takes it.
func (r *Reconciler) writeStatus(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) error {
	s.ObservedGeneration = m.Generation
	if equality.Semantic.DeepEqual(&m.Status, s) {
		return nil
	}
	m.Status = *s
	return r.Client.Status().Update(ctx, m)
}

// refusal ends a move before anything changed, or rolls it back: retrying does not help.
type refusal struct{ reason, message string }

func (e *refusal) Error() string { return e.message }

func refuse(reason, format string, args ...any) error {
	return &refusal{reason: reason, message: fmt.Sprintf(format, args...)}
}

// fail ends the move: at once when nothing was changed yet (Pending), through a rollback
// otherwise.
func (r *Reconciler) fail(m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus, reason, message string) {
	now := metav1.NewTime(r.Clock.Now())
	switch s.Phase {
	case "", tenancyv1alpha1.MovePending:
		s.Phase, s.CompletionTime = tenancyv1alpha1.MoveFailed, &now
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, reason, "Move", "%s", message)
	case tenancyv1alpha1.MoveCopying:
		s.Phase = tenancyv1alpha1.MoveRollingBack
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, reason, "RollBack", "%s; rolling back", message)
	}
	conditions.For(&s.Conditions, m.Generation).Stalled(reason, message)
}

// conditions sets Ready, Reconciling and Stalled from the phase the draft reached (a refusal
// has set its own).
func (r *Reconciler) conditions(m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus, err error) {
	c := conditions.For(&s.Conditions, m.Generation)
	to := m.Spec.Server
	switch s.Phase {
	case tenancyv1alpha1.MoveSucceeded:
		c.Ready(tenancyv1alpha1.ReasonSucceeded, fmt.Sprintf("database %s of tenant %s is on DatabaseServer %s; the cut-over took %s", m.Spec.Database, m.Spec.Tenant, to, downtime(s)))
	case tenancyv1alpha1.MoveFailed:
		// The refusal's or the rollback's reason stays.
		if cond := readyReason(s); cond == "" || cond == tenancyv1alpha1.ReasonMoving {
			c.Stalled(tenancyv1alpha1.ReasonMoveFailed, "the move was rolled back: the database is where it was")
		}
	case tenancyv1alpha1.MoveSwitched:
		c.Set(tenancyv1alpha1.ReadyCondition, metav1.ConditionFalse, tenancyv1alpha1.ReasonMoveUnconfirmed,
			fmt.Sprintf("tenant %s runs on DatabaseServer %s (the cut-over took %s); the old database %q is kept on %s until spec.confirmed is true (landlordctl db confirm %s)",
				m.Spec.Tenant, to, downtime(s), s.From.Database, s.From.Server, m.Name))
		c.Remove(tenancyv1alpha1.ReconcilingCondition, tenancyv1alpha1.StalledCondition)
	case tenancyv1alpha1.MoveRollingBack:
		if readyReason(s) == "" {
			c.Reconciling(tenancyv1alpha1.ReasonMoveFailed, "rolling back")
		}
	case tenancyv1alpha1.MovePending, "":
		if err != nil {
			c.Reconciling(tenancyv1alpha1.ReasonMoveWaiting, err.Error())
		}
	default:
		msg := fmt.Sprintf("%s database %s of tenant %s to DatabaseServer %s", s.Phase, m.Spec.Database, m.Spec.Tenant, to)
		if err != nil {
			msg += ": " + err.Error()
		}
		c.Reconciling(tenancyv1alpha1.ReasonMoving, msg)
	}
}

func readyReason(s *tenancyv1alpha1.DatabaseMoveStatus) string {
	for _, c := range s.Conditions {
		if c.Type == tenancyv1alpha1.ReadyCondition {
			return c.Reason
		}
	}
	return ""
}

func downtime(s *tenancyv1alpha1.DatabaseMoveStatus) string {
	if s.Downtime == nil {
		return "an unmeasured time"
	}
	return s.Downtime.Duration.Round(time.Millisecond).String()
}

// finalize settles a deleted move: one that has not switched is rolled back (its copy dropped,
// the old login's password given back); one switched and not confirmed keeps the old database
// (fenced, as of the cut-over) and says so, for it is never dropped unconfirmed.
func (r *Reconciler) finalize(ctx context.Context, m *tenancyv1alpha1.DatabaseMove) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(m, Finalizer) {
		return ctrl.Result{}, nil
	}
	switch m.Status.Phase {
	case tenancyv1alpha1.MoveCopying, tenancyv1alpha1.MoveRollingBack:
		s := m.Status.DeepCopy()
		if _, err := r.rollingBack(ctx, m, s); err != nil {
			return ctrl.Result{}, err
		}
		if s.Phase == tenancyv1alpha1.MoveSwitching {
			// Switched in the store already: the switch finishes before the move goes.
			if err := r.writeStatus(ctx, m, s); err != nil {
				return writes.RetryConflict(err)
			}
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
	case tenancyv1alpha1.MoveSwitching, tenancyv1alpha1.MoveSwitched, tenancyv1alpha1.MoveDropping:
		s := m.Status.DeepCopy()
		if s.Phase == tenancyv1alpha1.MoveSwitching {
			// The store names the new server already: the switch finishes first.
			after, err := r.switching(ctx, m, s)
			if err != nil {
				return ctrl.Result{}, err
			}
			if s.Phase == tenancyv1alpha1.MoveSwitching {
				// A tenant gone will never show the switch: what both servers hold is kept.
				if t, err := r.tenantOf(ctx, m, s); err != nil || t != nil {
					return ctrl.Result{RequeueAfter: after}, err
				}
			}
		}
		if s.Phase == tenancyv1alpha1.MoveSwitched {
			if _, err := r.switched(ctx, m, s); err != nil {
				return ctrl.Result{}, err
			}
		}
		// Confirmed, or its tenant Purged: the old copy goes with the move. Otherwise it is
		// kept, unconfirmed, and said so.
		if s.Phase == tenancyv1alpha1.MoveDropping {
			if _, err := r.dropping(ctx, m, s); err != nil {
				return ctrl.Result{}, err
			}
		} else {
			r.keptOnDelete(m)
		}
	}
	controllerutil.RemoveFinalizer(m, Finalizer)
	if err := r.Client.Update(ctx, m); err != nil {
		return writes.RetryConflict(err)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) keptOnDelete(m *tenancyv1alpha1.DatabaseMove) {
	if m.Status.From == nil {
		return
	}
	log.Log.WithName("databasemove").Info("move deleted unconfirmed: the old database is kept", "move", m.Name,
		"server", m.Status.From.Server, "database", m.Status.From.Database)
	r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonMoveUnconfirmed, "Delete",
		"deleted before it was confirmed: the old database %q and login %q are kept on DatabaseServer %s; drop them by hand once the tenant is known to be well on %s",
		m.Status.From.Database, m.Status.From.Username, m.Status.From.Server, m.Spec.Server)
}

// tenantOf reads the move's tenant from the cache: nil when it is gone, or is another tenant of
// the same name than the one the move started on.
func (r *Reconciler) tenantOf(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (*tenancyv1alpha1.Tenant, error) {
	t := &tenancyv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: m.Spec.Tenant}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if s.TenantUID != "" && string(t.UID) != s.TenantUID {
		return nil, nil
	}
	return t, nil
}

// namespaceOf is where the tenant's credentials records are kept.
func (r *Reconciler) namespaceOf(t *tenancyv1alpha1.Tenant) string {
	if t.Status.Namespace != "" {
		return t.Status.Namespace
	}
	return r.Config.NamespaceName(t.Name)
}
