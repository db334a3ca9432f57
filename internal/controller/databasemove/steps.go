package databasemove

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/controller/backupjobs"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// The copy's Job and its plan live in the backups' namespace, beside the backups' Jobs.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;delete

// waitAgain is how soon a move waiting on something no event announces (a server turning
// Ready is one: the DatabaseServer's status) looks again.
const waitAgain = 10 * time.Second

// prepare checks the move can be made and records where the database is and where it goes.
// It changes nothing anywhere else.
func (r *Reconciler) prepare(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (time.Duration, error) {
	s.Phase = tenancyv1alpha1.MovePending
	t, err := r.tenantOf(ctx, m, s)
	if err != nil {
		return 0, err
	}
	if t == nil {
		return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "tenant %s does not exist", m.Spec.Tenant)
	}
	if err := movable(t); err != nil {
		return 0, err
	}
	engine, spec, ok := specDatabase(t, m.Spec.Database)
	if !ok {
		return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "tenant %s has no database %s in its spec", t.Name, m.Spec.Database)
	}
	if spec.Server != "" && spec.Server != m.Spec.Server {
		return 0, refuse(tenancyv1alpha1.ReasonMoveRefused,
			"tenant %s's spec places database %s on DatabaseServer %s (spec.databases.%s[name=%s].server): set it to %s, or leave it empty, to move the database there",
			t.Name, spec.Name, spec.Server, engine, spec.Name, m.Spec.Server)
	}
	i := slices.IndexFunc(t.Status.Databases, func(d tenancyv1alpha1.DatabaseStatus) bool { return d.Name == m.Spec.Database })
	if i < 0 {
		waiting(m, s, fmt.Sprintf("database %s of tenant %s is not in place yet", m.Spec.Database, t.Name))
		return waitAgain, nil
	}
	placed := t.Status.Databases[i]
	if placed.Server == m.Spec.Server {
		return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "database %s of tenant %s is on DatabaseServer %s already", placed.Name, t.Name, placed.Server)
	}
	ds := &tenancyv1alpha1.DatabaseServer{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: m.Spec.Server}, ds); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "DatabaseServer %s does not exist", m.Spec.Server)
		}
		return 0, err
	}
	if ds.Spec.Engine != engine {
		return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "DatabaseServer %s is %s, and database %s is %s", ds.Name, ds.Spec.Engine, placed.Name, engine)
	}
	if !meta.IsStatusConditionTrue(ds.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
		waiting(m, s, fmt.Sprintf("DatabaseServer %s is not Ready", ds.Name))
		return waitAgain, nil
	}
	if other, err := otherMove(ctx, r.Client, m); err != nil || other != "" {
		if err != nil {
			return 0, err
		}
		return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "DatabaseMove %s is moving database %s of tenant %s: one move of a database at a time", other, placed.Name, t.Name)
	}
	if restore, err := r.restoring(ctx, t); err != nil || restore != "" {
		if err != nil {
			return 0, err
		}
		// Its logins are set back when it ends: that would undo the fence.
		waiting(m, s, fmt.Sprintf("TenantRestore %s is writing into tenant %s; the move starts after it", restore, t.Name))
		return waitAgain, nil
	}
	if r.Config.Backups.Image == "" {
		return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "the operator has no backups.image: the copy runs in a Job of it")
	}
	dbName, user := database.NewNames(r.Config.Databases.Naming, database.Engine(engine), ds.Spec.NamePrefix, t.Name, string(t.UID), placed.Name)
	s.TenantUID, s.Engine = string(t.UID), engine
	s.From = &tenancyv1alpha1.DatabaseLocation{Server: placed.Server, Database: placed.Database, Username: placed.Username}
	s.To = &tenancyv1alpha1.DatabaseLocation{Server: ds.Name, Database: dbName, Username: user}
	s.Job = backupjobs.JobName(backup.OpCopy, m.UID)
	s.Phase = tenancyv1alpha1.MoveCopying
	r.Recorder.Eventf(m, t, corev1.EventTypeNormal, tenancyv1alpha1.ReasonMoving, "Move",
		"moving %s database %s of tenant %s from DatabaseServer %s to %s", engine, placed.Name, t.Name, placed.Server, ds.Name)
	// Recorded before anything is made: the next reconcile, which reads it back, fences.
	return 0, nil
}

