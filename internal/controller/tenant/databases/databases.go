// Package databases places, provisions and drops a tenant's databases and keeps their
// credentials: where a new database goes (the least loaded Ready server, one placement at a
// time), its credentials' life from the secret store to the tenant's Secret, its database and
// login on its server (within the server's slots of concurrent work), the egress from the
// tenant's pods to the servers it is on, and, for a Purged tenant, dropping what the store and the
// status say it had. The tenant reconciler's database phase of each lifecycle state, and its
// finalizer, call it.
package databases

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/controller/writes"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// The servers are read, and new databases placed on them; the tenant reconciler's watch of them
// is through the same rule. Credentials Secrets are written into, and removed from, the tenant
// namespace, as is the NetworkPolicy to the servers.
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databaseservers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch

// Engine is what a tenant's databases and their credentials need of the operator. Its fields are
// set once, before its first use; it keeps its own memories of this process's work.
type Engine struct {
	// Client reads through the cache and writes; APIReader reads what the cache does not hold (a
	// Secret whose labels are checked before it is removed).
	Client    client.Client
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Secrets keeps generated credentials in the secret store.
	Secrets secret.TenantSecrets
	// Databases reaches the DatabaseServers.
	Databases *database.Connections
	// Applied remembers the owned objects found in place (the tenant reconciler's memo).
	Applied *apply.Memo
	// ApplyFailed classifies a failed write of one of the tenant's objects and records it, as the
	// tenant reconciler does for every object it writes.
	ApplyFailed phase.ApplyFailed
	// Moves is whether DatabaseMoves are served (and cached): a database being moved is left to
	// its move (moves.go).
	Moves bool

	// placed counts the databases placed that the cache does not show yet.
	placed placements
	// slots starts a statement's timeout once it has a connection to its server.
	slots serverSlots
}

// Scope is one reconcile of one tenant, as the engine sees it: the tenant as the cache holds it
// (read only), the name of its namespace, whether a reconcile was asked for (what earlier
// reconciles found in place is then checked again on the servers rather than trusted), and the
// status draft whose status.databases the engine writes.
type Scope struct {
	Tenant    *tenancyv1alpha1.Tenant
	Namespace string
	Verify    bool
	Status    *tenancyv1alpha1.TenantStatus
	// Class names the tenant's TenantClass, and Placement is where it places databases (nil:
	// anywhere); a database placed elsewhere is moved (tiers.go).
	Class     string
	Placement *tenancyv1alpha1.ClassDatabases
}

// applier writes the tenant's objects, compared with the cache (or, when a reconcile was asked
// for, in full).
func (r *Engine) applier(s Scope) *apply.Applier {
	return &apply.Applier{Client: r.Client, APIReader: r.APIReader, Memo: r.Applied, Verify: s.Verify}
}

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

// Ensure converges the tenant's databases and records those in place in the status draft, for
// AllowEgress to let the tenant's pods reach the servers they are on. A database whose
// credentials Secret is intact and whose status records it in place costs nothing but a
// cache-compared apply: no store read, no login to its server, unless a reconcile was asked for
// (Scope.Verify), which checks it on its server. Everything else takes the slow path:
// credentials from the store (created there first for a new database), the database ensured on
// its server, then the Secret written.
func (r *Engine) Ensure(ctx context.Context, s Scope) phase.Result {
	t := s.Tenant
	prev := placedDatabases(t)

	var (
		statuses []tenancyv1alpha1.DatabaseStatus
		failures []phase.Result
	)
	moves, err := r.movesOf(ctx, t)
	if err != nil {
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	desired := desiredDatabases(t)
	for _, e := range desired {
		key := dbKey{e.engine, e.Name}
		st, res := r.ensureDatabase(ctx, s, e, prev[key], moves[e.Name])
		if res.Done {
			// In place: its class may place it elsewhere.
			res = r.moveToClass(ctx, s, e, prev[key], moves[e.Name])
		}
		delete(prev, key)
		if st != nil {
			statuses = append(statuses, *st)
		}
		if !res.Done {
			failures = append(failures, res)
		}
	}
	// What is left in prev was removed from the spec: its Secret goes, its data stays.
	for _, st := range prev {
		if err := r.releaseDatabase(ctx, s, st); err != nil {
			statuses = append(statuses, *st)
			failures = append(failures, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err))
		}
	}
	slices.SortFunc(statuses, func(a, b tenancyv1alpha1.DatabaseStatus) int {
		return cmp.Or(cmp.Compare(a.Engine, b.Engine), cmp.Compare(a.Name, b.Name))
	})
	s.Status.Databases = statuses

	if len(failures) == 0 {
		return phase.Done(tenancyv1alpha1.ReasonSucceeded, "%d databases ready", len(desired))
	}
	// A stall is reported ahead of progress, and every error is retried.
	res := failures[0]
	var errs []error
	for _, f := range failures {
		if f.Stalled && !res.Stalled {
			res = f
		}
		errs = append(errs, f.Err)
	}
	res.Err = errors.Join(errs...)
	if res.Stalled {
		// Another database may be waiting on a retry; the stall's own requeue covers it.
		res.Err = nil
	}
	return res
}

