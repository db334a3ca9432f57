package tenant

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"k8s.io/utils/ptr"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
)

// dbEntry is one database the tenant spec asks for.
type dbEntry struct {
	engine tenancyv1alpha1.DatabaseEngine
	tenancyv1alpha1.Database
}

func (e dbEntry) String() string { return string(e.engine) + " database " + e.Name }

// desiredDatabases lists the databases of every engine the spec names. An engine added here is
// added to indexes.TenantDatabasesNotReady too, or a tenant waiting for a server of that
// engine is not woken when one appears.
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

// compareDBKeys orders databases by engine, then name, so that a purge works through them, and
// reports the first it stops at, in the same order on every reconcile.
func compareDBKeys(a, b dbKey) int {
	return cmp.Or(strings.Compare(string(a.engine), string(b.engine)), strings.Compare(a.name, b.name))
}

// placedDatabases indexes the databases the tenant's status records in place.
func placedDatabases(t *tenancyv1alpha1.Tenant) map[dbKey]*tenancyv1alpha1.DatabaseStatus {
	placed := make(map[dbKey]*tenancyv1alpha1.DatabaseStatus, len(t.Status.Databases))
	for i := range t.Status.Databases {
		d := &t.Status.Databases[i]
		placed[dbKey{d.Engine, d.Name}] = d
	}
	return placed
}

// ensureDatabases converges the tenant's databases, records those in place in the status
// draft, and lets the tenant's pods reach the servers they are on (allowDatabaseEgress). A database whose credentials Secret is intact and whose status records it in place
// costs nothing but a cache-compared apply: no store read, no login to its server, unless a
// reconcile was asked for (tenantScope.verify), which checks it on its server. Everything
// else takes the slow path: credentials from the store (created there first for a new
// database), the database ensured on its server, then the Secret written.
func (r *Reconciler) ensureDatabases(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	prev := placedDatabases(t)

	var (
		statuses []tenancyv1alpha1.DatabaseStatus
		failures []outcome
	)
	desired := desiredDatabases(t)
	for _, e := range desired {
		key := dbKey{e.engine, e.Name}
		st, res := r.ensureDatabase(ctx, s, e, prev[key])
		delete(prev, key)
		if st != nil {
			statuses = append(statuses, *st)
		}
		if !res.done {
			failures = append(failures, res)
		}
	}
	// What is left in prev was removed from the spec: its Secret goes, its data stays.
	for _, st := range prev {
		if err := r.releaseDatabase(ctx, s, st); err != nil {
			statuses = append(statuses, *st)
			failures = append(failures, failed(tenancyv1alpha1.ReasonApplyFailed, err))
		}
	}
	slices.SortFunc(statuses, func(a, b tenancyv1alpha1.DatabaseStatus) int {
		return cmp.Or(cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.Name, b.Name))
	})
	s.status.Databases = statuses
	if res := r.allowDatabaseEgress(ctx, s); !res.done {
		failures = append(failures, res)
	}

	if len(failures) == 0 {
		return done(tenancyv1alpha1.ReasonSucceeded, "%d databases ready", len(desired))
	}
	// A stall is reported ahead of progress, and every error is retried.
	res := failures[0]
	var errs []error
	for _, f := range failures {
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
	return res
}

