package databases

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
)

// The credentials of a tenant's database, from first to last: they are loaded from the tenant's
// own Secret when it is intact (intactCredentials, the fast path), otherwise from the secret
// store (credentials), where a record is used only once it is proven the tenant's (claimRecord)
// and is generated and saved first for a database new to the tenant, so the store always knows a
// database before its server does; a record the store lost is written back from the Secret
// (restoreCredentials). Once the server holds the database, the record is stamped with the
// tenant it now belongs to (recordOwner), and the credentials are published as the tenant's
// Secret (publishCredentials). Ensure (databases.go) calls these in that order;
// the only other reader of the records is purging, which deletes them with the data they name.

// intactCredentials reads the credentials of a database in place from the tenant's own Secret:
// ok only when the Secret is the tenant's (controlled by it), unedited (its digest matches) and
// names the engine, server, database and login the status records.
func (r *Engine) intactCredentials(ctx context.Context, s Scope, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus) (resources.DatabaseCredentials, bool, error) {
	existing := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: tenancyv1alpha1.DatabaseSecretName(e.Name)}, existing)
	switch {
	case apierrors.IsNotFound(err):
		return resources.DatabaseCredentials{}, false, nil
	case err != nil:
		return resources.DatabaseCredentials{}, false, err
	case !metav1.IsControlledBy(existing, s.Tenant):
		return resources.DatabaseCredentials{}, false, nil
	}
	c, ok := resources.CredentialsFromSecret(existing, e.Name)
	ok = ok && c.Engine == e.engine && c.Server == prev.Server &&
		c.Account.Database == prev.Database && c.Account.Username == prev.Username
	return c, ok, nil
}

