// Package migrations runs the migrations a component's new version declares
// (ComponentTemplate spec.migrations) for one tenant: a backup of the databases they name first,
// the running version fenced when the version asks for it, each pre migration as a Job in the
// tenant's namespace before the version's pods exist, and each post migration once they are all
// Ready. The components engine asks it, for each component whose version moves, whether the
// version may be applied yet; everything a move has done is found again from the objects it made
// (Jobs and backups named after the move, ID), so a reconcile that lost its status write, or an
// operator killed at any step, carries on where it was.
package migrations

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/jobslots"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/jobs"
	"github.com/landlord-dev/landlord/internal/resources"
)

// Reasons of the events a move records on its Tenant, beside MigrationFailed.
const (
	// ReasonMigrationStarted: a component's move to a version with migrations began (or began
	// again, as a new attempt).
	ReasonMigrationStarted = "MigrationStarted"
	// ReasonMigrationSucceeded: every migration of a component's move succeeded.
	ReasonMigrationSucceeded = "MigrationSucceeded"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=tenantbackups,verbs=get;list;watch;create

// Engine runs moves. Client reads through the cache (Jobs, credentials Secrets, templates) and
// writes; APIReader reads what the cache does not hold (a Job just created by a reconcile whose
// status write was lost, the pods of a failed Job, TenantBackups, which are not cached on every
// shard).
type Engine struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Backups: a backup store is configured, and TenantBackups are served.
	Backups bool
	// Slots keeps each database server's Jobs within its limit; none when nil.
	Slots *jobslots.Slots
	// ApplyFailed classifies a write the API server refused.
	ApplyFailed phase.ApplyFailed
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Move is one component of a tenant moving from a version to another.
type Move struct {
	Tenant    *tenancyv1alpha1.Tenant
	Namespace string
	Component string
	// From is the version the component runs ("" before it first started); To the version
	// chosen for it.
	From, To string
	// Last is the component's migration as its status last recorded it.
	Last *tenancyv1alpha1.MigrationStatus
	// Retry: a reconcile was requested, which starts a failed move again.
	Retry bool
}

// Gate is what the component renders while its move runs.
type Gate int

const (
	// Proceed: apply the new version.
	Proceed Gate = iota
	// Hold: keep the version it runs (nothing for a new tenant), scaled to zero with Fence.
	Hold
	// Failed: keep the version it runs, not fenced, and stall with MigrationFailed.
	Failed
)

// Decision is where a move stands and what the component renders meanwhile.
type Decision struct {
	Gate  Gate
	Fence bool
	// Status is the migration's status entry.
	Status *tenancyv1alpha1.MigrationStatus
	// Result is the components phase's outcome while held or failed.
	Result phase.Result
}

// Running reports whether a migration is under way: neither succeeded nor failed.
func Running(st *tenancyv1alpha1.MigrationStatus) bool {
	return st != nil && st.Phase != tenancyv1alpha1.MigrationSucceeded && st.Phase != tenancyv1alpha1.MigrationFailed
}

// Templates lists the component's templates from the cache.
func (e *Engine) Templates(ctx context.Context) ([]tenancyv1alpha1.ComponentTemplate, error) {
	list := &tenancyv1alpha1.ComponentTemplateList{}
	if err := e.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (e *Engine) now() metav1.Time {
	if e.Now != nil {
		return metav1.NewTime(e.Now().Truncate(time.Second))
	}
	return metav1.NewTime(time.Now().Truncate(time.Second))
}

// start is the status of the move's current attempt: the last one's, or a new attempt when the
// last failed and a reconcile was requested, or the first when the last was another move.
func (e *Engine) start(m Move) (st *tenancyv1alpha1.MigrationStatus, fresh bool) {
	countMoves(m.Component)
	if l := m.Last; l != nil && l.From == m.From && l.To == m.To {
		st = l.DeepCopy()
		if st.Attempts < 1 {
			st.Attempts = 1
		}
		if st.Phase == tenancyv1alpha1.MigrationFailed && m.Retry {
			// Another attempt, from the step that failed: the backup of the last attempt stays
			// named until this one takes its own.
			st.Attempts++
			now := e.now()
			st.Phase, st.StartedAt, st.FinishedAt, st.StepStartedAt = "", &now, nil, nil
			st.Step, st.Job, st.Message, st.Reason = "", "", "", ""
			return st, true
		}
		return st, false
	}
	now := e.now()
	return &tenancyv1alpha1.MigrationStatus{From: m.From, To: m.To, Attempts: 1, StartedAt: &now}, true
}

// Before advances a move up to the point where the new version may be applied: its backup, its
// fence and its pre migrations. path is PathOf(m.From, m.To), not empty.
func (e *Engine) Before(ctx context.Context, m Move, path Path, fencedReady bool) Decision {
	st, fresh := e.start(m)
	switch st.Phase {
	case tenancyv1alpha1.MigrationFailed:
		return Decision{Gate: Failed, Status: st, Result: failedResult(m, st)}
	case tenancyv1alpha1.MigrationApplying, tenancyv1alpha1.MigrationPost, tenancyv1alpha1.MigrationSucceeded:
		return Decision{Gate: Proceed, Status: st}
	}
	id := ID(string(m.Tenant.UID), m.Component, m.From, m.To)
	if fresh {
		if d, held := e.begin(ctx, m, st, id); held {
			return d
		}
	}
	if m.Tenant.Spec.State == tenancyv1alpha1.StateFrozen {
		return e.hold(st, "", "its migrations to %s run once the tenant is Active", m.To)
	}
	for _, db := range path.Databases {
		if !hasDatabase(m.Tenant, db) {
			return e.fail(m, st, "", "", "component %s %s: a migration needs database %s, which the tenant does not have (spec.databases)", m.Component, m.To, db)
		}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: tenancyv1alpha1.DatabaseSecretName(db)}, &corev1.Secret{}); err != nil {
			if apierrors.IsNotFound(err) {
				return e.hold(st, "", "its migrations to %s wait for the credentials of database %s", m.To, db)
			}
			return e.transient(st, err)
		}
	}

	// The backup, before anything changes; once it ended, the attempt has gone past it, and a
	// backup deleted since is not taken again over data the migrations may have changed.
	pastBackup := st.Phase == tenancyv1alpha1.MigrationFencing || st.Phase == tenancyv1alpha1.MigrationPre
	if !pastBackup && e.Backups && m.From != "" && len(path.Databases) > 0 && path.Backup != tenancyv1alpha1.MigrationBackupOff {
		name := BackupName(m.Tenant.Name, id, st.Attempts)
		st.Backup = name
		done, failure, err := e.backup(ctx, m, id, name, path.Databases)
		switch {
		case err != nil:
			return e.transient(st, err)
		case !done:
			st.Phase = tenancyv1alpha1.MigrationBackingUp
			return e.hold(st, tenancyv1alpha1.MigrationBackingUp, "backing up databases %s before migrating from %s (TenantBackup %s)", strings.Join(path.Databases, ", "), m.From, name)
		case failure != "" && path.Backup == tenancyv1alpha1.MigrationBackupRequired:
			return e.fail(m, st, "", "", "component %s %s: the backup the migrations require failed: TenantBackup %s: %s", m.Component, m.To, name, failure)
		}
	}

	// The fence: the running version scaled to zero, its pods gone.
	fence := path.FenceWriters && m.From != ""
	if fence && !(st.Phase == tenancyv1alpha1.MigrationPre || (st.Phase == tenancyv1alpha1.MigrationFencing && fencedReady)) {
		st.Phase = tenancyv1alpha1.MigrationFencing
		d := e.hold(st, tenancyv1alpha1.MigrationFencing, "scaling %s to zero before migrating", m.From)
		d.Fence = true
		return d
	}

	for i, step := range path.Pre {
		done, d := e.step(ctx, m, st, id, i, step)
		if !done {
			d.Fence = fence && d.Gate == Hold
			return d
		}
	}
	st.Phase, st.Step, st.Job, st.Message = tenancyv1alpha1.MigrationApplying, "", "", ""
	return Decision{Gate: Proceed, Status: st}
}