// ensureDatabase converges one database and returns its status entry (the previous one when it
// could not be brought in place, so a placement is never forgotten).
func (r *Engine) ensureDatabase(ctx context.Context, s Scope, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus, move *tenancyv1alpha1.DatabaseMove) (*tenancyv1alpha1.DatabaseStatus, phase.Result) {
	t := s.Tenant
	hold, switching, res := moving(e, move, prev)
	if hold {
		return prev, res
	}
	if prev != nil && e.Server != "" && e.Server != prev.Server && (!switching || e.Server != move.Spec.Server) {
		return prev, phase.Stalled(tenancyv1alpha1.ReasonDatabaseServerConflict,
			"%s is on DatabaseServer %s, not %s: a database changes server only by a DatabaseMove (landlordctl db move %s %s --to %s)",
			e, prev.Server, e.Server, t.Name, e.Name, e.Server)
	}
	if prev != nil && !s.Verify && !switching && (e.Rotation == "" || e.Rotation == prev.Rotation) {
		c, ok, err := r.intactCredentials(ctx, s, e, prev)
		if err != nil {
			return prev, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
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
				acct.Owner, acct.Adopt = string(t.UID), AdoptedUID(t)
				if res := r.limitOnServer(ctx, t, e, c.Server, acct); !res.Done {
					return prev, res
				}
				limit = ptr.To(*want)
			}
			return r.publishCredentials(ctx, s, c, ds, prev, limit)
		}
	}

	c, rotated, res := r.credentials(ctx, s, e, prev)
	if !res.Done {
		return prev, res
	}
	// Read before the provisioner is: should the limit move in between, what is recorded is the
	// older one, and the move, which re-triggers the tenant, is applied then.
	ds, err := r.Databases.Server(ctx, c.Server)
	if err != nil {
		return prev, r.serverFailed(t, e, c.Server, err)
	}
	limit := ptr.To(database.ConnectionLimit(ds))
	if res := r.ensureOnServer(ctx, t, e, c); !res.Done {
		return prev, res
	}
	if res := r.recordOwner(ctx, s, e, &c); !res.Done {
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
	st, res := r.publishCredentials(ctx, s, c, ds, prev, limit)
	if switching && res.Done && st.Server == move.Spec.Server {
		// The tenant's Secret names the new server from here on: its components restart
		// (package components stamps their pods with the time).
		st.SwitchedAt = move.Status.SwitchedAt.DeepCopy()
		if st.SwitchedAt == nil {
			st.SwitchedAt = ptr.To(metav1.Now())
		}
	}
	return st, res
}

// ensureOnServer ensures c's database and login on its server, within the server's slots of
// concurrent work: created when missing, given c's password and the server's connection limit.
func (r *Engine) ensureOnServer(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, c resources.DatabaseCredentials) phase.Result {
	prov, err := r.Databases.Provisioner(ctx, c.Server)
	if err != nil {
		return r.serverFailed(t, e, c.Server, err)
	}
	if err := r.slots.run(ctx, c.Server, r.Config.Databases.Timeout.Duration, func(sqlCtx context.Context) error {
		return prov.Ensure(sqlCtx, c.Account)
	}); err != nil {
		return r.serverFailed(t, e, c.Server, err)
	}
	return phase.Result{Done: true}
}