// ensureDatabase converges one database and returns its status entry (the previous one when it
// could not be brought in place, so a placement is never forgotten).
func (r *Reconciler) ensureDatabase(ctx context.Context, s *tenantScope, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus) (*tenancyv1alpha1.DatabaseStatus, outcome) {
	t := s.tenant
	if prev != nil && e.Server != "" && e.Server != prev.Server {
		return prev, stalled(tenancyv1alpha1.ReasonDatabaseServerConflict,
			"%s is on DatabaseServer %s, not %s: databases are never moved", e, prev.Server, e.Server)
	}
	if prev != nil && !s.verify && (e.Rotation == "" || e.Rotation == prev.Rotation) {
		c, ok, err := r.intactCredentials(ctx, s, e, prev)
		if err != nil {
			return prev, failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		if ok {
			ds, err := r.Databases.Server(ctx, c.Server)
			if err != nil {
				return prev, r.serverFailed(t, e, c.Server, err)
			}
			// A limit the platform set (spec.connectionLimit) reaches the logins in place, rather
			// than at their next rotation: the limit alone changes, never the password. A derived
			// share is given to new logins (and at rotations): lowering every login of a busy
			// server at once, as tenants join it, would refuse their applications sessions they
			// hold today; ConnectionsOvercommitted says when the logins may hold too many.
			limit := prev.ConnectionLimit
			if want := ds.Spec.ConnectionLimit; want != nil && (limit == nil || *limit != *want) {
				acct := c.Account
				acct.Owner, acct.Adopt = string(t.UID), adoptedUID(t)
				if res := r.limitOnServer(ctx, t, e, c.Server, acct); !res.done {
					return prev, res
				}
				limit = ptr.To(*want)
			}
			return r.publishCredentials(ctx, s, c, ds, prev, limit)
		}
	}

	c, rotated, res := r.credentials(ctx, s, e, prev)
	if !res.done {
		return prev, res
	}
	// Read before the provisioner is: should the limit move in between, what is recorded is the
	// older one, and the move, which re-triggers the tenant, is applied then.
	ds, err := r.Databases.Server(ctx, c.Server)
	if err != nil {
		return prev, r.serverFailed(t, e, c.Server, err)
	}
	limit := ptr.To(database.ConnectionLimit(ds))
	if res := r.ensureOnServer(ctx, t, e, c); !res.done {
		return prev, res
	}
	if res := r.recordOwner(ctx, s, e, &c); !res.done {
		return prev, res
	}
	if rotated {
		databaseLog(ctx, t, e, c).Info("database password rotated", "rotation", c.Rotation)
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonRotated, "Rotate",
			"new password for %s on DatabaseServer %s (rotation %q)", e, c.Server, c.Rotation)
	} else if prev == nil {
		databaseLog(ctx, t, e, c).Info("database provisioned")
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonProvisioned, "Provision",
			"%s is in place on DatabaseServer %s as %s", e, c.Server, c.Account.Database)
	}
	return r.publishCredentials(ctx, s, c, ds, prev, limit)
}

// ensureOnServer ensures c's database and login on its server, within the server's slots of
// concurrent work: created when missing, given c's password and the server's connection limit.
func (r *Reconciler) ensureOnServer(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, c resources.DatabaseCredentials) outcome {
	prov, err := r.Databases.Provisioner(ctx, c.Server)
	if err != nil {
		return r.serverFailed(t, e, c.Server, err)
	}
	if err := r.slots.run(ctx, c.Server, r.Config.Databases.Timeout.Duration, func(sqlCtx context.Context) error {
		return prov.Ensure(sqlCtx, c.Account)
	}); err != nil {
		return r.serverFailed(t, e, c.Server, err)
	}
	return outcome{done: true}
}

// limitOnServer gives acct's login the server's connection limit, within the server's slots of
// concurrent work.
func (r *Reconciler) limitOnServer(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, server string, acct database.Account) outcome {
	prov, err := r.Databases.Provisioner(ctx, server)
	if err != nil {
		return r.serverFailed(t, e, server, err)
	}
	if err := r.slots.run(ctx, server, r.Config.Databases.Timeout.Duration, func(sqlCtx context.Context) error {
		return prov.SetConnectionLimit(sqlCtx, acct)
	}); err != nil {
		return r.serverFailed(t, e, server, err)
	}
	return outcome{done: true}
}

// serverFailed reports a server that is down or refused, as an event and an outcome: a server
// that cannot be used as configured stalls, anything else is retried. The drivers' errors name
// the server and the statement's failure, never a password.
func (r *Reconciler) serverFailed(t *tenancyv1alpha1.Tenant, e dbEntry, server string, err error) outcome {
	var missing *database.MissingError
	if errors.As(err, &missing) {
		res := stalled(tenancyv1alpha1.ReasonAdoptedDataMissing, "%s on DatabaseServer %s: %v", e, server, err)
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, res.reason, "Provision", "%s", res.message)
		return res
	}
	var foreign *database.ForeignError
	if errors.As(err, &foreign) {
		res := stalled(tenancyv1alpha1.ReasonForeignData, "%s on DatabaseServer %s: %v", e, server, err)
		if foreign.Owner != "" {
			res.message += fmt.Sprintf("; to take it over, annotate this tenant with %s=%s", tenancyv1alpha1.AdoptDataAnnotation, foreign.Owner)
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, res.reason, "Provision", "%s", res.message)
		return res
	}
	res := failedf(tenancyv1alpha1.ReasonDatabaseUnavailable, "%s on DatabaseServer %s: %w", e, server, err)
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, res.reason, "Provision", "%s", res.message)
	if errors.Is(err, database.ErrServerUnusable) {
		res.stalled, res.err = true, nil
	}
	return res
}