// After runs the post migrations of a move whose version is applied and Ready, and ends it.
func (e *Engine) After(ctx context.Context, m Move, path Path) Decision {
	st, _ := e.start(m)
	switch st.Phase {
	case tenancyv1alpha1.MigrationSucceeded:
		return Decision{Gate: Proceed, Status: st}
	case tenancyv1alpha1.MigrationFailed:
		return Decision{Gate: Failed, Status: st, Result: failedResult(m, st)}
	}
	id := ID(string(m.Tenant.UID), m.Component, m.From, m.To)
	if st.Attempts > 1 && st.Phase == "" {
		// A retried post migration.
		if d, held := e.begin(ctx, m, st, id); held {
			return d
		}
	}
	for i, step := range path.Post {
		done, d := e.step(ctx, m, st, id, len(path.Pre)+i, step)
		if !done {
			return d
		}
	}
	now := e.now()
	st.Phase, st.Step, st.Job, st.Message, st.FinishedAt = tenancyv1alpha1.MigrationSucceeded, "", "", "", &now
	e.Recorder.Eventf(m.Tenant, nil, corev1.EventTypeNormal, ReasonMigrationSucceeded, "Migrate", "component %s: migrated from %s to %s", m.Component, versionOrNone(m.From), m.To)
	migrationsFinished.WithLabelValues(m.Component, "succeeded").Inc()
	if st.StartedAt != nil {
		migrationDuration.WithLabelValues(m.Component).Observe(now.Sub(st.StartedAt.Time).Seconds())
	}
	return Decision{Gate: Proceed, Status: st}
}