// waiting says what the move waits for, without ending it.
func waiting(m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus, msg string) {
	conditions.For(&s.Conditions, m.Generation).Reconciling(tenancyv1alpha1.ReasonMoveWaiting, msg)
}

// restoring names a TenantRestore writing into the tenant that has not ended, or "".
func (r *Reconciler) restoring(ctx context.Context, t *tenancyv1alpha1.Tenant) (string, error) {
	if !r.Restores {
		return "", nil
	}
	list := &tenancyv1alpha1.TenantRestoreList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenRestoreBackup: indexes.RestoreTenantKey(t.Name)}); err != nil {
		return "", err
	}
	if len(list.Items) > 0 {
		return list.Items[0].Name, nil
	}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenRestoreBackup: indexes.RestoreTenantUIDKey(string(t.UID))}); err != nil {
		return "", err
	}
	if len(list.Items) > 0 {
		return list.Items[0].Name, nil
	}
	return "", nil
}

// movable refuses a tenant whose data is not its own to move now.
func movable(t *tenancyv1alpha1.Tenant) error {
	switch {
	case !t.DeletionTimestamp.IsZero():
		return refuse(tenancyv1alpha1.ReasonMoveRefused, "tenant %s is being deleted", t.Name)
	case t.Spec.State != tenancyv1alpha1.StateActive && t.Spec.State != tenancyv1alpha1.StateFrozen && t.Spec.State != "":
		return refuse(tenancyv1alpha1.ReasonMoveRefused, "tenant %s is %s: only an Active or Frozen tenant's databases are moved", t.Name, t.Spec.State)
	case t.Annotations[tenancyv1alpha1.MovedToAnnotation] != "":
		return refuse(tenancyv1alpha1.ReasonMoveRefused, "tenant %s was moved to another cluster (%s): its data is the destination's", t.Name, tenancyv1alpha1.MovedToAnnotation)
	}
	return nil
}

// specDatabase finds the database in the tenant's spec, with its engine.
func specDatabase(t *tenancyv1alpha1.Tenant, name string) (tenancyv1alpha1.DatabaseEngine, tenancyv1alpha1.Database, bool) {
	for _, d := range t.Spec.Databases.Postgres {
		if d.Name == name {
			return tenancyv1alpha1.EnginePostgres, d, true
		}
	}
	for _, d := range t.Spec.Databases.MySQL {
		if d.Name == name {
			return tenancyv1alpha1.EngineMySQL, d, true
		}
	}
	return "", tenancyv1alpha1.Database{}, false
}

// otherMove names another move of the same database that has not ended and goes first, or "":
// one under way, or one still pending that was created before this one (by name, when created in
// the same second). Two moves created at once agree on which goes first, whatever the order
// their reconciles run in. Pending reads the cache (a move waiting for its server looks every 10
// seconds); the check before a move's first side effect reads the API server, which a cache that
// has not seen the other's start yet cannot mislead.
func otherMove(ctx context.Context, reader client.Reader, m *tenancyv1alpha1.DatabaseMove) (string, error) {
	list := &tenancyv1alpha1.DatabaseMoveList{}
	if err := reader.List(ctx, list); err != nil {
		return "", err
	}
	for _, o := range list.Items {
		if o.UID == m.UID || o.Spec.Tenant != m.Spec.Tenant || o.Spec.Database != m.Spec.Database || o.Terminal() {
			continue
		}
		pending := o.Status.Phase == "" || o.Status.Phase == tenancyv1alpha1.MovePending
		first := o.CreationTimestamp.Before(&m.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&m.CreationTimestamp) && o.Name < m.Name)
		if !pending || first {
			return o.Name, nil
		}
	}
	return "", nil
}