// limitOnServer gives acct's login the server's connection limit, within the server's slots of
// concurrent work.
func (r *Engine) limitOnServer(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, server string, acct database.Account) phase.Result {
	prov, err := r.Databases.Provisioner(ctx, server)
	if err != nil {
		return r.serverFailed(t, e, server, err)
	}
	if err := r.slots.run(ctx, server, r.Config.Databases.Timeout.Duration, func(sqlCtx context.Context) error {
		return prov.SetConnectionLimit(sqlCtx, acct)
	}); err != nil {
		return r.serverFailed(t, e, server, err)
	}
	return phase.Result{Done: true}
}

// serverFailed reports a server that is down or refused, as an event and a result: a server
// that cannot be used as configured stalls, anything else is retried. The drivers' errors name
// the server and the statement's failure, never a password.
func (r *Engine) serverFailed(t *tenancyv1alpha1.Tenant, e dbEntry, server string, err error) phase.Result {
	var missing *database.MissingError
	if errors.As(err, &missing) {
		res := phase.Stalled(tenancyv1alpha1.ReasonAdoptedDataMissing, "%s on DatabaseServer %s: %v", e, server, err)
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, res.Reason, "Provision", "%s", res.Message)
		return res
	}
	var foreign *database.ForeignError
	if errors.As(err, &foreign) {
		res := phase.Stalled(tenancyv1alpha1.ReasonForeignData, "%s on DatabaseServer %s: %v", e, server, err)
		if foreign.Owner != "" {
			res.Message += fmt.Sprintf("; to take it over, annotate this tenant with %s=%s", tenancyv1alpha1.AdoptDataAnnotation, foreign.Owner)
		}
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, res.Reason, "Provision", "%s", res.Message)
		return res
	}
	res := phase.Failedf(tenancyv1alpha1.ReasonDatabaseUnavailable, "%s on DatabaseServer %s: %w", e, server, err)
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, res.Reason, "Provision", "%s", res.Message)
	if errors.Is(err, database.ErrServerUnusable) {
		res.Stalled, res.Err = true, nil
	}
	return res
}

// releaseDatabase handles a database removed from the spec: the tenant loses its Secret, the
// data stays on the server (and its credentials in the store) until the tenant is Purged.
func (r *Engine) releaseDatabase(ctx context.Context, s Scope, st *tenancyv1alpha1.DatabaseStatus) error {
	t := s.Tenant
	sec := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: st.SecretName}, sec)
	switch {
	case err == nil:
		// Known by its labels, which only the operator may set, change or remove in the tenant's
		// namespace: one whose controller reference was taken off goes all the same. (A database
		// cannot move to the other engine under its name, so this Secret is no other's.)
		labels := map[string]string{tenancyv1alpha1.TenantLabel: t.Name, tenancyv1alpha1.DatabaseEngineLabel: string(st.Engine)}
		if _, err := writes.DeleteIfLabelled(ctx, r.Client, r.APIReader, sec, labels); err != nil {
			return fmt.Errorf("removing secret %s/%s: %w", s.Namespace, sec.Name, err)
		}
	case !apierrors.IsNotFound(err):
		return err
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonDatabasesKept, "Release",
		"%s database %s was removed from the spec; database %s is kept on DatabaseServer %s until the tenant is Purged",
		st.Engine, st.Name, st.Database, st.Server)
	return nil
}

// Keep reports an Archived tenant's databases, which are kept untouched, as are their status
// entries.
func (r *Engine) Keep(t *tenancyv1alpha1.Tenant) phase.Result {
	return phase.Done(tenancyv1alpha1.ReasonDatabasesKept,
		"%d databases and their credentials are kept while the tenant is %s", len(t.Status.Databases), t.Spec.State)
}