// begin starts a move, or another attempt of one: it says so, starts the attempt from the first
// step should a restore have put the tenant's data back since the last attempt began, and prunes
// the Jobs of other moves that ended. A Job of another move still running holds this one back
// (held): a migration is never cut off half done, nor run beside another.
func (e *Engine) begin(ctx context.Context, m Move, st *tenancyv1alpha1.MigrationStatus, id string) (Decision, bool) {
	jobs := &batchv1.JobList{}
	if err := e.Client.List(ctx, jobs, client.InNamespace(m.Namespace), client.MatchingLabels{
		tenancyv1alpha1.TenantLabel: m.Tenant.Name, tenancyv1alpha1.ComponentLabel: m.Component,
	}, client.HasLabels{MigrationLabel}); err != nil {
		return e.transient(st, err), true
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.Labels[MigrationLabel] == id || !metav1.IsControlledBy(j, m.Tenant) {
			continue
		}
		if ended, _, _ := Outcome(j); !ended {
			st.Phase = tenancyv1alpha1.MigrationPre
			return e.hold(st, "", "waits for Job %s, a migration of another move, to end", j.Name), true
		}
	}
	if st.Attempts > 1 && st.Done > 0 {
		restored, err := e.restoredSince(ctx, m.Tenant, m.Last)
		if err != nil {
			return e.transient(st, err), true
		}
		if restored != "" {
			// The data is as it was before the move: every step runs again.
			st.Done = 0
		}
	}
	e.Recorder.Eventf(m.Tenant, nil, corev1.EventTypeNormal, ReasonMigrationStarted, "Migrate", "component %s: migrating from %s to %s (attempt %d, from step %d)",
		m.Component, versionOrNone(m.From), m.To, st.Attempts, st.Done+1)
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if j.Labels[MigrationLabel] == id || !metav1.IsControlledBy(j, m.Tenant) {
			continue
		}
		if err := e.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return e.transient(st, err), true
		}
	}
	return Decision{}, false
}

// restoredSince names a TenantRestore into the tenant that succeeded after the last attempt
// began; "" when none did. Read from the API server: restores are not cached on every shard.
func (e *Engine) restoredSince(ctx context.Context, t *tenancyv1alpha1.Tenant, last *tenancyv1alpha1.MigrationStatus) (string, error) {
	if last == nil || last.StartedAt == nil {
		return "", nil
	}
	list := &tenancyv1alpha1.TenantRestoreList{}
	if err := e.APIReader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return "", nil
		}
		return "", err
	}
	for _, rs := range list.Items {
		if rs.Status.TenantUID == string(t.UID) && rs.Status.Phase == tenancyv1alpha1.BackupSucceeded &&
			rs.Status.CompletionTime != nil && !rs.Status.CompletionTime.Before(last.StartedAt) {
			return rs.Name, nil
		}
	}
	return "", nil
}

