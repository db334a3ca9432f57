package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// TenantDatabaseServerIndex indexes tenants by the DatabaseServers holding their databases, so
// placement counts a server's tenants without scanning them all.
const TenantDatabaseServerIndex = "status.databases.server"

// TenantDatabaseServers is the index function of TenantDatabaseServerIndex.
func TenantDatabaseServers(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range t.Status.Databases {
		if !seen[d.Server] {
			seen[d.Server] = true
			out = append(out, d.Server)
		}
	}
	return out
}

// dbEntry is one database the tenant spec asks for.
type dbEntry struct {
	engine tenancyv1alpha1.DatabaseEngine
	tenancyv1alpha1.Database
}

func (e dbEntry) String() string { return string(e.engine) + " database " + e.Name }

func desiredDatabases(t *tenancyv1alpha1.Tenant) []dbEntry {
	var out []dbEntry
	for _, d := range t.Spec.Databases.Postgres {
		out = append(out, dbEntry{tenancyv1alpha1.EnginePostgres, d})
	}
	for _, d := range t.Spec.Databases.MySQL {
		out = append(out, dbEntry{tenancyv1alpha1.EngineMySQL, d})
	}
	return out
}

type dbKey struct {
	engine tenancyv1alpha1.DatabaseEngine
	name   string
}

// ensureDatabases converges the tenant's databases and returns the status entries of those in
// place. A database whose credentials Secret is intact and whose status records it in place
// costs nothing but a cache-compared apply: no store read, no login to its server. Everything
// else takes the slow path: credentials from the store (created there first for a new
// database), the database ensured on its server, then the Secret written.
func (r *TenantReconciler) ensureDatabases(ctx context.Context, t *tenancyv1alpha1.Tenant) (outcome, []tenancyv1alpha1.DatabaseStatus) {
	nsName := r.Config.NamespaceName(t.Name)
	prev := map[dbKey]*tenancyv1alpha1.DatabaseStatus{}
	for i := range t.Status.Databases {
		d := &t.Status.Databases[i]
		prev[dbKey{d.Engine, d.Name}] = d
	}

	var (
		statuses []tenancyv1alpha1.DatabaseStatus
		failed   []outcome
	)
	desired := desiredDatabases(t)
	for _, e := range desired {
		key := dbKey{e.engine, e.Name}
		st, res := r.ensureDatabase(ctx, t, nsName, e, prev[key])
		delete(prev, key)
		if st != nil {
			statuses = append(statuses, *st)
		}
		if !res.done {
			failed = append(failed, res)
		}
	}
	// What is left in prev was removed from the spec: its Secret goes, its data stays.
	for _, st := range prev {
		if err := r.releaseDatabase(ctx, t, nsName, st); err != nil {
			statuses = append(statuses, *st)
			failed = append(failed, outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err})
		}
	}
	sort.Slice(statuses, func(i, j int) bool {
		if statuses[i].Engine != statuses[j].Engine {
			return statuses[i].Engine < statuses[j].Engine
		}
		return statuses[i].Name < statuses[j].Name
	})

	if len(failed) == 0 {
		return outcome{done: true, reason: tenancyv1alpha1.ReasonSucceeded, message: fmt.Sprintf("%d databases ready", len(desired))}, statuses
	}
	// A stall is reported ahead of progress, and every error is retried.
	res := failed[0]
	var errs []error
	for _, f := range failed {
		if f.stalled && !res.stalled {
			res = f
		}
		errs = append(errs, f.err)
	}
	res.err = errors.Join(errs...)
	if res.stalled {
		// Another database may be waiting on a retry; the stall's own requeue covers it.
		res.err = nil
	}
	return res, statuses
}