// placeDatabase is where a tenant's new database of an engine goes: the server already holding
// the tenant's databases of that engine if any (no request, and no look at the servers), else
// the least loaded server (see leastLoadedServer) by the servers and tenant counts in the cache.
// Nothing is placed when none qualifies; a server becoming Ready re-triggers the tenant. Counts
// include what this process placed that the cache does not show yet (placements).
func (r *Reconciler) placeDatabase(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry) (string, outcome) {
	for _, d := range t.Status.Databases {
		if d.Engine == e.engine {
			return d.Server, outcome{done: true}
		}
	}
	servers := &tenancyv1alpha1.DatabaseServerList{}
	if err := r.Client.List(ctx, servers); err != nil {
		return "", failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	server, err := r.placed.place(ctx, r.Client, t, e.engine, servers.Items)
	if err != nil {
		return "", failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	if server != "" {
		return server, outcome{done: true}
	}
	return "", progressing(tenancyv1alpha1.ReasonNoDatabaseServer,
		"%s: no Ready %s DatabaseServer has room for another tenant", e, e.engine)
}

// leastLoadedServer is the Ready, not deleted server of the engine with the fewest tenants
// (by tenants, a count per server name) and room for one more; ties go to the first name. It is
// "" when none qualifies.
func leastLoadedServer(engine tenancyv1alpha1.DatabaseEngine, servers []tenancyv1alpha1.DatabaseServer, tenants map[string]int32) string {
	best, bestCount := "", int32(-1)
	for i := range servers {
		ds := &servers[i]
		if ds.Spec.Engine != engine || !ds.DeletionTimestamp.IsZero() ||
			!meta.IsStatusConditionTrue(ds.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			continue
		}
		n := tenants[ds.Name]
		if ds.Spec.MaxTenants != nil && n >= *ds.Spec.MaxTenants {
			continue
		}
		if bestCount < 0 || n < bestCount || (n == bestCount && ds.Name < best) {
			best, bestCount = ds.Name, n
		}
	}
	return best
}

// countTenantsOn counts the tenants with databases on a server, from the cache index.
func countTenantsOn(ctx context.Context, c client.Reader, server string) (int32, error) {
	list := &tenancyv1alpha1.TenantList{}
	if err := c.List(ctx, list, client.MatchingFields{indexes.TenantDatabaseServer: server}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	return int32(len(list.Items)), nil
}

// releaseDatabase handles a database removed from the spec: the tenant loses its Secret, the
// data stays on the server (and its credentials in the store) until the tenant is Purged.
func (r *Reconciler) releaseDatabase(ctx context.Context, s *tenantScope, st *tenancyv1alpha1.DatabaseStatus) error {
	t := s.tenant
	sec := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: st.SecretName}, sec)
	switch {
	case err == nil:
		// Known by its labels, which only the operator may set, change or remove in the tenant's
		// namespace: one whose controller reference was taken off goes all the same. (A database
		// cannot move to the other engine under its name, so this Secret is no other's.)
		labels := map[string]string{tenancyv1alpha1.TenantLabel: t.Name, tenancyv1alpha1.DatabaseEngineLabel: string(st.Engine)}
		if _, err := writes.DeleteIfLabelled(ctx, r.Client, r.APIReader, sec, labels); err != nil {
			return fmt.Errorf("removing secret %s/%s: %w", s.namespace, sec.Name, err)
		}
	case !apierrors.IsNotFound(err):
		return err
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDatabasesKept, "Release",
		"%s database %s was removed from the spec; database %s is kept on DatabaseServer %s until the tenant is Purged",
		st.Engine, st.Name, st.Database, st.Server)
	return nil
}

// keepDatabases reports an Archived tenant's databases, which are kept untouched, as are their
// status entries.
func (r *Reconciler) keepDatabases(_ context.Context, s *tenantScope) outcome {
	return done(tenancyv1alpha1.ReasonDatabasesKept,
		"%d databases and their credentials are kept while the tenant is %s", len(s.tenant.Status.Databases), s.tenant.Spec.State)
}

// purgeDatabases drops every database the store knows the tenant had (the store is written
// before any database is created, so it knows them all) and every one its status records in
// place (a record can be lost from the store: deleted by hand, or a store restored from an older
// copy), then forgets the tenant's stored secrets, and the status entries with them. Only a
// Purged tenant, or an unused spare being deleted, gets here.
func (r *Reconciler) purgeDatabases(ctx context.Context, s *tenantScope) outcome {
	t := s.tenant
	if conditionCurrent(t, tenancyv1alpha1.DatabasesReadyCondition, tenancyv1alpha1.ReasonDatabasesDropped) {
		s.status.Databases = nil
		c := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.DatabasesReadyCondition)
		return done(c.Reason, "%s", c.Message)
	}
	stored, err := r.Secrets.LoadAll(ctx, s.namespace)
	if err != nil {
		return failedf(tenancyv1alpha1.ReasonStoreUnavailable, "listing stored credentials: %w", err)
	}
	if movedTo := t.Annotations[tenancyv1alpha1.MovedToAnnotation]; movedTo != "" {
		return r.purgeMovedAway(s, stored, movedTo)
	}
	prev := placedDatabases(t)
	var dropped []string
	// Status entries that no stored record covers: a record dropped below covers its own.
	unrecorded := maps.Clone(prev)
	for _, sec := range stored {
		name, _ := tenancyv1alpha1.DatabaseOfSecret(sec.Name)
		c, isDB, err := resources.ParseStoredCredentials(sec, name)
		if !isDB {
			continue
		}
		e := dbEntry{engine: c.Engine, Database: tenancyv1alpha1.Database{Name: name}}
		if err != nil {
			if res := r.abandonOrStall(ctx, t, e, c, stalled(tenancyv1alpha1.ReasonInvalidObject,
				"%s: %v; drop it by hand and delete it from the store", e, err)); !res.done {
				return res
			}
			// Only while the record still names the owner read here: a same-named newer
			// tenant's record written since is that tenant's.
			if err := r.Secrets.Delete(ctx, s.namespace, sec.Name, sec.Annotations[tenancyv1alpha1.TenantUIDLabel]); err != nil {
				return failedf(tenancyv1alpha1.ReasonStoreUnavailable, "deleting stored credentials: %w", err)
			}
			continue
		}
		// Another tenant's record (kept from an earlier tenant of this name) is neither
		// dropped nor forgotten: it is that tenant's data.
		legacy, res := r.claimRecord(s, e, c, prev[dbKey{e.engine, e.Name}])
		if !res.done {
			r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonForeignData, "Purge",
				"%s is not this tenant's and is kept: %s", e, res.message)
			continue
		}
		c.Account.Owner, c.Account.Adopt, c.Account.AdoptUnmarked = string(t.UID), adoptedUID(t), legacy
		res, wasDropped := r.dropDatabase(ctx, t, e, c)
		if !res.done {
			return res
		}
		if st := unrecorded[dbKey{e.engine, e.Name}]; st != nil && sameAccount(st, c) {
			delete(unrecorded, dbKey{e.engine, e.Name})
		}
		// c.UID is the owner claimRecord accepted as this tenant's lineage: the record is
		// forgotten only while it still names it.
		if err := r.Secrets.Delete(ctx, s.namespace, sec.Name, c.UID); err != nil {
			return failedf(tenancyv1alpha1.ReasonStoreUnavailable, "deleting stored credentials: %w", err)
		}
		if wasDropped {
			dropped = append(dropped, e.String())
		}
	}
	for _, key := range slices.SortedFunc(maps.Keys(unrecorded), compareDBKeys) {
		st := unrecorded[key]
		e := dbEntry{engine: st.Engine, Database: tenancyv1alpha1.Database{Name: st.Name}}
		res, wasDropped := r.dropUnrecorded(ctx, t, e, st)
		if !res.done {
			return res
		}
		if wasDropped {
			dropped = append(dropped, e.String())
		}
	}
	s.status.Databases = nil
	msg := "the tenant is Purged: its databases, logins and stored credentials are deleted"
	if len(dropped) > 0 {
		msg += " (" + strings.Join(dropped, ", ") + ")"
	}
	return done(tenancyv1alpha1.ReasonDatabasesDropped, "%s", msg)
}