// step runs one migration's Job: done once it completed (or a step before counted it done);
// otherwise the decision while it runs, or once it failed.
func (e *Engine) step(ctx context.Context, m Move, st *tenancyv1alpha1.MigrationStatus, id string, i int, step Step) (bool, Decision) {
	if int32(i) < st.Done {
		return true, Decision{}
	}
	stage := tenancyv1alpha1.MigrationPre
	if step.Stage == Post {
		stage = tenancyv1alpha1.MigrationPost
	}
	name := JobName(m.Component, id, st.Attempts, i)
	job, err := e.job(ctx, m, id, name, i, step)
	if full, ok := errors.AsType[*jobslots.Full](err); ok {
		st.Phase, st.Step, st.Job = stage, step.Name(), ""
		return false, e.hold(st, stage, "migration %s waits its turn: %v", step.Name(), full)
	}
	if err != nil {
		if res := e.ApplyFailed(m.Tenant, job, err); res.Stalled {
			return false, e.fail(m, st, step.Name(), name, "component %s %s: migration %s: the Job is refused: %s", m.Component, m.To, step.Name(), res.Message)
		}
		return false, e.transient(st, err)
	}
	st.Phase, st.Step, st.Job = stage, step.Name(), name
	if st.StepStartedAt == nil || !job.CreationTimestamp.IsZero() && st.StepStartedAt.Before(&job.CreationTimestamp) {
		created := job.CreationTimestamp
		if created.IsZero() {
			created = e.now()
		}
		st.StepStartedAt = &created
	}
	// Not kstatus's verdict: it reads a Job that started as Current.
	switch finished, failed, why := Outcome(job); {
	case !finished:
		return false, e.hold(st, stage, "migration %s runs (Job %s)", step.Name(), name)
	case failed:
		if st.Phase == tenancyv1alpha1.MigrationFailed {
			// Recorded already: its reason and last words are in the status.
			return false, Decision{Gate: Failed, Status: st, Result: failedResult(m, st)}
		}
		// The API server's copy: it counts the Job's pods, and carries its UID, which its pods
		// name as their controller.
		live := &batchv1.Job{}
		if err := e.APIReader.Get(ctx, client.ObjectKeyFromObject(job), live); err != nil {
			return false, e.transient(st, err)
		}
		started := live.Status.Failed > 0 || live.Status.Succeeded > 0
		if !started {
			// Its pod was never made: the tenant's namespace refused it (a quota its own pods
			// fill, a limit range). Nothing of the version ran; a rollout does not count it
			// against the version, which a tenant could otherwise halt at will.
			d := e.fail(m, st, step.Name(), name, "component %s %s: migration %s never ran: Job %s got no pod before it ended (%s); see the namespace's events (kubectl get events -n %s)",
				m.Component, m.To, step.Name(), name, why, m.Namespace)
			d.Status.Reason = tenancyv1alpha1.ReasonMigrationNotStarted
			d.Result = failedResult(m, d.Status)
			return false, d
		}
		msg, err := e.lastWords(ctx, m, live)
		if err != nil {
			return false, e.transient(st, err)
		}
		if msg != "" {
			why += ": " + msg
		}
		return false, e.fail(m, st, step.Name(), name, "component %s %s: migration %s failed (Job %s): %s", m.Component, m.To, step.Name(), name, why)
	}
	st.Done = int32(i) + 1
	st.StepStartedAt = nil
	return true, Decision{}
}

// job is the step's Job: found in the cache, or created, or (created by a reconcile the cache has
// not caught up with) read from the API server.
func (e *Engine) job(ctx context.Context, m Move, id, name string, i int, step Step) (*batchv1.Job, error) {
	servers, limits, err := e.servers(ctx, m.Tenant, step.Job.Databases)
	if err != nil {
		return nil, err
	}
	want := Job(m.Tenant, m.Namespace, m.Component, id, name, strconv.Itoa(i), step, servers)
	job := &batchv1.Job{}
	err = e.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, job)
	if err == nil {
		if e.Slots != nil {
			e.Slots.Seen(client.ObjectKeyFromObject(job))
		}
		return job, nil
	}
	if !apierrors.IsNotFound(err) {
		return want, err
	}
	create := want.DeepCopy()
	do := func() error { return e.Client.Create(ctx, create) }
	if e.Slots != nil {
		// Within each server's limit of Jobs at once: the first to come takes a place.
		inner := do
		do = func() error {
			return e.Slots.Create(ctx, e.Client, jobslots.Waiter{Queue: jobslots.Tenants, Key: client.ObjectKeyFromObject(m.Tenant)}, limits, client.ObjectKeyFromObject(create), inner)
		}
	}
	if err := do(); err != nil {
		if _, full := errors.AsType[*jobslots.Full](err); full {
			return nil, err
		}
		if !apierrors.IsAlreadyExists(err) {
			return want, err
		}
		if err := e.APIReader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, job); err != nil {
			return want, err
		}
		return job, nil
	}
	return create, nil
}

// servers are the database servers the tenant's named databases are on, sorted, with their
// limits of Jobs at once.
func (e *Engine) servers(ctx context.Context, t *tenancyv1alpha1.Tenant, databases []string) ([]string, map[string]int32, error) {
	return jobslots.ServersOf(ctx, e.Client, t, func(name string) bool { return slices.Contains(databases, name) })
}