// copying makes the copy: its plan Secret first (this move's first side effect, and the record
// of the fence's and the new login's passwords until the switch), then the database and login on
// the target server, then the fence, then the Job. Each is made again, the same, by a reconcile
// that finds it was killed between them. The Job's success is the proof (it compared every
// table of the two databases); before the switch, the move checks that the fence held and that
// the tenant still asks for the database there.
func (r *Reconciler) copying(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (time.Duration, error) {
	// A switch written by a reconcile whose status write was lost: nothing rolls it back now.
	if switched, err := r.recordSwitched(ctx, m, s); err != nil || switched {
		if switched {
			s.Phase = tenancyv1alpha1.MoveSwitching
		}
		return 0, err
	}
	t, err := r.tenantOf(ctx, m, s)
	if err != nil {
		return 0, err
	}
	if t == nil {
		return 0, refuse(tenancyv1alpha1.ReasonMoveFailed, "tenant %s is gone, or was made again", m.Spec.Tenant)
	}
	if err := movable(t); err != nil {
		return 0, err
	}
	if made, err := r.planMade(ctx, s); err != nil {
		return 0, err
	} else if !made {
		// Read from the API server, not the cache: of two moves of one database made at once,
		// the one that does not go first has changed nothing when it stops here.
		if other, err := otherMove(ctx, r.APIReader, m); err != nil || other != "" {
			if err != nil {
				return 0, err
			}
			return 0, refuse(tenancyv1alpha1.ReasonMoveRefused, "DatabaseMove %s is moving database %s of tenant %s: one move of a database at a time", other, m.Spec.Database, t.Name)
		}
	}
	plan, made, err := r.plan(ctx, m, s)
	if err != nil {
		return 0, err
	}
	owner := *metav1.NewControllerRef(m, tenancyv1alpha1.GroupVersion.WithKind("DatabaseMove"))
	if !made {
		sec, err := backupjobs.PlanSecret(r.Config.Backups, s.Job, owner, plan)
		if err != nil {
			return 0, err
		}
		if err := backupjobs.CreateOwned(ctx, r.Client, sec, &corev1.Secret{}, owner); err != nil {
			return 0, err
		}
	}
	src, dst := plan.Databases[0].Target, plan.CopyTo[0].Target
	jobMade, err := r.jobMade(ctx, s)
	if err != nil {
		return 0, err
	}
	if !jobMade || s.FencedAt == nil {
		// Made before the fence, so that a target that cannot take the copy stops the move
		// before the tenant loses a second of its database.
		if err := r.onServer(ctx, s.To.Server, func(ctx context.Context, p database.Provisioner) error {
			return p.Ensure(ctx, database.Account{Database: dst.Database, Username: dst.Username, Password: dst.Password, Owner: s.TenantUID})
		}); err != nil {
			return 0, fmt.Errorf("making the copy's database on DatabaseServer %s: %w", s.To.Server, err)
		}
		// The fence: the old login's password becomes one only the Job holds, and its open
		// sessions end. Made again until the Job is, so that nothing the tenant controller did
		// meanwhile leaves the applications a way in.
		if err := r.onServer(ctx, s.From.Server, func(ctx context.Context, p database.Provisioner) error {
			acct := database.Account{Database: src.Database, Username: src.Username, Password: src.Password, Owner: s.TenantUID}
			if err := p.Ensure(ctx, acct); err != nil {
				return err
			}
			return p.Disconnect(ctx, acct)
		}); err != nil {
			return 0, fmt.Errorf("fencing the database's sessions on DatabaseServer %s: %w", s.From.Server, err)
		}
		if s.FencedAt == nil {
			now := metav1.NewTime(r.Clock.Now())
			s.FencedAt = &now
		}
		if err := backupjobs.Create(ctx, r.Client, r.Config.Backups, s.Job, plan, owner, []string{s.From.Server, s.To.Server}); err != nil {
			return 0, err
		}
		return 0, nil
	}
	done, failed, msg, err := backupjobs.Ended(ctx, r.Client, r.APIReader, r.Config.Backups.Namespace, s.Job)
	switch {
	case err != nil:
		return 0, err
	case !done:
		return 0, nil
	case failed:
		return 0, refuse(tenancyv1alpha1.ReasonMoveFailed, "%s", msg)
	}
	if _, spec, ok := specDatabase(t, m.Spec.Database); !ok || (spec.Server != "" && spec.Server != m.Spec.Server) {
		return 0, refuse(tenancyv1alpha1.ReasonMoveFailed,
			"tenant %s's spec no longer asks for database %s on DatabaseServer %s (it was removed, or placed on another server, during the move)", t.Name, m.Spec.Database, m.Spec.Server)
	}
	// The fence held if the old login still takes the fence's password: a password set on it
	// meanwhile (by hand, or by anything that converges logins) may have let writes in that the
	// copy does not hold.
	if err := backup.CanLogin(ctx, src); err != nil {
		if backup.LoginRefused(err) {
			return 0, refuse(tenancyv1alpha1.ReasonMoveFailed,
				"the fence did not hold: the old login's password was changed while the copy ran, so the copy may miss what was written since")
		}
		return 0, fmt.Errorf("checking the fence on DatabaseServer %s: %w", s.From.Server, err)
	}
	// The switch: the store's record names the new server, with the new login's password. The
	// tenant controller publishes it from there.
	if err := r.switchRecord(ctx, t, m, s, dst.Password); err != nil {
		return 0, err
	}
	s.Phase = tenancyv1alpha1.MoveSwitching
	r.Recorder.Eventf(m, t, corev1.EventTypeNormal, tenancyv1alpha1.ReasonMoving, "Switch",
		"the copy of database %s on DatabaseServer %s holds every row of the original: switching tenant %s to it", m.Spec.Database, s.To.Server, t.Name)
	return 0, nil
}

// jobMade reports whether the copy's Job exists: from the cache, confirmed by the API server
// when the cache does not show it (one just made). A Job deleted before it ended (by hand) is
// made again, fence and all.
func (r *Reconciler) jobMade(ctx context.Context, s *tenancyv1alpha1.DatabaseMoveStatus) (bool, error) {
	key := client.ObjectKey{Namespace: r.Config.Backups.Namespace, Name: s.Job}
	err := r.Client.Get(ctx, key, &batchv1.Job{})
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, &batchv1.Job{})
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// planMade reports whether the move's plan Secret exists: its first side effect, made before the
// target's database and the fence.
func (r *Reconciler) planMade(ctx context.Context, s *tenancyv1alpha1.DatabaseMoveStatus) (bool, error) {
	if s.Job == "" {
		return false, nil
	}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Config.Backups.Namespace, Name: s.Job}, &corev1.Secret{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// recordSwitched reports whether the tenant's stored record of the database names the move's
// target already: the switch is made, and the new database is the tenant's.
func (r *Reconciler) recordSwitched(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (bool, error) {
	if s.To == nil {
		return false, nil
	}
	ns := r.Config.NamespaceName(m.Spec.Tenant)
	if t, err := r.tenantOf(ctx, m, s); err != nil {
		return false, err
	} else if t != nil {
		ns = r.namespaceOf(t)
	}
	rec, err := r.Secrets.Load(ctx, ns, tenancyv1alpha1.DatabaseSecretName(m.Spec.Database))
	if errors.Is(err, secret.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c, ok, err := resources.ParseStoredCredentials(rec, m.Spec.Database)
	if err != nil || !ok {
		return false, nil
	}
	return c.Server == s.To.Server && c.Account.Database == s.To.Database && c.Account.Username == s.To.Username, nil
}

// plan reads the copy's plan back from its Secret (made is then true), or makes one (new
// passwords for the fence and the target's login) when there is none yet.
func (r *Reconciler) plan(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (backup.Plan, bool, error) {
	sec := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Config.Backups.Namespace, Name: s.Job}, sec)
	if err == nil {
		if !metav1.IsControlledBy(sec, m) {
			return backup.Plan{}, false, refuse(tenancyv1alpha1.ReasonMoveFailed, "Secret %s/%s exists and is not this move's", sec.Namespace, sec.Name)
		}
		var p backup.Plan
		if err := json.Unmarshal(sec.Data[backupjobs.StepKey(backup.OpCopy)], &p); err != nil || len(p.Databases) != 1 || len(p.CopyTo) != 1 {
			return backup.Plan{}, false, fmt.Errorf("the copy's plan in Secret %s/%s cannot be read", sec.Namespace, sec.Name)
		}
		return p, true, nil
	}
	if !apierrors.IsNotFound(err) {
		return backup.Plan{}, false, err
	}
	if s.FencedAt != nil {
		// The plan was deleted while the old login held its password (by hand): the fence's
		// password is lost, and is given anew, as is the target's.
		log.FromContext(ctx).Info("the copy's plan is gone; fencing with a new one", "move", m.Name)
	}
	from, err := r.target(ctx, s.From, s.Engine)
	if err != nil {
		return backup.Plan{}, false, err
	}
	to, err := r.target(ctx, s.To, s.Engine)
	if err != nil {
		return backup.Plan{}, false, err
	}
	return backup.Plan{
		Operation: backup.OpCopy,
		Tenant:    m.Spec.Tenant, TenantUID: s.TenantUID,
		Databases: []backup.Database{{Name: m.Spec.Database, Target: from}},
		CopyTo:    []backup.Database{{Name: m.Spec.Database, Target: to}},
	}, false, nil
}

// target is a copy's end: where the server is, and the login with a new password.
func (r *Reconciler) target(ctx context.Context, at *tenancyv1alpha1.DatabaseLocation, engine tenancyv1alpha1.DatabaseEngine) (backup.Target, error) {
	ds := &tenancyv1alpha1.DatabaseServer{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: at.Server}, ds); err != nil {
		return backup.Target{}, fmt.Errorf("reading DatabaseServer %s: %w", at.Server, err)
	}
	password, err := database.GeneratePassword()
	if err != nil {
		return backup.Target{}, err
	}
	srv := database.Address(ds)
	return backup.Target{Engine: database.Engine(engine), Host: srv.Host, Port: srv.Port, TLS: srv.TLS, CABundle: srv.CABundle,
		Database: at.Database, Username: at.Username, Password: password}, nil
}

// onServer runs fn with the server's provisioner, within the databases' statement timeout.
func (r *Reconciler) onServer(ctx context.Context, server string, fn func(context.Context, database.Provisioner) error) error {
	p, err := r.Databases.Provisioner(ctx, server)
	if err != nil {
		return err
	}
	sqlCtx, cancel := context.WithTimeout(ctx, r.Config.Databases.Timeout.Duration)
	defer cancel()
	return fn(sqlCtx, p)
}

// switchRecord rewrites the tenant's stored record of the database to name the new server,
// database, login and password, keeping its rotation. A record that names the new server
// already is one this step wrote before it was killed.
func (r *Reconciler) switchRecord(ctx context.Context, t *tenancyv1alpha1.Tenant, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus, password string) error {
	ns := r.namespaceOf(t)
	rec, err := r.Secrets.Load(ctx, ns, tenancyv1alpha1.DatabaseSecretName(m.Spec.Database))
	if err != nil {
		if errors.Is(err, secret.ErrNotFound) {
			return refuse(tenancyv1alpha1.ReasonMoveFailed, "the secret store holds no record of tenant %s's database %s", t.Name, m.Spec.Database)
		}
		return err
	}
	c, ok, err := resources.ParseStoredCredentials(rec, m.Spec.Database)
	if err != nil || !ok {
		return refuse(tenancyv1alpha1.ReasonMoveFailed, "the stored record of tenant %s's database %s cannot be read", t.Name, m.Spec.Database)
	}
	if c.UID != "" && c.UID != s.TenantUID {
		return refuse(tenancyv1alpha1.ReasonMoveFailed, "the stored record of database %s is another tenant's", m.Spec.Database)
	}
	c.Server, c.UID = s.To.Server, s.TenantUID
	c.Account = database.Account{Database: s.To.Database, Username: s.To.Username, Password: password, Owner: s.TenantUID}
	return r.Secrets.Save(ctx, resources.StoredCredentials(ns, c))
}

// switching waits for the tenant's status to name the new server: its Secret was written
// before its status, so the cut-over ends there.
func (r *Reconciler) switching(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (time.Duration, error) {
	t, err := r.tenantOf(ctx, m, s)
	if err != nil || t == nil {
		// A tenant deleted (not Purged) keeps its data: the new record and the old copy both.
		return waitAgain, err
	}
	if t.Spec.State == tenancyv1alpha1.StatePurged {
		// Its purge drops the database the store names; the old copy is the move's to drop.
		s.Phase = tenancyv1alpha1.MoveDropping
		return 0, nil
	}
	i := slices.IndexFunc(t.Status.Databases, func(d tenancyv1alpha1.DatabaseStatus) bool { return d.Name == m.Spec.Database })
	if i < 0 || t.Status.Databases[i].Server != s.To.Server {
		return 0, nil
	}
	now := metav1.NewTime(r.Clock.Now())
	s.SwitchedAt = &now
	if s.FencedAt != nil {
		s.Downtime = &metav1.Duration{Duration: now.Sub(s.FencedAt.Time)}
	}
	if err := backupjobs.DeletePlan(ctx, r.Client, r.Config.Backups.Namespace, s.Job, m); err != nil {
		return 0, err
	}
	s.Phase = tenancyv1alpha1.MoveSwitched
	moveDowntime.WithLabelValues(string(s.Engine)).Observe(s.Downtime.Duration.Seconds())
	r.Recorder.Eventf(m, t, corev1.EventTypeNormal, tenancyv1alpha1.ReasonMoveUnconfirmed, "Switch",
		"tenant %s's database %s runs on DatabaseServer %s; the cut-over took %s. The old database %q stays on %s until the move is confirmed",
		t.Name, m.Spec.Database, s.To.Server, downtime(s), s.From.Database, s.From.Server)
	return 0, nil
}

// switched waits for the confirmation. A tenant Purged meanwhile has its old copy dropped with
// the rest of its data.
func (r *Reconciler) switched(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (time.Duration, error) {
	if m.Spec.Confirmed {
		s.Phase = tenancyv1alpha1.MoveDropping
		return 0, nil
	}
	t, err := r.tenantOf(ctx, m, s)
	if err != nil {
		return 0, err
	}
	if t != nil && t.Spec.State == tenancyv1alpha1.StatePurged {
		s.Phase = tenancyv1alpha1.MoveDropping
	}
	return 0, nil
}

// dropping drops the old database and its login, once confirmed.
func (r *Reconciler) dropping(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (time.Duration, error) {
	err := r.onServer(ctx, s.From.Server, func(ctx context.Context, p database.Provisioner) error {
		return p.Drop(ctx, database.Account{Database: s.From.Database, Username: s.From.Username, Owner: s.TenantUID})
	})
	var foreign *database.ForeignError
	switch {
	case errors.As(err, &foreign):
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonForeignData, "Drop",
			"the old database %q on DatabaseServer %s is not dropped: %v", s.From.Database, s.From.Server, err)
	case err != nil:
		return 0, fmt.Errorf("dropping the old database on DatabaseServer %s: %w", s.From.Server, err)
	default:
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDatabasesDropped, "Drop",
			"dropped the old database %q and login %q on DatabaseServer %s", s.From.Database, s.From.Username, s.From.Server)
	}
	now := metav1.NewTime(r.Clock.Now())
	s.Phase, s.CompletionTime = tenancyv1alpha1.MoveSucceeded, &now
	return 0, nil
}

// rollingBack undoes a move that has not switched: the old login is given back the password of
// the tenant's record, which the applications hold, and the copy on the target server is dropped
// (the old database is the tenant's, untouched but for its fence). A move that made nothing (no
// plan Secret, no fence: refused before its first side effect) touches nothing, for what it
// would undo may be another move's. A tenant gone or Purged is not given anything back: its
// purge drops (or has dropped) the old database, which a password given back would make again,
// empty. A switch already in the store is never rolled back: the move goes on to Switching.
func (r *Reconciler) rollingBack(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) (time.Duration, error) {
	if switched, err := r.recordSwitched(ctx, m, s); err != nil || switched {
		if switched {
			s.Phase = tenancyv1alpha1.MoveSwitching
			r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonMoving, "Switch",
				"not rolled back: the secret store names DatabaseServer %s already, whose copy is the tenant's database now", s.To.Server)
		}
		return 0, err
	}
	acted := s.FencedAt != nil
	if !acted {
		made, err := r.planMade(ctx, s)
		if err != nil {
			return 0, err
		}
		acted = made
	}
	if acted && s.From != nil {
		// The tenant first: its applications get their database back even while the target
		// server (whose outage may be why the copy failed) cannot drop the copy yet.
		if err := r.unfence(ctx, m, s); err != nil {
			return 0, err
		}
	}
	if acted && s.To != nil {
		if err := r.dropCopy(ctx, m, s); err != nil {
			return 0, err
		}
	}
	if err := backupjobs.DeletePlan(ctx, r.Client, r.Config.Backups.Namespace, s.Job, m); err != nil {
		return 0, err
	}
	now := metav1.NewTime(r.Clock.Now())
	s.Phase, s.CompletionTime = tenancyv1alpha1.MoveFailed, &now
	where := "where it was"
	if s.From != nil {
		where = "on DatabaseServer " + s.From.Server
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonMoveFailed, "RollBack",
		"rolled back: database %s of tenant %s stays %s", m.Spec.Database, m.Spec.Tenant, where)
	return 0, nil
}

// dropCopy drops the copy on the target server. A target server deleted meanwhile holds nothing
// Landlord can reach: it is left, and said so.
func (r *Reconciler) dropCopy(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) error {
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.To.Server}, &tenancyv1alpha1.DatabaseServer{}); apierrors.IsNotFound(err) {
		r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonDataAbandoned, "RollBack",
			"DatabaseServer %s is gone: the copy %q, if it was made there, is not dropped", s.To.Server, s.To.Database)
		return nil
	}
	err := r.onServer(ctx, s.To.Server, func(ctx context.Context, p database.Provisioner) error {
		return p.Drop(ctx, database.Account{Database: s.To.Database, Username: s.To.Username, Owner: s.TenantUID})
	})
	var foreign *database.ForeignError
	if err != nil && !errors.As(err, &foreign) {
		return fmt.Errorf("dropping the copy on DatabaseServer %s: %w", s.To.Server, err)
	}
	return nil
}

