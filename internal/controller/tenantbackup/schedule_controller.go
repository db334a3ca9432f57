package tenantbackup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/controller/writes"
)

// ScheduleReconciler runs TenantBackupSchedules: at each time of its cron schedule it makes a
// TenantBackup of every tenant it selects, and it deletes what its retention no longer keeps.
type ScheduleReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Clock tells the time, and ticks once a minute (cron's unit) to look at every schedule.
	Clock clock.WithTicker
}

// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackupschedules/status,verbs=get;patch
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackups,verbs=delete

// SetupWithManager registers the controller: a schedule is looked at when it changes, a little
// after a backup it made changes (its counts move, its retention may delete an older one: a
// run's changes are taken together, not one status write per backup), and at every minute's
// tick.
func (r *ScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ticks := make(chan event.GenericEvent)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return r.tick(ctx, ticks) })); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantbackupschedule").
		For(&tenancyv1alpha1.TenantBackupSchedule{}, builder.WithPredicates(changed())).
		Watches(&tenancyv1alpha1.TenantBackup{}, madeBy()).
		WatchesRawSource(source.Channel(ticks, &handler.EnqueueRequestForObject{})).
		Complete(shutdown.Quiet(r))
}

// backupsSettle is how long a schedule waits after one of its backups changes before it looks:
// the changes of a run's backups in that time come to one reconcile.
const backupsSettle = 5 * time.Second