// Outcome reads a Job's end from its conditions, which the operator's cache keeps of a
// migration Job (and nothing else of its status).
func Outcome(j *batchv1.Job) (finished, failed bool, why string) { return jobs.Ended(j) }

// lastWords is the termination message of the Job's last failed container, with the
// credentials of the tenant's databases taken out: a migration's output is the tenant's code's,
// and may print what it connected with.
func (e *Engine) lastWords(ctx context.Context, m Move, job *batchv1.Job) (string, error) {
	pods := &corev1.PodList{}
	if err := e.APIReader.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", err
	}
	var msg string
	var code int32
	var at time.Time
	found := false
	for _, p := range pods.Items {
		// The job-name label alone is anyone's to set on a pod of their own.
		if !metav1.IsControlledBy(&p, job) {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil && term.ExitCode != 0 && !term.FinishedAt.Time.Before(at) {
				at, code, msg, found = term.FinishedAt.Time, term.ExitCode, strings.TrimSpace(term.Message), true
			}
		}
	}
	if !found {
		return "", nil
	}
	// Taken out of the message as the container left it, before anything is put in front.
	for _, db := range m.Tenant.Spec.Databases.Postgres {
		msg = e.redact(ctx, m.Namespace, db.Name, msg)
	}
	for _, db := range m.Tenant.Spec.Databases.MySQL {
		msg = e.redact(ctx, m.Namespace, db.Name, msg)
	}
	return fmt.Sprintf("exit code %d: %s", code, clip(msg, 1024)), nil
}

// redact takes a database's password and URL out of msg.
func (e *Engine) redact(ctx context.Context, namespace, db, msg string) string {
	s := &corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: tenancyv1alpha1.DatabaseSecretName(db)}, s); err != nil {
		return msg
	}
	for _, key := range []string{tenancyv1alpha1.CredentialsKeyURL, tenancyv1alpha1.CredentialsKeyPassword} {
		msg = Redact(msg, string(s.Data[key]))
	}
	return msg
}

// minFragment is the shortest piece of a secret Redact takes out at either end of a message: a
// log tail may start in its middle, or a clip end there.
const minFragment = 6

// Redact takes secret out of msg: whole, and where msg starts with its end or ends with its
// start (a message cut from a longer one).
func Redact(msg, secret string) string {
	if len(secret) < 4 {
		return msg
	}
	msg = strings.ReplaceAll(msg, secret, "[redacted]")
	for n := len(secret) - 1; n >= minFragment; n-- {
		if strings.HasPrefix(msg, secret[len(secret)-n:]) {
			msg = "[redacted]" + msg[n:]
			break
		}
	}
	for n := len(secret) - 1; n >= minFragment; n-- {
		if strings.HasSuffix(msg, secret[:n]) {
			msg = msg[:len(msg)-n] + "[redacted]"
			break
		}
	}
	return msg
}

// backup makes sure the move's TenantBackup exists, and says whether it ended and how.
func (e *Engine) backup(ctx context.Context, m Move, id, name string, databases []string) (done bool, failure string, err error) {
	b := &tenancyv1alpha1.TenantBackup{}
	err = e.APIReader.Get(ctx, client.ObjectKey{Name: name}, b)
	if apierrors.IsNotFound(err) {
		labels := resources.Labels(m.Tenant)
		labels[tenancyv1alpha1.ComponentLabel] = m.Component
		labels[MigrationLabel] = id
		// Not owned by the Tenant: a backup outlives a tenant deleted without being purged,
		// as any other backup of it does.
		b = &tenancyv1alpha1.TenantBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       tenancyv1alpha1.TenantBackupSpec{Tenant: m.Tenant.Name, Databases: databases},
		}
		if err := e.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, "", err
		}
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	if b.Spec.Tenant != m.Tenant.Name || b.Labels[MigrationLabel] != id {
		return true, fmt.Sprintf("TenantBackup %s exists and is not this migration's", name), nil
	}
	switch b.Status.Phase {
	case tenancyv1alpha1.BackupSucceeded:
		return true, "", nil
	case tenancyv1alpha1.BackupFailed:
		return true, readyMessage(b.Status.Conditions), nil
	}
	if meta.IsStatusConditionTrue(b.Status.Conditions, tenancyv1alpha1.StalledCondition) {
		return true, readyMessage(b.Status.Conditions), nil
	}
	return false, "", nil
}