// Purge drops every database the store knows the tenant had (the store is written
// before any database is created, so it knows them all) and every one its status records in
// place (a record can be lost from the store: deleted by hand, or a store restored from an older
// copy), then forgets the tenant's stored secrets, and the status entries with them. Only a
// Purged tenant, or an unused spare being deleted, gets here; the caller skips a purge its
// condition reports done for the tenant's generation.
func (r *Engine) Purge(ctx context.Context, s Scope) phase.Result {
	t := s.Tenant
	stored, err := r.Secrets.LoadAll(ctx, s.Namespace)
	if err != nil {
		return phase.Failedf(tenancyv1alpha1.ReasonStoreUnavailable, "listing stored credentials: %w", err)
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
			if res := r.abandonOrStall(ctx, t, e, c, phase.Stalled(tenancyv1alpha1.ReasonInvalidObject,
				"%s: %v; drop it by hand and delete it from the store", e, err)); !res.Done {
				return res
			}
			// Only while the record still names the owner read here: a same-named newer
			// tenant's record written since is that tenant's.
			if err := r.Secrets.Delete(ctx, s.Namespace, sec.Name, sec.Annotations[tenancyv1alpha1.TenantUIDLabel]); err != nil {
				return phase.Failedf(tenancyv1alpha1.ReasonStoreUnavailable, "deleting stored credentials: %w", err)
			}
			continue
		}
		// Another tenant's record (kept from an earlier tenant of this name) is neither
		// dropped nor forgotten: it is that tenant's data.
		legacy, res := r.claimRecord(s, e, c, prev[dbKey{e.engine, e.Name}])
		if !res.Done {
			r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonForeignData, "Purge",
				"%s is not this tenant's and is kept: %s", e, res.Message)
			continue
		}
		c.Account.Owner, c.Account.Adopt, c.Account.AdoptUnmarked = string(t.UID), AdoptedUID(t), legacy
		res, wasDropped := r.dropDatabase(ctx, t, e, c)
		if !res.Done {
			return res
		}
		if st := unrecorded[dbKey{e.engine, e.Name}]; st != nil && sameAccount(st, c) {
			delete(unrecorded, dbKey{e.engine, e.Name})
		}
		// c.UID is the owner claimRecord accepted as this tenant's lineage: the record is
		// forgotten only while it still names it.
		if err := r.Secrets.Delete(ctx, s.Namespace, sec.Name, c.UID); err != nil {
			return phase.Failedf(tenancyv1alpha1.ReasonStoreUnavailable, "deleting stored credentials: %w", err)
		}
		if wasDropped {
			dropped = append(dropped, e.String())
		}
	}
	for _, key := range slices.SortedFunc(maps.Keys(unrecorded), compareDBKeys) {
		st := unrecorded[key]
		e := dbEntry{engine: st.Engine, Database: tenancyv1alpha1.Database{Name: st.Name}}
		res, wasDropped := r.dropUnrecorded(ctx, t, e, st)
		if !res.Done {
			return res
		}
		if wasDropped {
			dropped = append(dropped, e.String())
		}
	}
	// The copies a database move holds that neither the store nor the status names: the old
	// database kept until a move is confirmed, or the copy a move has not switched to yet.
	copies, err := r.moveCopies(ctx, t)
	if err != nil {
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	for _, st := range copies {
		e := dbEntry{engine: st.Engine, Database: tenancyv1alpha1.Database{Name: st.Name}}
		res, wasDropped := r.dropUnrecorded(ctx, t, e, &st)
		if !res.Done {
			return res
		}
		if wasDropped {
			dropped = append(dropped, e.String()+" (a move's copy on DatabaseServer "+st.Server+")")
		}
	}
	s.Status.Databases = nil
	msg := "the tenant is Purged: its databases, logins and stored credentials are deleted"
	if len(dropped) > 0 {
		msg += " (" + strings.Join(dropped, ", ") + ")"
	}
	return phase.Done(tenancyv1alpha1.ReasonDatabasesDropped, "%s", msg)
}