// credentials returns a database's credentials from the store, creating them there for a new
// database (after choosing its server) and replacing the password when a rotation is requested.
// The store is written before the server, so no database ever exists that the store does not
// know about. A database the status records in place is never created again: see
// restoreCredentials.
func (r *Engine) credentials(ctx context.Context, s Scope, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus) (resources.DatabaseCredentials, bool, phase.Result) {
	ok := phase.Result{Done: true}
	name := tenancyv1alpha1.DatabaseSecretName(e.Name)
	stored, err := r.Secrets.Load(ctx, s.Namespace, name)
	switch {
	case err == nil:
		c, isDB, err := resources.ParseStoredCredentials(stored, e.Name)
		switch {
		case !isDB || err != nil:
			return c, false, phase.Stalled(tenancyv1alpha1.ReasonInvalidObject,
				"the secret store holds %s/%s but not as complete database credentials", s.Namespace, name)
		case c.Engine != e.engine:
			return c, false, phase.Stalled(tenancyv1alpha1.ReasonDatabaseServerConflict,
				"database %s already exists as a %s database; a database cannot change engine", e.Name, c.Engine)
		case e.Server != "" && e.Server != c.Server:
			return c, false, phase.Stalled(tenancyv1alpha1.ReasonDatabaseServerConflict,
				"%s is on DatabaseServer %s, not %s: a database changes server only by a DatabaseMove (landlordctl db move %s %s --to %s)",
				e, c.Server, e.Server, s.Tenant.Name, e.Name, e.Server)
		}
		legacy, res := r.claimRecord(s, e, c, prev)
		if !res.Done {
			return c, false, res
		}
		c.Account.Owner, c.Account.Adopt, c.Account.AdoptUnmarked = string(s.Tenant.UID), AdoptedUID(s.Tenant), legacy
		// Data still recorded as the adopted tenant's is taken over, never created afresh.
		c.Account.MustExist = c.UID != "" && c.UID == AdoptedUID(s.Tenant)
		if e.Rotation == "" || e.Rotation == c.Rotation {
			return c, false, ok
		}
		password, err := database.GeneratePassword()
		if err != nil {
			return c, false, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		c.Account.Password, c.Rotation = password, e.Rotation
		if err := r.Secrets.Save(ctx, resources.StoredCredentials(s.Namespace, c)); err != nil {
			return c, false, storeFailed(e, err)
		}
		return c, true, ok
	case errors.Is(err, secret.ErrNotFound) && prev != nil:
		return r.restoreCredentials(ctx, s, e, prev)
	case errors.Is(err, secret.ErrNotFound) && AdoptedUID(s.Tenant) != "":
		// A tenant that adopts another's data finds it through the store, under its namespace's
		// name. No record there means the data is elsewhere (another namespacePrefix, another
		// store), never that it is new: an empty database would hide that and strand the data.
		return resources.DatabaseCredentials{}, false, phase.Stalled(tenancyv1alpha1.ReasonAdoptedDataMissing,
			"%s: this tenant adopts the data of the tenant with UID %s, but the secret store holds no record %s/%s; nothing is created empty. "+
				"The store and namespacePrefix must be those the earlier tenant used; a database that is new to this tenant can be added once the annotation %s is removed",
			e, AdoptedUID(s.Tenant), s.Namespace, name, tenancyv1alpha1.AdoptDataAnnotation)
	case errors.Is(err, secret.ErrNotFound):
	default:
		return resources.DatabaseCredentials{}, false, storeFailed(e, err)
	}

	server := e.Server
	if server == "" && prev != nil {
		server = prev.Server
	}
	if server == "" {
		var res phase.Result
		if server, res = r.placeDatabase(ctx, s, e); !res.Done {
			return resources.DatabaseCredentials{}, false, res
		}
	}
	ds, err := r.Databases.Server(ctx, server)
	if err != nil {
		return resources.DatabaseCredentials{}, false, r.serverFailed(s.Tenant, e, server, err)
	}
	// The one place names are chosen: for a database neither the store nor the status knows.
	// From here on they are read from the record (and the status), so databases.naming applies
	// to new databases only, and adopted data, a move's or a claimed spare's, keeps its names.
	dbName, user := database.NewNames(r.Config.Databases.Naming, database.Engine(e.engine), ds.Spec.NamePrefix,
		s.Tenant.Name, string(s.Tenant.UID), e.Name)
	password, err := database.GeneratePassword()
	if err != nil {
		return resources.DatabaseCredentials{}, false, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	c := resources.DatabaseCredentials{
		Engine: e.engine, Name: e.Name, Server: server, Rotation: e.Rotation, UID: string(s.Tenant.UID),
		Account: database.Account{Database: dbName, Username: user, Password: password, Owner: string(s.Tenant.UID)},
	}
	if err := r.Secrets.Save(ctx, resources.StoredCredentials(s.Namespace, c)); err != nil {
		return c, false, storeFailed(e, err)
	}
	return c, false, ok
}

// restoreCredentials answers a store that holds no record of a database the tenant's status
// records in place: a record deleted by hand, a store restored from an older backup, the file
// store's volume replaced or the operator pointed at another bucket or prefix (the store
// identity check catches a whole other store, not a store missing some records). The database
// exists on its server, with a password the tenant's running applications hold, so it is never
// given a newly generated one because the store lost its record: that would lock every one of
// them out, on a request to reconcile now as on any reconcile.
//
// The tenant's own Secret, when intact and consistent (intactCredentials), is the password in
// use: it is written back to the store, and the caller ensures the database with it. Without
// it, nothing holds the password any more; the database stalls (CredentialsMissing) until an
// administrator puts the record back in the store (from a backup) or asks for a new password
// by setting the database's rotation to a new value, which is then minted as any rotation is.
// This holds when the Secret was deleted too, rather than minting as the store's answer alone
// would suggest: a deleted Secret does not stop applications that read it at start, and a
// silent new password would also hide that the store lost data.
func (r *Engine) restoreCredentials(ctx context.Context, s Scope, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus) (resources.DatabaseCredentials, bool, phase.Result) {
	t := s.Tenant
	c, intact, err := r.intactCredentials(ctx, s, e, prev)
	if err != nil {
		return c, false, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	rotate := e.Rotation != "" && e.Rotation != prev.Rotation
	if !intact {
		if !rotate {
			return c, false, phase.Stalled(tenancyv1alpha1.ReasonCredentialsMissing,
				"%s on DatabaseServer %s: the stored credentials are missing (the secret store holds no record %s/%s) and the tenant's Secret %s is gone or was edited, "+
					"so nothing holds the password of database %q any more; it is not replaced without a request. "+
					"Put the record back in the store from a backup, or set the database's rotation to a new value to give it a new password",
				e, prev.Server, s.Namespace, tenancyv1alpha1.DatabaseSecretName(e.Name), tenancyv1alpha1.DatabaseSecretName(e.Name), prev.Database)
		}
		// A rotation asked for a new password; the database keeps its names.
		c = resources.DatabaseCredentials{
			Engine: e.engine, Name: e.Name, Server: prev.Server, Rotation: prev.Rotation,
			Account: database.Account{Database: prev.Database, Username: prev.Username},
		}
	}
	c.UID = string(t.UID)
	c.Account.Owner, c.Account.Adopt = string(t.UID), AdoptedUID(t)
	if rotate {
		password, err := database.GeneratePassword()
		if err != nil {
			return c, false, phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		c.Account.Password, c.Rotation = password, e.Rotation
	}
	if err := r.Secrets.Save(ctx, resources.StoredCredentials(s.Namespace, c)); err != nil {
		return c, false, storeFailed(e, err)
	}
	if !rotate {
		databaseLog(ctx, t, e, c).Info("stored credentials were missing; written back from the tenant's Secret")
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, ReasonCredentialsRestored, "Restore",
			"the secret store held no record of %s; the password in the tenant's Secret %s is written back to it and kept", e, tenancyv1alpha1.DatabaseSecretName(e.Name))
	}
	return c, rotate, phase.Result{Done: true}
}

// claimRecord decides whether a stored record is the tenant's to use. A record names the UID of
// the tenant it was written for; records are keyed by namespace name, so one left by a tenant
// deleted without being Purged would otherwise be loaded by the next tenant of the same name, or
// by a pool spare that draws the same name. It is used when it names this tenant, or the earlier
// tenant this one adopts (AdoptDataAnnotation). A record without a UID, written before records
// carried one, is used only when the tenant's own status has the database in place under the
// recorded names (legacy is then true: its server objects carry no marker yet either).
func (r *Engine) claimRecord(s Scope, e dbEntry, c resources.DatabaseCredentials, prev *tenancyv1alpha1.DatabaseStatus) (legacy bool, res phase.Result) {
	t := s.Tenant
	ok := phase.Result{Done: true}
	switch {
	case c.UID == string(t.UID):
		return false, ok
	case c.UID != "" && c.UID == AdoptedUID(t):
		return false, ok
	case c.UID == "" && prev != nil && prev.Server == c.Server &&
		prev.Database == c.Account.Database && prev.Username == c.Account.Username && checkLegacyNames(c, t.Name) == nil:
		return true, ok
	case c.UID == "":
		return false, phase.Stalled(tenancyv1alpha1.ReasonForeignData,
			"%s: the secret store holds credentials for database %q that this tenant's status does not vouch for, written before records named their tenant; "+
				"they are never used: move them out of the store, or drop the database by hand", e, c.Account.Database)
	}
	return false, phase.Stalled(tenancyv1alpha1.ReasonForeignData,
		"%s: the secret store holds the kept data of an earlier tenant named %s (UID %s): database %q on DatabaseServer %s. "+
			"It is never used, changed or dropped by another tenant. To take it over, annotate this tenant with %s=%s; otherwise give this tenant another name",
		e, t.Name, c.UID, c.Account.Database, c.Server, tenancyv1alpha1.AdoptDataAnnotation, c.UID)
}

// AdoptedUID is the UID of the earlier tenant whose data the tenant takes over, or "": its
// databases here, its volumes in the tenant reconciler.
func AdoptedUID(t *tenancyv1alpha1.Tenant) string {
	if uid := t.Annotations[tenancyv1alpha1.AdoptDataAnnotation]; uid != string(t.UID) {
		return uid
	}
	return ""
}

// checkLegacyNames refuses a record without a tenant UID that does not name the database and
// login Landlord derived for the tenant's database before names had a prefix: one copied from
// another tenant would otherwise hand that tenant's database over.
func checkLegacyNames(c resources.DatabaseCredentials, tenant string) error {
	db, user := database.Names(database.Engine(c.Engine), "", tenant, c.Name)
	if c.Account.Database != db || c.Account.Username != user {
		return fmt.Errorf("the stored credentials name database %q and login %q, not this tenant's %q and %q",
			c.Account.Database, c.Account.Username, db, user)
	}
	return nil
}

func storeFailed(e dbEntry, err error) phase.Result {
	return phase.Failedf(tenancyv1alpha1.ReasonStoreUnavailable, "%s: secret store: %w", e, err)
}

// recordOwner names the tenant in the stored record of credentials that named another (the
// earlier tenant it adopts), once the database's server names it: a record re-stamped first
// would leave the server's markers naming the earlier tenant, with nothing left to say the
// takeover was asked for.
func (r *Engine) recordOwner(ctx context.Context, s Scope, e dbEntry, c *resources.DatabaseCredentials) phase.Result {
	if c.UID == string(s.Tenant.UID) {
		return phase.Result{Done: true}
	}
	c.UID = string(s.Tenant.UID)
	if err := r.Secrets.Save(ctx, resources.StoredCredentials(s.Namespace, *c)); err != nil {
		return storeFailed(e, err)
	}
	return phase.Result{Done: true}
}

// publishCredentials writes the credentials Secret into the tenant namespace (when it differs
// from the cached one) and returns the database's status entry.
// ds is the server, as the caller read it from the cache.
func (r *Engine) publishCredentials(ctx context.Context, s Scope, c resources.DatabaseCredentials, ds *tenancyv1alpha1.DatabaseServer, prev *tenancyv1alpha1.DatabaseStatus, limit *int32) (*tenancyv1alpha1.DatabaseStatus, phase.Result) {
	t := s.Tenant
	sec := resources.DatabaseSecret(t, s.Namespace, c, database.Address(ds))
	if _, err := r.applier(s).Apply(ctx, sec); err != nil {
		return prev, r.ApplyFailed(t, sec, err)
	}
	st := &tenancyv1alpha1.DatabaseStatus{
		Engine: c.Engine, Name: c.Name, Server: c.Server,
		Database: c.Account.Database, Username: c.Account.Username,
		SecretName: sec.Name, Rotation: c.Rotation, ConnectionLimit: limit,
	}
	if prev != nil {
		st.SwitchedAt = prev.SwitchedAt
	}
	return st, phase.Result{Done: true}
}