// ensureDatabase converges one database and returns its status entry (the previous one when it
// could not be brought in place, so a placement is never forgotten).
func (r *TenantReconciler) ensureDatabase(ctx context.Context, t *tenancyv1alpha1.Tenant, nsName string, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus) (*tenancyv1alpha1.DatabaseStatus, outcome) {
	if prev != nil && e.Server != "" && e.Server != prev.Server {
		return prev, outcome{stalled: true, reason: tenancyv1alpha1.ReasonDatabaseServerConflict,
			message: fmt.Sprintf("%s is on DatabaseServer %s, not %s: databases are never moved", e, prev.Server, e.Server)}
	}
	if prev != nil && (e.Rotation == "" || e.Rotation == prev.Rotation) {
		existing := &corev1.Secret{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: nsName, Name: resources.DatabaseSecretName(e.Name)}, existing)
		switch {
		case err == nil && metav1.IsControlledBy(existing, t):
			c, ok := resources.CredentialsFromSecret(existing, e.Name)
			if ok && c.Engine == e.engine && c.Server == prev.Server &&
				c.Account.Database == prev.Database && c.Account.Username == prev.Username {
				return r.publishCredentials(ctx, t, nsName, c, prev)
			}
		case err != nil && !apierrors.IsNotFound(err):
			return prev, outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
		}
	}

	c, rotated, res := r.credentials(ctx, t, nsName, e, prev)
	if !res.done {
		return prev, res
	}
	prov, err := r.Databases.Provisioner(ctx, c.Server)
	if err != nil {
		return prev, r.serverFailed(t, e, c.Server, err)
	}
	sqlCtx, cancel := context.WithTimeout(ctx, r.Config.Databases.Timeout.Duration)
	defer cancel()
	if err := prov.Ensure(sqlCtx, c.Account); err != nil {
		return prev, r.serverFailed(t, e, c.Server, err)
	}
	if rotated {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "Rotated", "Rotate",
			"new password for %s on DatabaseServer %s (rotation %q)", e, c.Server, c.Rotation)
	} else if prev == nil {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "Provisioned", "Provision",
			"%s is in place on DatabaseServer %s as %s", e, c.Server, c.Account.Database)
	}
	return r.publishCredentials(ctx, t, nsName, c, prev)
}

// credentials returns a database's credentials from the store, creating them there for a new
// database (after choosing its server) and replacing the password when a rotation is requested.
// The store is written before the server, so no database ever exists that the store does not
// know about.
func (r *TenantReconciler) credentials(ctx context.Context, t *tenancyv1alpha1.Tenant, nsName string, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus) (resources.DatabaseCredentials, bool, outcome) {
	ok := outcome{done: true}
	name := resources.DatabaseSecretName(e.Name)
	stored, err := r.Secrets.Load(ctx, nsName, name)
	switch {
	case err == nil:
		c, isDB, err := resources.ParseStoredCredentials(stored, e.Name)
		switch {
		case !isDB || err != nil:
			return c, false, outcome{stalled: true, reason: tenancyv1alpha1.ReasonInvalidObject,
				message: fmt.Sprintf("the secret store holds %s/%s but not as complete database credentials", nsName, name)}
		case c.Engine != e.engine:
			return c, false, outcome{stalled: true, reason: tenancyv1alpha1.ReasonDatabaseServerConflict,
				message: fmt.Sprintf("database %s already exists as a %s database; a database cannot change engine", e.Name, c.Engine)}
		case e.Server != "" && e.Server != c.Server:
			return c, false, outcome{stalled: true, reason: tenancyv1alpha1.ReasonDatabaseServerConflict,
				message: fmt.Sprintf("%s is on DatabaseServer %s, not %s: databases are never moved", e, c.Server, e.Server)}
		}
		if e.Rotation == "" || e.Rotation == c.Rotation {
			return c, false, ok
		}
		password, err := database.GeneratePassword()
		if err != nil {
			return c, false, outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
		}
		c.Account.Password, c.Rotation = password, e.Rotation
		if err := r.Secrets.Save(ctx, resources.StoredCredentials(nsName, c)); err != nil {
			return c, false, storeFailed(e, err)
		}
		return c, true, ok
	case errors.Is(err, secret.ErrNotFound):
	default:
		return resources.DatabaseCredentials{}, false, storeFailed(e, err)
	}

	server := e.Server
	if server == "" && prev != nil {
		server = prev.Server
	}
	if server == "" {
		var res outcome
		if server, res = r.placeDatabase(ctx, t, e); !res.done {
			return resources.DatabaseCredentials{}, false, res
		}
	}
	dbName, user := database.Names(database.Engine(e.engine), t.Name, e.Name)
	password, err := database.GeneratePassword()
	if err != nil {
		return resources.DatabaseCredentials{}, false, outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
	}
	c := resources.DatabaseCredentials{
		Engine: e.engine, Name: e.Name, Server: server, Rotation: e.Rotation,
		Account: database.Account{Database: dbName, Username: user, Password: password},
	}
	if err := r.Secrets.Save(ctx, resources.StoredCredentials(nsName, c)); err != nil {
		return c, false, storeFailed(e, err)
	}
	return c, false, ok
}