func readyMessage(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, tenancyv1alpha1.ReadyCondition); c != nil {
		return c.Reason + ": " + c.Message
	}
	return "failed"
}

// hold: the move waits (for its backup, its fence or a Job); the component keeps its version.
func (e *Engine) hold(st *tenancyv1alpha1.MigrationStatus, p tenancyv1alpha1.MigrationPhase, format string, args ...any) Decision {
	if p != "" {
		st.Phase = p
	}
	if st.Phase == "" {
		st.Phase = tenancyv1alpha1.MigrationPre
	}
	st.Message = fmt.Sprintf(format, args...)
	return Decision{Gate: Hold, Status: st, Result: phase.Progressing(tenancyv1alpha1.ReasonMigrating, "%s", st.Message)}
}

// transient: an error reading or writing, retried with backoff.
func (e *Engine) transient(st *tenancyv1alpha1.MigrationStatus, err error) Decision {
	if st.Phase == "" {
		st.Phase = tenancyv1alpha1.MigrationPre
	}
	return Decision{Gate: Hold, Status: st, Result: phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)}
}

// fail ends the move's attempt as failed, and says so once.
func (e *Engine) fail(m Move, st *tenancyv1alpha1.MigrationStatus, step, job, format string, args ...any) Decision {
	msg := fmt.Sprintf(format, args...)
	if st.Phase != tenancyv1alpha1.MigrationFailed {
		e.Recorder.Eventf(m.Tenant, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonMigrationFailed, "Migrate", "%s", msg)
		migrationsFinished.WithLabelValues(m.Component, "failed").Inc()
	}
	now := e.now()
	st.Phase, st.Message, st.FinishedAt, st.Reason = tenancyv1alpha1.MigrationFailed, msg, &now, tenancyv1alpha1.ReasonMigrationFailed
	if step != "" {
		st.Step, st.Job = step, job
	}
	return Decision{Gate: Failed, Status: st, Result: failedResult(m, st)}
}

func failedResult(m Move, st *tenancyv1alpha1.MigrationStatus) phase.Result {
	msg := st.Message
	if st.Backup != "" {
		msg += fmt.Sprintf(" (TenantBackup %s holds the data from before; restoring it is yours to decide)", st.Backup)
	}
	reason := st.Reason
	if reason == "" {
		reason = tenancyv1alpha1.ReasonMigrationFailed
	}
	return phase.Stalled(reason, "%s", msg)
}

func hasDatabase(t *tenancyv1alpha1.Tenant, name string) bool {
	has := func(d tenancyv1alpha1.Database) bool { return d.Name == name }
	return slices.ContainsFunc(t.Spec.Databases.Postgres, has) || slices.ContainsFunc(t.Spec.Databases.MySQL, has)
}

func versionOrNone(v string) string {
	if v == "" {
		return "nothing (a new tenant)"
	}
	return v
}

// clip keeps the end of s, where a failure's last words are.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// RunningJob names a migration Job of the tenant's component that has not ended; "" when none.
func (e *Engine) RunningJob(ctx context.Context, t *tenancyv1alpha1.Tenant, namespace, component string) (string, error) {
	jobs := &batchv1.JobList{}
	if err := e.Client.List(ctx, jobs, client.InNamespace(namespace), client.MatchingLabels{
		tenancyv1alpha1.TenantLabel: t.Name, tenancyv1alpha1.ComponentLabel: component,
	}, client.HasLabels{MigrationLabel}); err != nil {
		return "", err
	}
	for i := range jobs.Items {
		if ended, _, _ := Outcome(&jobs.Items[i]); !ended && metav1.IsControlledBy(&jobs.Items[i], t) {
			return jobs.Items[i].Name, nil
		}
	}
	return "", nil
}

// Superseded is the record of a move that the component left before it ended (another version
// was chosen, or it was moved back): it ended, unfinished.
func (e *Engine) Superseded(last *tenancyv1alpha1.MigrationStatus, to string) *tenancyv1alpha1.MigrationStatus {
	st := last.DeepCopy()
	now := e.now()
	st.Phase, st.FinishedAt, st.Reason = tenancyv1alpha1.MigrationFailed, &now, ReasonSuperseded
	st.Message = fmt.Sprintf("left unfinished: the component moved to %s before it ended, at step %s", to, st.Step)
	return st
}

// ReasonSuperseded is the reason of a move the component left before it ended.
const ReasonSuperseded = "Superseded"