// tick sends every schedule to the controller once a minute of Clock; there are few.
func (r *ScheduleReconciler) tick(ctx context.Context, out chan<- event.GenericEvent) error {
	t := r.Clock.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		list := &tenancyv1alpha1.TenantBackupScheduleList{}
		if err := r.Client.List(ctx, list); err != nil {
			log.FromContext(ctx).Error(err, "listing backup schedules")
			continue
		}
		for i := range list.Items {
			select {
			case out <- event.GenericEvent{Object: &list.Items[i]}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// madeBy wakes, a little later, the schedule that made a backup that changed.
func madeBy() handler.EventHandler {
	add := func(obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if s := obj.GetLabels()[tenancyv1alpha1.BackupScheduleLabel]; s != "" {
			q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKey{Name: s}}, backupsSettle)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

func (r *ScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &tenancyv1alpha1.TenantBackupSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil || !s.DeletionTimestamp.IsZero() {
		if apierrors.IsNotFound(err) {
			forgetSchedule(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sched, err := cron.ParseStandard(s.Spec.Schedule)
	if err != nil {
		return ctrl.Result{}, writes.PatchStatus(ctx, r.Client, s, &s.Status, computeScheduleStatus(s, scheduleObservation{invalid: err}))
	}
	if s.Spec.Suspend {
		return ctrl.Result{}, writes.PatchStatus(ctx, r.Client, s, &s.Status, computeScheduleStatus(s, scheduleObservation{}))
	}
	now := r.Clock.Now()
	from := s.CreationTimestamp.Time
	var run time.Time
	if s.Status.LastScheduleTime != nil {
		from = s.Status.LastScheduleTime.Time
		run = s.Status.LastScheduleTime.Time
	}
	var o scheduleObservation
	if slot, due := lastSlot(sched, from, now); due {
		// A new run; what the one before had not made by now is its window's to report.
		run = slot
		o.ran = &slot
	}
	backups := &tenancyv1alpha1.TenantBackupList{}
	// Read, never changed: the cache's own objects, not copies of a fleet's backups.
	if err := r.Client.List(ctx, backups, client.MatchingLabels{tenancyv1alpha1.BackupScheduleLabel: s.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	var wake time.Duration
	if !run.IsZero() {
		p, err := r.run(ctx, s, run, now, backups.Items)
		if err != nil {
			return ctrl.Result{}, err
		}
		o.progress = &p
		if o.ran != nil {
			window, _ := spreadOf(s)
			r.Recorder.Eventf(s, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonScheduled, "Schedule",
				"run for %s: backing up %d tenant(s) over %s", run.UTC().Format(time.RFC3339), p.Selected, window)
		}
		if p.MissedWindow && (s.Status.LastRun == nil || !s.Status.LastRun.MissedWindow || !s.Status.LastRun.ScheduleTime.Equal(&p.ScheduleTime)) {
			r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, ReasonWindowMissed, "Schedule",
				"run for %s: %d backup(s) had not started when its window ended at %s", run.UTC().Format(time.RFC3339), p.Late, p.WindowEnd.UTC().Format(time.RFC3339))
		}
		wake = p.wake
	}
	if err := r.retain(ctx, s, backups.Items); err != nil {
		return ctrl.Result{}, err
	}
	o.upcoming = sched.Next(now)
	status := computeScheduleStatus(s, o)
	observeSchedule(s.Name, status.LastRun)
	if err := writes.PatchStatus(ctx, r.Client, s, &s.Status, status); err != nil {
		return ctrl.Result{}, err
	}
	// The next tenant's time, or the window's end, if sooner than the minute's tick.
	return ctrl.Result{RequeueAfter: wake}, nil
}

// minWake is the least time between two looks of a schedule at its run: each look lists its
// tenants and backups, and writes its status.
const minWake = 30 * time.Second

// phaseOf is a backup's phase as a run counts it: one refused (Pending, Stalled until a person
// changes something) will not run, and counts as failed.
func phaseOf(b *tenancyv1alpha1.TenantBackup) tenancyv1alpha1.BackupPhase {
	if b.Status.Phase == tenancyv1alpha1.BackupPending || b.Status.Phase == "" {
		for _, c := range b.Status.Conditions {
			if c.Type == tenancyv1alpha1.StalledCondition && c.Status == metav1.ConditionTrue {
				return tenancyv1alpha1.BackupFailed
			}
		}
	}
	return b.Status.Phase
}

// missedGrace is how long after its window's end a run's backups have to start before the run
// missed its window.
const missedGrace = time.Minute

// ReasonWindowMissed is the event of a run whose window ended with backups not started.
const ReasonWindowMissed = "WindowMissed"

// lastSlot is the latest time of the schedule after from and no later than now, and whether
// there is one. Runs missed while no operator ran are not made up one by one: the latest stands
// for them, as a CronJob's missed runs do. (Next is a few microseconds: a schedule of every
// minute missed for two months is 0.1 s of walking.)
func lastSlot(sched cron.Schedule, from, now time.Time) (time.Time, bool) {
	var last time.Time
	for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		last = t
	}
	return last, !last.IsZero()
}

// ScheduledBackupName is the TenantBackup a schedule makes of a tenant at a time: the same name
// for the same minute, so a run repeated (a status write lost) makes nothing twice.
func ScheduledBackupName(tenant string, at time.Time) string {
	return tenant + "-" + at.UTC().Format("200601021504")
}

// runProgress is how a run goes, and how soon the schedule should look again for it.
type runProgress struct {
	tenancyv1alpha1.BackupRunStatus
	// made is how many backups the run has made.
	made int
	// wake is how long until the next tenant's time, or the window's end; 0 when neither is
	// ahead.
	wake time.Duration
}

// run makes the backups of the run at run whose time in its window has come, for the tenants
// the schedule selects whose data may be backed up now, and counts the run's backups (of
// backups, the schedule's) by phase.
func (r *ScheduleReconciler) run(ctx context.Context, s *tenancyv1alpha1.TenantBackupSchedule, run, now time.Time, backups []tenancyv1alpha1.TenantBackup) (runProgress, error) {
	sel, err := metav1.LabelSelectorAsSelector(&s.Spec.Tenants)
	if err != nil {
		return runProgress{}, err
	}
	tenants := &tenancyv1alpha1.TenantList{}
	if err := r.Client.List(ctx, tenants, client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return runProgress{}, err
	}
	suffix := ScheduledBackupName("", run)
	phases := map[string]tenancyv1alpha1.BackupPhase{}
	for i := range backups {
		if b := &backups[i]; strings.HasSuffix(b.Name, suffix) && b.DeletionTimestamp.IsZero() {
			phases[b.Name] = phaseOf(b)
		}
	}
	window, jitter := spreadOf(s)
	end := windowEnd(s, run)
	// The last tenants' times fall at the window's very end: a backup made then has a moment to
	// start before it is late. Past that, the run makes nothing more: a tenant selected since
	// (signed up, labelled) waits for the next run, rather than count as late in this one.
	missAt := end.Add(missedGrace)
	making := now.Before(missAt)
	p := runProgress{BackupRunStatus: tenancyv1alpha1.BackupRunStatus{
		ScheduleTime: metav1.Time{Time: run}, WindowEnd: metav1.Time{Time: end},
	}}
	var next time.Time
	for i := range tenants.Items {
		t := &tenants.Items[i]
		if !backedUp(t, s.Spec.Databases) {
			continue
		}
		p.Selected++
		name := ScheduledBackupName(t.Name, run)
		if _, made := phases[name]; made {
			continue
		}
		if !making {
			continue
		}
		due := run.Add(Offset(s.Name, t.Name, run, window, jitter))
		if due.After(now) {
			p.NotYetDue++
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		b := &tenancyv1alpha1.TenantBackup{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					tenancyv1alpha1.BackupScheduleLabel: s.Name,
					tenancyv1alpha1.BackupTenantLabel:   t.Name,
				},
			},
			Spec: tenancyv1alpha1.TenantBackupSpec{Tenant: t.Name, Databases: s.Spec.Databases},
		}
		err := r.Client.Create(ctx, b)
		switch {
		case apierrors.IsAlreadyExists(err):
			// Made by this schedule a moment ago (the cache has not shown it yet), or by another
			// schedule of the same minute: only this schedule's counts as this run's.
			other := &tenancyv1alpha1.TenantBackup{}
			if gerr := r.Client.Get(ctx, client.ObjectKeyFromObject(b), other); gerr == nil && other.Labels[tenancyv1alpha1.BackupScheduleLabel] != s.Name {
				continue
			}
		case err != nil:
			return p, fmt.Errorf("creating TenantBackup %s: %w", b.Name, err)
		}
		phases[name] = tenancyv1alpha1.BackupPending
	}
	p.made = len(phases)
	for _, phase := range phases {
		switch phase {
		case tenancyv1alpha1.BackupRunning:
			p.Running++
		case tenancyv1alpha1.BackupSucceeded:
			p.Succeeded++
		case tenancyv1alpha1.BackupFailed:
			p.Failed++
		default:
			p.Waiting++
		}
	}
	if last := s.Status.LastRun; last != nil && last.ScheduleTime.Equal(&p.ScheduleTime) && last.MissedWindow {
		// Missed once, missed for good: how many were late is what was counted at the end.
		p.MissedWindow, p.Late = true, last.Late
	} else if !now.Before(missAt) {
		p.Late = p.Waiting + p.NotYetDue
		p.MissedWindow = p.Late > 0
	}
	switch {
	case !next.IsZero():
		p.wake = next.Sub(now)
	case now.Before(missAt) && p.Waiting > 0:
		p.wake = missAt.Sub(now)
	}
	if p.wake > 0 {
		// A fleet's times are seconds apart: the backups due within a while are made together.
		p.wake = max(p.wake, minWake)
	}
	return p, nil
}

// backedUp reports whether a run backs up the tenant: its data may be read, and it has the
// databases asked for (any, when none are named) in place.
func backedUp(t *tenancyv1alpha1.Tenant, names []string) bool {
	if refused(t) != nil || len(t.Status.Databases) == 0 {
		return false
	}
	for _, n := range names {
		if !slices.ContainsFunc(t.Status.Databases, func(d tenancyv1alpha1.DatabaseStatus) bool { return d.Name == n }) {
			return false
		}
	}
	return true
}

// retain deletes, of each tenant's backups this schedule made, the succeeded ones beyond the
// newest Keep and the failed ones older than the newest that succeeded. Nothing is deleted for
// a tenant until one of its backups has succeeded, and none still running.
func (r *ScheduleReconciler) retain(ctx context.Context, s *tenancyv1alpha1.TenantBackupSchedule, backups []tenancyv1alpha1.TenantBackup) error {
	byTenant := map[string][]*tenancyv1alpha1.TenantBackup{}
	for i := range backups {
		b := &backups[i]
		if b.DeletionTimestamp.IsZero() {
			byTenant[b.Spec.Tenant] = append(byTenant[b.Spec.Tenant], b)
		}
	}
	keep := int(s.Spec.Keep)
	if keep < 1 {
		keep = 1
	}
	for _, backups := range byTenant {
		if err := deleteExpired(ctx, r.Client, r.Recorder, s, backups, keep, bySchedule, fmt.Sprintf("the schedule keeps %d", keep)); err != nil {
			return err
		}
	}
	return nil
}

// deleteExpired deletes what retention of keep no longer keeps of one tenant's backups, ordered
// newest first by newer, but for any a restore that has not ended reads; an event on regarding
// says why.
func deleteExpired(ctx context.Context, c client.Client, rec events.EventRecorder, regarding runtime.Object, backups []*tenancyv1alpha1.TenantBackup, keep int, newer func(a, b *tenancyv1alpha1.TenantBackup) int, why string) error {
	for _, b := range expired(backups, keep, newer) {
		busy, err := restoring(ctx, c, b.Name)
		if err != nil {
			return err
		}
		if busy {
			continue
		}
		if err := c.Delete(ctx, b, client.Preconditions{UID: &b.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting TenantBackup %s: %w", b.Name, err)
		}
		rec.Eventf(regarding, b, corev1.EventTypeNormal, ReasonRetention, "Retention", "deleted TenantBackup %s: %s", b.Name, why)
	}
	return nil
}

// ReasonRetention is the event of a schedule deleting a backup its retention no longer keeps.
const ReasonRetention = "Retention"

// restoring reports whether a restore that has not ended reads the backup: retention keeps it
// until that restore is over, whatever succeeded since.
func restoring(ctx context.Context, c client.Reader, backup string) (bool, error) {
	list := &tenancyv1alpha1.TenantRestoreList{}
	if err := c.List(ctx, list, client.MatchingFields{indexes.OpenRestoreBackup: backup}); err != nil {
		return false, err
	}
	return len(list.Items) > 0, nil
}

// bySchedule orders a schedule's backups of one tenant newest first: they are named after their
// scheduled minute, so their names sort as their times (their creation may not, in a window
// longer than the schedule's period).
func bySchedule(a, b *tenancyv1alpha1.TenantBackup) int { return strings.Compare(b.Name, a.Name) }

// byCreation orders backups newest made first, and of those made the same second the greatest
// name first.
func byCreation(a, b *tenancyv1alpha1.TenantBackup) int {
	if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(b.Name, a.Name)
}

// expired are the backups of one tenant that retention deletes, newest first as newer orders
// them: succeeded ones beyond the newest keep, and failed ones older than the newest succeeded.
func expired(backups []*tenancyv1alpha1.TenantBackup, keep int, newer func(a, b *tenancyv1alpha1.TenantBackup) int) []*tenancyv1alpha1.TenantBackup {
	slices.SortFunc(backups, newer)
	var out []*tenancyv1alpha1.TenantBackup
	succeeded := 0
	for _, b := range backups {
		switch b.Status.Phase {
		case tenancyv1alpha1.BackupSucceeded:
			succeeded++
			if succeeded > keep {
				out = append(out, b)
			}
		case tenancyv1alpha1.BackupFailed:
			if succeeded > 0 {
				out = append(out, b)
			}
		}
	}
	return out
}