func storeFailed(e dbEntry, err error) outcome {
	msg := fmt.Sprintf("%s: secret store: %v", e, err)
	return outcome{reason: tenancyv1alpha1.ReasonStoreUnavailable, message: msg, err: errors.New(msg)}
}

// serverFailed reports a server that is down or refused. The drivers' errors name the server
// and the statement's failure, never a password.
func (r *TenantReconciler) serverFailed(t *tenancyv1alpha1.Tenant, e dbEntry, server string, err error) outcome {
	msg := fmt.Sprintf("%s on DatabaseServer %s: %v", e, server, err)
	if errors.Is(err, errServerConfig) {
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonDatabaseUnavailable, "Provision", "%s", msg)
		return outcome{stalled: true, reason: tenancyv1alpha1.ReasonDatabaseUnavailable, message: msg}
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonDatabaseUnavailable, "Provision", "%s", msg)
	return outcome{reason: tenancyv1alpha1.ReasonDatabaseUnavailable, message: msg, err: errors.New(msg)}
}

// placeDatabase chooses a server for a new database: one already holding the tenant's databases
// of the engine if any, else the Ready server of the engine with the fewest tenants and room
// for one more. Nothing is placed when none qualifies; a server becoming Ready re-triggers.
func (r *TenantReconciler) placeDatabase(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry) (string, outcome) {
	for _, d := range t.Status.Databases {
		if d.Engine == e.engine {
			return d.Server, outcome{done: true}
		}
	}
	servers := &tenancyv1alpha1.DatabaseServerList{}
	if err := r.Client.List(ctx, servers); err != nil {
		return "", outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
	}
	best, bestCount := "", int32(-1)
	for i := range servers.Items {
		ds := &servers.Items[i]
		if ds.Spec.Engine != e.engine || !ds.DeletionTimestamp.IsZero() ||
			!meta.IsStatusConditionTrue(ds.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			continue
		}
		n, err := r.tenantsOn(ctx, ds.Name)
		if err != nil {
			return "", outcome{reason: tenancyv1alpha1.ReasonApplyFailed, message: err.Error(), err: err}
		}
		if ds.Spec.MaxTenants != nil && n >= *ds.Spec.MaxTenants {
			continue
		}
		if bestCount < 0 || n < bestCount || (n == bestCount && ds.Name < best) {
			best, bestCount = ds.Name, n
		}
	}
	if best == "" {
		return "", progressing(tenancyv1alpha1.ReasonNoDatabaseServer,
			"%s: no Ready %s DatabaseServer has room for another tenant", e, e.engine)
	}
	return best, outcome{done: true}
}

// tenantsOn counts the tenants with databases on a server, from the cache index.
func (r *TenantReconciler) tenantsOn(ctx context.Context, server string) (int32, error) {
	return countTenantsOn(ctx, r.Client, server)
}

func countTenantsOn(ctx context.Context, c client.Reader, server string) (int32, error) {
	list := &tenancyv1alpha1.TenantList{}
	if err := c.List(ctx, list, client.MatchingFields{TenantDatabaseServerIndex: server}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	return int32(len(list.Items)), nil
}

// publishCredentials writes the credentials Secret into the tenant namespace (when it differs
// from the cached one) and returns the database's status entry.
func (r *TenantReconciler) publishCredentials(ctx context.Context, t *tenancyv1alpha1.Tenant, nsName string, c resources.DatabaseCredentials, prev *tenancyv1alpha1.DatabaseStatus) (*tenancyv1alpha1.DatabaseStatus, outcome) {
	ds, err := r.Databases.Server(ctx, c.Server)
	if err != nil {
		e := dbEntry{engine: c.Engine, Database: tenancyv1alpha1.Database{Name: c.Name}}
		return prev, r.serverFailed(t, e, c.Server, err)
	}
	s := resources.DatabaseSecret(t, nsName, c, Address(ds))
	applier := &apply.Applier{Client: r.Client, APIReader: r.APIReader, Memo: r.Applied}
	if _, err := applier.Apply(ctx, s); err != nil {
		return prev, r.applyFailed(t, s, err)
	}
	return &tenancyv1alpha1.DatabaseStatus{
		Engine: c.Engine, Name: c.Name, Server: c.Server,
		Database: c.Account.Database, Username: c.Account.Username,
		SecretName: s.Name, Rotation: c.Rotation,
	}, outcome{done: true}
}

// releaseDatabase handles a database removed from the spec: the tenant loses its Secret, the
// data stays on the server (and its credentials in the store) until the tenant is Purged.
func (r *TenantReconciler) releaseDatabase(ctx context.Context, t *tenancyv1alpha1.Tenant, nsName string, st *tenancyv1alpha1.DatabaseStatus) error {
	s := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: nsName, Name: st.SecretName}, s)
	switch {
	case err == nil && metav1.IsControlledBy(s, t):
		if err := r.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing secret %s/%s: %w", nsName, s.Name, err)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDatabasesKept, "Release",
		"%s database %s was removed from the spec; database %s is kept on DatabaseServer %s until the tenant is Purged",
		st.Engine, st.Name, st.Database, st.Server)
	return nil
}