// purgeMovedAway purges a tenant moved to another cluster (MovedToAnnotation): the same data is
// the moved tenant's, or is about to be once the move's destination takes it over (it then
// re-marks the databases and rewrites the stored records with its own UID). Nothing is dropped
// and no record is forgotten here: a database still recorded as this tenant's has not been taken
// over, and the purge waits; one recorded as another tenant's is the destination's already. A
// database the status records that no record covers cannot be told either way and waits too.
// The data is reachable, so AbandonDataAnnotation is no way out: removing MovedToAnnotation is,
// and the server's markers then keep whatever the destination did take over from being dropped.
func (r *Reconciler) purgeMovedAway(s *tenantScope, stored []*corev1.Secret, movedTo string) outcome {
	t := s.tenant
	lineage := func(uid string) bool { return uid == "" || uid == string(t.UID) || uid == adoptedUID(t) }
	records := map[dbKey]resources.DatabaseCredentials{}
	// What waits: every database whose record still names this tenant's lineage, whether or not
	// the status lists it (one removed from the spec keeps its record), and every one the status
	// lists that no record of another tenant covers.
	waiting := map[dbKey]resources.DatabaseCredentials{}
	for _, sec := range stored {
		name, _ := tenancyv1alpha1.DatabaseOfSecret(sec.Name)
		c, isDB, err := resources.ParseStoredCredentials(sec, name)
		switch {
		case !isDB:
		case err != nil:
			waiting[dbKey{c.Engine, name}] = c
		default:
			records[dbKey{c.Engine, name}] = c
			if lineage(c.UID) {
				waiting[dbKey{c.Engine, name}] = c
			}
		}
	}
	var takenOver []string
	for _, st := range t.Status.Databases {
		key := dbKey{st.Engine, st.Name}
		if c, recorded := records[key]; recorded && !lineage(c.UID) && sameAccount(&st, c) {
			takenOver = append(takenOver, dbEntry{engine: st.Engine, Database: tenancyv1alpha1.Database{Name: st.Name}}.String())
			continue
		}
		waiting[key] = resources.DatabaseCredentials{Engine: st.Engine, Name: st.Name, Server: st.Server,
			Account: database.Account{Database: st.Database, Username: st.Username}}
	}
	// The first that waits, in a stable order, is the one reported.
	for _, key := range slices.SortedFunc(maps.Keys(waiting), compareDBKeys) {
		c := waiting[key]
		e := dbEntry{engine: key.engine, Database: tenancyv1alpha1.Database{Name: key.name}}
		return stalled(tenancyv1alpha1.ReasonMovedAway,
			"%s: the tenant was moved to %s, and the database %q on DatabaseServer %s has not been taken over there yet (the secret store's record does not name the moved tenant): "+
				"it is neither dropped nor forgotten. Finish the move (landlordctl move); remove the annotation %s only if the move is abandoned and the destination's tenant deleted, "+
				"for a purge then drops the data here",
			e, movedTo, c.Account.Database, c.Server, tenancyv1alpha1.MovedToAnnotation)
	}
	s.status.Databases = nil
	msg := "the tenant is Purged; it was moved to " + movedTo + ", which has its data: nothing was dropped here"
	if len(takenOver) > 0 {
		msg += " (" + strings.Join(takenOver, ", ") + ")"
	}
	return done(tenancyv1alpha1.ReasonDatabasesDropped, "%s", msg)
}