// unfence gives the old login its password back, from the tenant's stored record, while that
// record still names the old server and the tenant (read from the API server) is there and not
// Purged.
func (r *Reconciler) unfence(ctx context.Context, m *tenancyv1alpha1.DatabaseMove, s *tenancyv1alpha1.DatabaseMoveStatus) error {
	t := &tenancyv1alpha1.Tenant{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: m.Spec.Tenant}, t); err != nil {
		return client.IgnoreNotFound(err)
	}
	if string(t.UID) != s.TenantUID || t.Spec.State == tenancyv1alpha1.StatePurged || !t.DeletionTimestamp.IsZero() {
		return nil
	}
	rec, err := r.Secrets.Load(ctx, r.namespaceOf(t), tenancyv1alpha1.DatabaseSecretName(m.Spec.Database))
	if errors.Is(err, secret.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	c, ok, err := resources.ParseStoredCredentials(rec, m.Spec.Database)
	if err != nil || !ok || c.Server != s.From.Server || c.Account.Database != s.From.Database || c.Account.Username != s.From.Username {
		return nil
	}
	return r.onServer(ctx, s.From.Server, func(ctx context.Context, p database.Provisioner) error {
		held, err := p.Holds(ctx, database.Account{Database: s.From.Database, Username: s.From.Username})
		if err != nil || !held {
			return err
		}
		return p.Ensure(ctx, database.Account{Database: s.From.Database, Username: s.From.Username, Password: c.Account.Password, Owner: s.TenantUID})
	})
}