// keptDatabases reports an Archived tenant's databases, which are kept untouched.
func keptDatabases(t *tenancyv1alpha1.Tenant) outcome {
	return outcome{done: true, reason: tenancyv1alpha1.ReasonDatabasesKept,
		message: fmt.Sprintf("%d databases and their credentials are kept while the tenant is %s", len(t.Status.Databases), t.Spec.State)}
}

// purgeDatabases drops every database the store knows the tenant had (the store is written
// before any database is created, so it knows them all), then forgets the tenant's stored
// secrets. Only a Purged tenant gets here.
func (r *TenantReconciler) purgeDatabases(ctx context.Context, t *tenancyv1alpha1.Tenant) outcome {
	if c := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.DatabasesReadyCondition); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == tenancyv1alpha1.ReasonDatabasesDropped && c.ObservedGeneration == t.Generation {
		return outcome{done: true, reason: c.Reason, message: c.Message}
	}
	nsName := r.Config.NamespaceName(t.Name)
	stored, err := r.Secrets.LoadAll(ctx, nsName)
	if err != nil {
		msg := fmt.Sprintf("listing stored credentials: %v", err)
		return outcome{reason: tenancyv1alpha1.ReasonStoreUnavailable, message: msg, err: errors.New(msg)}
	}
	var dropped []string
	for _, s := range stored {
		name := strings.TrimPrefix(s.Name, "db-")
		c, isDB, err := resources.ParseStoredCredentials(s, name)
		if !isDB {
			continue
		}
		e := dbEntry{engine: c.Engine, Database: tenancyv1alpha1.Database{Name: name}}
		if err != nil {
			return outcome{stalled: true, reason: tenancyv1alpha1.ReasonInvalidObject,
				message: fmt.Sprintf("%s: %v; drop it by hand and delete it from the store", e, err)}
		}
		prov, err := r.Databases.Provisioner(ctx, c.Server)
		if err != nil {
			return r.serverFailed(t, e, c.Server, err)
		}
		sqlCtx, cancel := context.WithTimeout(ctx, r.Config.Databases.Timeout.Duration)
		err = prov.Drop(sqlCtx, c.Account.Database, c.Account.Username)
		cancel()
		if err != nil {
			return r.serverFailed(t, e, c.Server, err)
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDatabasesDropped, "Purge",
			"dropped %s (database %s) on DatabaseServer %s", e, c.Account.Database, c.Server)
		dropped = append(dropped, e.String())
	}
	if err := r.Secrets.Forget(ctx, nsName); err != nil {
		msg := fmt.Sprintf("deleting stored credentials: %v", err)
		return outcome{reason: tenancyv1alpha1.ReasonStoreUnavailable, message: msg, err: errors.New(msg)}
	}
	msg := "the tenant is Purged: its databases, logins and stored credentials are deleted"
	if len(dropped) > 0 {
		msg += " (" + strings.Join(dropped, ", ") + ")"
	}
	return outcome{done: true, reason: tenancyv1alpha1.ReasonDatabasesDropped, message: msg}
}

// reportKeptDatabases records, on deletion of a tenant that is not Purged, that its databases
// stay where they are.
func (r *TenantReconciler) reportKeptDatabases(t *tenancyv1alpha1.Tenant) {
	if len(t.Status.Databases) == 0 {
		return
	}
	var kept []string
	for _, d := range t.Status.Databases {
		kept = append(kept, fmt.Sprintf("%s database %s on DatabaseServer %s", d.Engine, d.Database, d.Server))
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDatabasesKept, "Delete",
		"the tenant was deleted without being Purged; kept: %s", strings.Join(kept, ", "))
}