// dropUnrecorded drops a database the tenant's status records in place and the store has no
// record of. Without a record there is no password, and dropping needs none; the server's markers
// decide whose it is: only what is marked as this tenant's (or the tenant's it adopts) is
// dropped, and an unmarked database is never taken for one of Landlord's on the status's word
// alone. One the server no longer holds is only forgotten: a purge reconciled again from a cache
// that still shows the status written before its own earlier pass finds it gone, and drops
// nothing twice.
func (r *Reconciler) dropUnrecorded(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, st *tenancyv1alpha1.DatabaseStatus) (res outcome, dropped bool) {
	c := resources.DatabaseCredentials{Engine: st.Engine, Name: st.Name, Server: st.Server, Account: database.Account{
		Database: st.Database, Username: st.Username, Owner: string(t.UID), Adopt: adoptedUID(t),
	}}
	prov, err := r.Databases.Provisioner(ctx, c.Server)
	if err == nil {
		var held bool
		err = r.slots.run(ctx, c.Server, r.Config.Databases.Timeout.Duration, func(sqlCtx context.Context) (err error) {
			held, err = prov.Holds(sqlCtx, c.Account)
			return err
		})
		if err == nil && !held {
			return outcome{done: true}, false
		}
	}
	if err != nil {
		return r.abandonOrStall(ctx, t, e, c, r.serverFailed(t, e, c.Server, err)), false
	}
	return r.dropDatabase(ctx, t, e, c)
}