// purgeMovedAway purges a tenant moved to another cluster (MovedToAnnotation): the same data is
// the moved tenant's, or is about to be once the move's destination takes it over (it then
// re-marks the databases and rewrites the stored records with its own UID). Nothing is dropped
// and no record is forgotten here: a database still recorded as this tenant's has not been taken
// over, and the purge waits; one recorded as another tenant's is the destination's already. A
// database the status records that no record covers cannot be told either way and waits too.
// The data is reachable, so AbandonDataAnnotation is no way out: removing MovedToAnnotation is,
// and the server's markers then keep whatever the destination did take over from being dropped.
func (r *Engine) purgeMovedAway(s Scope, stored []*corev1.Secret, movedTo string) phase.Result {
	t := s.Tenant
	lineage := func(uid string) bool { return uid == "" || uid == string(t.UID) || uid == AdoptedUID(t) }
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
		return phase.Stalled(tenancyv1alpha1.ReasonMovedAway,
			"%s: the tenant was moved to %s, and the database %q on DatabaseServer %s has not been taken over there yet (the secret store's record does not name the moved tenant): "+
				"it is neither dropped nor forgotten. Finish the move (landlordctl move); remove the annotation %s only if the move is abandoned and the destination's tenant deleted, "+
				"for a purge then drops the data here",
			e, movedTo, c.Account.Database, c.Server, tenancyv1alpha1.MovedToAnnotation)
	}
	s.Status.Databases = nil
	msg := "the tenant is Purged; it was moved to " + movedTo + ", which has its data: nothing was dropped here"
	if len(takenOver) > 0 {
		msg += " (" + strings.Join(takenOver, ", ") + ")"
	}
	return phase.Done(tenancyv1alpha1.ReasonDatabasesDropped, "%s", msg)
}

// dropUnrecorded drops a database the tenant's status records in place and the store has no
// record of. Without a record there is no password, and dropping needs none; the server's markers
// decide whose it is: only what is marked as this tenant's (or the tenant's it adopts) is
// dropped, and an unmarked database is never taken for one of Landlord's on the status's word
// alone. One the server no longer holds is only forgotten: a purge reconciled again from a cache
// that still shows the status written before its own earlier pass finds it gone, and drops
// nothing twice.
func (r *Engine) dropUnrecorded(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, st *tenancyv1alpha1.DatabaseStatus) (res phase.Result, dropped bool) {
	c := resources.DatabaseCredentials{Engine: st.Engine, Name: st.Name, Server: st.Server, Account: database.Account{
		Database: st.Database, Username: st.Username, Owner: string(t.UID), Adopt: AdoptedUID(t),
	}}
	prov, err := r.Databases.Provisioner(ctx, c.Server)
	if err == nil {
		var held bool
		err = r.slots.run(ctx, c.Server, r.Config.Databases.Timeout.Duration, func(sqlCtx context.Context) (err error) {
			held, err = prov.Holds(sqlCtx, c.Account)
			return err
		})
		if err == nil && !held {
			return phase.Result{Done: true}, false
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
func (r *Engine) dropDatabase(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, c resources.DatabaseCredentials) (res phase.Result, dropped bool) {
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
		return phase.Result{Done: true}, true
	case errors.As(err, &foreign):
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, tenancyv1alpha1.ReasonForeignData, "Purge",
			"%s on DatabaseServer %s is not dropped: %v", e, c.Server, err)
		return phase.Result{Done: true}, false
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
func (r *Engine) abandonOrStall(ctx context.Context, t *tenancyv1alpha1.Tenant, e dbEntry, c resources.DatabaseCredentials, res phase.Result) phase.Result {
	if t.UID == "" || t.Annotations[tenancyv1alpha1.AbandonDataAnnotation] != string(t.UID) {
		return res
	}
	where := fmt.Sprintf("%s (database %q, login %q) on DatabaseServer %q", e, c.Account.Database, c.Account.Username, c.Server)
	databaseLog(ctx, t, e, c).Info("abandoned tenant data that could not be reached", "data", where, "cause", res.Message)
	r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, tenancyv1alpha1.ReasonDataAbandoned, "Abandon",
		"abandoned %s: it may still exist there and must be dropped by hand; its stored credentials are forgotten (%s)", where, res.Message)
	return phase.Result{Done: true}
}

// ReportKept records, on deletion of a tenant that is not Purged, that its databases stay where
// they are.
func (r *Engine) ReportKept(t *tenancyv1alpha1.Tenant) {
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