// sameAccount reports whether a status entry and a stored record name the same database and login
// on the same server.
func sameAccount(st *tenancyv1alpha1.DatabaseStatus, c resources.DatabaseCredentials) bool {
	return st.Server == c.Server && st.Database == c.Account.Database && st.Username == c.Account.Username
}

// dropDatabase drops one of the tenant's databases and its login. One whose server objects are
// marked as another's (a name collision refused when it was to be created) is not dropped: it
// never held this tenant's data. One that cannot be reached stops the purge, unless the tenant
// asks for unreachable data to be abandoned.
func (r *Reconciler) dropDatabase(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, c resources.DatabaseCredentials) (res outcome, dropped bool) {
	prov, err := r.Databases.Provisioner(ctx, c.Server)
	if err == nil {
		err = r.slots.run(ctx, c.Server, r.Config.Databases.Timeout.Duration, func(sqlCtx context.Context) error {
			return prov.Drop(sqlCtx, c.Account)
		})
	}
	var foreign *database.ForeignError
	switch {
	case err == nil:
		databaseLog(ctx, t, e, c).Info("database dropped")
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDatabasesDropped, "Purge",
			"dropped %s (database %s) on DatabaseServer %s", e, c.Account.Database, c.Server)
		return outcome{done: true}, true
	case errors.As(err, &foreign):
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonForeignData, "Purge",
			"%s on DatabaseServer %s is not dropped: %v", e, c.Server, err)
		return outcome{done: true}, false
	}
	return r.abandonOrStall(ctx, t, e, c, r.serverFailed(t, e, c.Server, err)), false
}

// databaseLog is the logger of one of the tenant's databases, with the keys every database log
// line carries.
func databaseLog(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, c resources.DatabaseCredentials) logr.Logger {
	return log.FromContext(ctx).WithValues("tenant", t.Name, "engine", string(e.engine), "database", e.Name,
		"server", c.Server, "serverDatabase", c.Account.Database)
}

// abandonOrStall is what a purge does with a database it cannot drop: res (retried, or stalled)
// unless the tenant carries AbandonDataAnnotation with its own UID, in which case the database
// is forgotten, and an event and the log say exactly what was left where.
func (r *Reconciler) abandonOrStall(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, c resources.DatabaseCredentials, res outcome) outcome {
	if t.UID == "" || t.Annotations[tenancyv1alpha1.AbandonDataAnnotation] != string(t.UID) {
		return res
	}
	where := fmt.Sprintf("%s (database %q, login %q) on DatabaseServer %q", e, c.Account.Database, c.Account.Username, c.Server)
	databaseLog(ctx, t, e, c).Info("abandoned tenant data that could not be reached", "data", where, "cause", res.message)
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonDataAbandoned, "Abandon",
		"abandoned %s: it may still exist there and must be dropped by hand; its stored credentials are forgotten (%s)", where, res.message)
	return outcome{done: true}
}

// reportKeptDatabases records, on deletion of a tenant that is not Purged, that its databases
// stay where they are.
func (r *Reconciler) reportKeptDatabases(t *tenancyv1alpha1.Tenant) {
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
