package database

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// connectTimeout bounds how long a call waits for an unreachable server before it fails.
	connectTimeout = 5 * time.Second
	// MaxAdminConns keeps Landlord's footprint on a shared server small: provisioning is rare.
	MaxAdminConns = 4
	// unlockTimeout bounds releasing advisory locks after the caller's context has ended.
	unlockTimeout = 5 * time.Second
)

type postgres struct {
	pool *pgxpool.Pool
	// health is the check's own connection (see Provisioner.Check); measure is Sizes' own, so
	// that neither waits for provisioning sessions a tenant's login can hold (a lock on its own
	// role or database that Landlord's statements wait behind), nor for each other.
	health, measure *pgxpool.Pool
	addr            string
	connLimit       int32
	// confined: PUBLIC's rights on the server's shared databases were taken (see confine), as
	// read back from the server; tried: confine ran once, whatever it could take.
	confined, tried atomic.Bool
	// markers says where this provisioner keeps its markers (see prepareMarkers).
	markers  atomic.Int32
	prepared sync.Mutex
	locks    lockKeys
}

// Where a provisioner keeps the markers of the databases and logins it creates.
const (
	markersUnknown int32 = iota
	// markersInTable: in pgOwnersTable, which no tenant's login can read.
	markersInTable
	// markersInComments: in the objects' comments, as releases before the table did: every
	// login on the server can read them. Only for administrators that may not create
	// pgOwnersTable, or not use the one another administrator created.
	markersInComments
)

// pgOwnersTable is where Landlord marks the databases and logins it creates on a PostgreSQL
// server, as ownersTable on MySQL: in `postgres`, the database its sessions use and that no
// tenant's login may connect to (see confine), in a schema PUBLIC may not use. Comments, where
// earlier releases kept the markers, are in pg_shdescription, a shared catalog every login on
// the server reads: they told any tenant every other tenant's UID.
const (
	pgOwnersSchema = "landlord"
	pgOwnersTable  = pgOwnersSchema + ".owners"
)

func openPostgres(s Server) (Provisioner, error) {
	mode, err := checkTLS(s.TLS)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(int(s.Port)))
	// The password stays out of the connection string so that no parse error can echo it.
	u := url.URL{
		Scheme: "postgres",
		User:   url.User(s.AdminUser),
		Host:   addr,
		Path:   "/postgres",
		RawQuery: url.Values{"sslmode": {string(mode)}, "application_name": {"landlord"},
			// A tenant's login may create functions and operators wherever PUBLIC may create (the
			// public schema of every cluster upgraded from PostgreSQL 14 or older), and with the
			// default search_path PostgreSQL prefers a better-matching one there to the
			// catalog's: the administrator would run the tenant's code with its own rights. Only
			// the catalog is searched, and temporary objects last (never first, as by default).
			"search_path": {"pg_catalog, pg_temp"}}.Encode(),
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("postgres server %s: %w", addr, err)
	}
	cfg.ConnConfig.Password = s.AdminPassword
	custom, err := tlsConfig(s, mode)
	if err != nil {
		return nil, fmt.Errorf("postgres server %s: %w", addr, err)
	}
	if custom != nil {
		// verify-full leaves pgx no fallback configurations to adjust.
		cfg.ConnConfig.TLSConfig = custom
	}
	cfg.ConnConfig.ConnectTimeout = connectTimeout
	cfg.MaxConns = MaxAdminConns
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = 5 * time.Minute
	healthCfg := cfg.Copy()
	healthCfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres server %s: %w", addr, err)
	}
	health, err := pgxpool.NewWithConfig(context.Background(), healthCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres server %s: %w", addr, err)
	}
	measure, err := pgxpool.NewWithConfig(context.Background(), healthCfg.Copy())
	if err != nil {
		pool.Close()
		health.Close()
		return nil, fmt.Errorf("postgres server %s: %w", addr, err)
	}
	return &postgres{pool: pool, health: health, measure: measure, addr: addr, connLimit: s.ConnectionLimit, locks: newLockKeys(s)}, nil
}

func (p *postgres) Check(ctx context.Context) (ServerInfo, error) {
	var info ServerInfo
	// reserved_connections is PostgreSQL 16's; missing_ok gives NULL before.
	if err := p.health.QueryRow(ctx, "SELECT pg_catalog.current_setting('server_version'),"+
		" pg_catalog.current_setting('max_connections')::pg_catalog.int4,"+
		" pg_catalog.current_setting('superuser_reserved_connections')::pg_catalog.int4"+
		" + COALESCE(pg_catalog.current_setting('reserved_connections', true), '0')::pg_catalog.int4").
		Scan(&info.Version, &info.MaxConnections, &info.Reserved); err != nil {
		return ServerInfo{}, p.wrap(err, "reading version and connection slots")
	}
	if p.confined.Load() {
		return info, nil
	}
	if !p.tried.Load() {
		// Confined at the first placement of a tenant, not when a server is declared: a shared
		// server's other users of `postgres` keep their way in until Landlord has a tenant there.
		return info, nil
	}
	// Confining was tried: one whose administrator could not says what PUBLIC keeps, at every
	// check (an owner may revoke it by hand meanwhile).
	c, err := p.health.Acquire(ctx)
	if err != nil {
		return ServerInfo{}, p.wrap(err, "connecting")
	}
	defer c.Release()
	if info.Unconfined, err = p.publicKeeps(ctx, c.Conn()); err != nil {
		return ServerInfo{}, err
	}
	if len(info.Unconfined) == 0 {
		p.confined.Store(true)
	}
	return info, nil
}

// publicKeeps lists what PUBLIC still holds of the rights confine takes, as "CONNECT on
// database postgres": the ACLs are read back, since a REVOKE by an administrator without the
// grant option takes nothing and only warns.
func (p *postgres) publicKeeps(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, "SELECT a.privilege_type || ' on database ' || d.datname FROM pg_catalog.pg_database d,"+
		" pg_catalog.aclexplode(COALESCE(d.datacl, pg_catalog.acldefault('d', d.datdba))) a"+
		" WHERE d.datname IN ('postgres', 'template1') AND a.grantee = 0 AND a.privilege_type IN ('CONNECT', 'TEMPORARY')"+
		" UNION ALL SELECT a.privilege_type || ' on schema public of database ' || pg_catalog.current_database() FROM pg_catalog.pg_namespace n,"+
		" pg_catalog.aclexplode(COALESCE(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a"+
		" WHERE n.nspname = 'public' AND a.grantee = 0 AND a.privilege_type = 'CREATE' ORDER BY 1")
	if err != nil {
		return nil, p.wrap(err, "reading what PUBLIC holds on the shared databases")
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, p.wrap(err, "reading what PUBLIC holds on the shared databases")
	}
	return kept, nil
}

// Sizes measures the databases the administrator may: pg_database_size needs CONNECT on the
// database or pg_read_all_stats, and Landlord takes CONNECT on a tenant's database from PUBLIC.
// A superuser, or an administrator granted pg_read_all_stats, measures every one. It runs on a
// connection of its own: a server whose databases take long to measure (a tenant with a million
// tables) must not have its reachability check wait, and measuring must not wait for the
// provisioning sessions, which a tenant's login can hold.
func (p *postgres) Sizes(ctx context.Context) (map[string]int64, error) {
	rows, err := p.measure.Query(ctx, "SELECT d.datname, pg_catalog.pg_database_size(d.oid) FROM pg_catalog.pg_database d"+
		" WHERE NOT d.datistemplate AND (pg_catalog.has_database_privilege(d.oid, 'CONNECT'::pg_catalog.text)"+
		" OR pg_catalog.pg_has_role('pg_read_all_stats'::pg_catalog.name, 'USAGE'::pg_catalog.text))")
	if err != nil {
		return nil, p.wrap(err, "reading database sizes")
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var bytes *int64
		if err := rows.Scan(&name, &bytes); err != nil {
			return nil, p.wrap(err, "reading database sizes")
		}
		// NULL: the database was dropped while it was measured.
		if bytes != nil {
			out[name] = *bytes
		}
	}
	if err := rows.Err(); err != nil {
		return nil, p.wrap(err, "reading database sizes")
	}
	return out, nil
}

func (p *postgres) Ensure(ctx context.Context, acct Account) error {
	if err := checkPassword(acct.Password); err != nil {
		return err
	}
	verifier, err := scramVerifier(acct.Password)
	if err != nil {
		return err
	}
	role := pgx.Identifier{acct.Username}.Sanitize()
	db := pgx.Identifier{acct.Database}.Sanitize()
	return p.examined(ctx, acct, func(conn *pgx.Conn, r found, d pgDatabase) error {
		remarkRole, err := r.claim(acct, false)
		if err != nil {
			return err
		}
		// The database is the account's when its owner is the account's login, whatever its
		// comment says: only an administrator can create a database for a login or hand one to
		// it, while the login, as owner, can rewrite the comment. That also recognises a
		// database left unmarked by an interrupted Ensure (CREATE DATABASE cannot share the
		// transaction of its COMMENT).
		remarkDB, err := d.found.claim(acct, r.exists && d.ownerRole == acct.Username)
		if err != nil {
			return err
		}

		var super bool
		if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
			return p.wrap(err, "reading the administrator's attributes")
		}
		if err := p.ensureRole(ctx, conn, acct, role, verifier, r, p.remarks(r, remarkRole), super); err != nil {
			return err
		}
		// An administrator that is not a superuser, as on RDS or Cloud SQL, must be a member of
		// the login's role to create a database owned by it and, later, to drop that database.
		if !super {
			if _, err := conn.Exec(ctx, "GRANT "+role+" TO CURRENT_USER"); err != nil {
				return p.wrap(err, "granting role %q to the administrator", acct.Username)
			}
		}

		if !d.exists {
			// template0, never template1: any login that could ever connect to template1 and
			// create in it (every cluster upgraded from PostgreSQL 14 or older) may have left
			// objects there that each new database would copy, and that its owner would run.
			// template0 is copied with template1's encoding and locale, which new databases got
			// before and which an administrator may have changed from template0's.
			var encoding, collate, ctype string
			if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_encoding_to_char(encoding), datcollate, datctype FROM pg_catalog.pg_database WHERE datname = 'template1'::pg_catalog.name").
				Scan(&encoding, &collate, &ctype); err != nil {
				return p.wrap(err, "reading the encoding and locale of template1")
			}
			if _, err := conn.Exec(ctx, "CREATE DATABASE "+db+" OWNER "+role+" TEMPLATE template0 ENCODING "+quoteLiteral(encoding)+
				" LC_COLLATE "+quoteLiteral(collate)+" LC_CTYPE "+quoteLiteral(ctype)); err != nil {
				return p.wrap(err, "creating database %q", acct.Database)
			}
		} else if d.ownerRole != acct.Username {
			if _, err := conn.Exec(ctx, "ALTER DATABASE "+db+" OWNER TO "+role); err != nil {
				return p.wrap(err, "handing database %q to role %q", acct.Database, acct.Username)
			}
		}
		if p.remarks(d.found, remarkDB) {
			if err := p.mark(ctx, conn, d.found, "DATABASE "+db, acct.Owner); err != nil {
				return p.wrap(err, "marking database %q", acct.Database)
			}
		}
		// PUBLIC may connect to a new database by default, which would let every tenant's login
		// into every other tenant's database.
		if _, err := conn.Exec(ctx, "REVOKE ALL ON DATABASE "+db+" FROM PUBLIC"); err != nil {
			return p.wrap(err, "revoking public access to database %q", acct.Database)
		}
		return nil
	})
}

// ensureRole creates the login, marked, or converges an existing one of the account: password,
// connection limit, and no attribute beyond LOGIN. Creating and marking share a transaction, so
// no unmarked login of Landlord's can exist. Only a superuser may set SUPERUSER, REPLICATION
// and BYPASSRLS on an existing role; another administrator could not have granted them either.
func (p *postgres) ensureRole(ctx context.Context, conn *pgx.Conn, acct Account, role, verifier string, r found, remark, super bool) error {
	limit := "CONNECTION LIMIT " + strconv.Itoa(int(pgConnectionLimit(p.connLimit)))
	tx, err := conn.Begin(ctx)
	if err != nil {
		return p.wrap(err, "starting a transaction")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := quietStatementLog(ctx, tx); err != nil {
		return p.wrap(err, "turning off statement logging")
	}
	// The verifier stands in for the password: the server never sees the password itself.
	password := "PASSWORD " + quoteLiteral(verifier)
	var stmt string
	if !r.exists {
		stmt = "CREATE ROLE " + role + " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS " + limit + " " + password
	} else {
		attrs := " LOGIN NOCREATEDB NOCREATEROLE "
		if super {
			attrs += "NOSUPERUSER NOREPLICATION NOBYPASSRLS "
		}
		stmt = "ALTER ROLE " + role + " WITH" + attrs + limit + " " + password
	}
	// The simple protocol leaves no prepared statement behind.
	if _, err := tx.Exec(ctx, stmt, pgx.QueryExecModeSimpleProtocol); err != nil {
		return p.wrap(redact(err, acct.Password, verifier), "creating or converging role %q", acct.Username)
	}
	if remark {
		if err := p.mark(ctx, tx, r, "ROLE "+role, acct.Owner); err != nil {
			return p.wrap(err, "marking role %q", acct.Username)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return p.wrap(err, "committing role %q", acct.Username)
	}
	return nil
}

func (p *postgres) SetConnectionLimit(ctx context.Context, acct Account) error {
	return p.examined(ctx, acct, func(conn *pgx.Conn, r found, _ pgDatabase) error {
		if err := r.limitable(acct); err != nil {
			return err
		}
		stmt := "ALTER ROLE " + pgx.Identifier{acct.Username}.Sanitize() + " CONNECTION LIMIT " + strconv.Itoa(int(pgConnectionLimit(p.connLimit)))
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return p.wrap(err, "setting the connection limit of role %q", acct.Username)
		}
		return nil
	})
}

// pgConnectionLimit is PostgreSQL's CONNECTION LIMIT for a server's setting: -1 is unlimited.
func pgConnectionLimit(n int32) int32 {
	if n <= 0 {
		return -1
	}
	return n
}

// pgDatabase is what the server holds of an account's database.
type pgDatabase struct {
	found
	ownerRole string
}

// inspect reads whether the account's login and database exist, their markers, and the
// database's owner. A marker in pgOwnersTable prevails over one in a comment, which only an
// earlier release (or an administrator that cannot use the table) left.
func (p *postgres) inspect(ctx context.Context, conn *pgx.Conn, acct Account) (found, pgDatabase, error) {
	r := found{object: "login", name: acct.Username}
	var comment string
	// Every name is the catalog's and every argument typed, whatever the session's search_path.
	err := conn.QueryRow(ctx, "SELECT coalesce(pg_catalog.shobj_description(oid, 'pg_authid'::pg_catalog.name), '') FROM pg_catalog.pg_roles WHERE rolname = $1::pg_catalog.name",
		acct.Username).Scan(&comment)
	switch {
	case err == nil:
		r.exists = true
		r.owner, r.marked = ownerOf(comment)
		r.commented = r.marked
	case !errors.Is(err, pgx.ErrNoRows):
		return r, pgDatabase{}, p.wrap(err, "reading role %q", acct.Username)
	}
	d := pgDatabase{found: found{object: "database", name: acct.Database}}
	err = conn.QueryRow(ctx, "SELECT pg_catalog.pg_get_userbyid(datdba), coalesce(pg_catalog.shobj_description(oid, 'pg_database'::pg_catalog.name), '')"+
		" FROM pg_catalog.pg_database WHERE datname = $1::pg_catalog.name",
		acct.Database).Scan(&d.ownerRole, &comment)
	switch {
	case err == nil:
		d.exists = true
		d.found.owner, d.marked = ownerOf(comment)
		d.commented = d.marked
	case !errors.Is(err, pgx.ErrNoRows):
		return r, d, p.wrap(err, "reading database %q", acct.Database)
	}
	if p.markers.Load() != markersInTable {
		return r, d, nil
	}
	rows, err := conn.Query(ctx, "SELECT kind, tenant FROM "+pgOwnersTable+" WHERE (kind = 'login' AND name = $1) OR (kind = 'database' AND name = $2)",
		acct.Username, acct.Database)
	if err != nil {
		return r, d, p.wrap(err, "reading Landlord's markers")
	}
	defer rows.Close()
	var stale []string
	for rows.Next() {
		var kind, owner string
		if err := rows.Scan(&kind, &owner); err != nil {
			return r, d, p.wrap(err, "reading Landlord's markers")
		}
		for _, f := range []*found{&r, &d.found} {
			switch {
			case f.object != kind:
			case f.exists:
				f.owner, f.marked = owner, true
			default:
				stale = append(stale, kind)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return r, d, p.wrap(err, "reading Landlord's markers")
	}
	// A row whose object is gone (dropped by hand) marks nothing, and must not mark an object
	// someone else creates under the name later: it goes as soon as it is seen.
	for _, kind := range stale {
		name := map[string]string{"login": acct.Username, "database": acct.Database}[kind]
		if _, err := conn.Exec(ctx, "DELETE FROM "+pgOwnersTable+" WHERE kind = $1 AND name = $2", kind, name); err != nil {
			return r, d, p.wrap(err, "removing the marker of the %s %q, which is gone", kind, name)
		}
	}
	return r, d, nil
}

// mark records that an object of the account is the account owner's: a row of pgOwnersTable,
// and no marker left in its comment; or, for an administrator without the table, its comment.
// on is the object's SQL kind and sanitized name ("ROLE \"x\"").
func (p *postgres) mark(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, f found, on string, owner string) error {
	if p.markers.Load() != markersInTable {
		_, err := q.Exec(ctx, "COMMENT ON "+on+" IS "+quoteLiteral(marker(owner)))
		return err
	}
	if _, err := q.Exec(ctx, "INSERT INTO "+pgOwnersTable+" (kind, name, tenant) VALUES ($1, $2, $3)"+
		" ON CONFLICT (kind, name) DO UPDATE SET tenant = excluded.tenant", f.object, f.name, owner); err != nil {
		return err
	}
	if f.commented {
		_, err := q.Exec(ctx, "COMMENT ON "+on+" IS NULL")
		return err
	}
	return nil
}

// remarks reports whether an object's marker must be written: the claim says so, or a marker
// in its comment is to move into pgOwnersTable.
func (p *postgres) remarks(f found, claimed bool) bool {
	return claimed || (f.commented && p.markers.Load() == markersInTable)
}

// examined runs fn under the account's locks with what the server holds of the account, read
// first: everything is looked at before anything is changed, so a refused account leaves no
// trace.
func (p *postgres) examined(ctx context.Context, acct Account, fn func(conn *pgx.Conn, r found, d pgDatabase) error) error {
	if err := checkOwner(acct); err != nil {
		return err
	}
	return p.locked(ctx, []string{"database/" + acct.Database, "role/" + acct.Username}, func(conn *pgx.Conn) error {
		r, d, err := p.inspect(ctx, conn, acct)
		if err != nil {
			return err
		}
		return fn(conn, r, d)
	})
}

func (p *postgres) Holds(ctx context.Context, acct Account) (bool, error) {
	var held bool
	if err := p.pool.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1::pg_catalog.name)"+
		" OR EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = $2::pg_catalog.name)", acct.Username, acct.Database).Scan(&held); err != nil {
		return false, p.wrap(err, "looking for database %q and role %q", acct.Database, acct.Username)
	}
	return held, nil
}

func (p *postgres) Drop(ctx context.Context, acct Account) error {
	role := pgx.Identifier{acct.Username}.Sanitize()
	db := pgx.Identifier{acct.Database}.Sanitize()
	return p.examined(ctx, acct, func(conn *pgx.Conn, r found, d pgDatabase) error {
		if _, err := r.claim(acct, false); err != nil {
			return err
		}
		if _, err := d.found.claim(acct, r.exists && d.ownerRole == acct.Username); err != nil {
			return err
		}
		// FORCE ends the tenant's sessions, which would otherwise block the drop indefinitely.
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			return p.wrap(err, "dropping database %q", acct.Database)
		}
		if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
			return p.wrap(err, "dropping role %q", acct.Username)
		}
		if p.markers.Load() == markersInTable {
			if _, err := conn.Exec(ctx, "DELETE FROM "+pgOwnersTable+" WHERE (kind = 'login' AND name = $1) OR (kind = 'database' AND name = $2)",
				acct.Username, acct.Database); err != nil {
				return p.wrap(err, "removing the markers of database %q and role %q", acct.Database, acct.Username)
			}
		}
		return nil
	})
}

func (p *postgres) Disconnect(ctx context.Context, acct Account) error {
	return p.examined(ctx, acct, func(conn *pgx.Conn, r found, _ pgDatabase) error {
		if _, err := r.claim(acct, false); err != nil {
			return err
		}
		// The administrator's own sessions never run as the login; pgbouncer's server
		// connections do, and are ended with the rest: it logs in again with the password it
		// holds, which is no longer the login's.
		if _, err := conn.Exec(ctx, "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE usename = $1::pg_catalog.name AND pid <> pg_catalog.pg_backend_pid()",
			acct.Username); err != nil {
			return p.wrap(err, "ending the sessions of role %q", acct.Username)
		}
		return nil
	})
}

func (p *postgres) Close() error {
	p.pool.Close()
	p.health.Close()
	p.measure.Close()
	return nil
}

func (p *postgres) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres server %s: %s: %w", p.addr, fmt.Sprintf(format, args...), err)
}

// locked runs fn on one connection while holding session-level advisory locks on names, in
// order. Two Landlord replicas, or two reconciles, converging the same account would otherwise
// race on the same catalog rows, and PostgreSQL answers concurrent GRANT, REVOKE and ALTER ROLE
// on one object with "tuple concurrently updated" rather than waiting.
func (p *postgres) locked(ctx context.Context, names []string, fn func(*pgx.Conn) error) error {
	c, err := p.pool.Acquire(ctx)
	if err != nil {
		return p.wrap(err, "connecting")
	}
	if err := p.confine(ctx, c.Conn()); err != nil {
		c.Release()
		return err
	}
	if err := p.prepareMarkers(ctx, c.Conn()); err != nil {
		c.Release()
		return err
	}
	for _, name := range names {
		if _, err := c.Exec(ctx, "SELECT pg_catalog.pg_advisory_lock($1::pg_catalog.int8)", p.advisoryKey(name)); err != nil {
			// The session may hold some of the locks: never hand it back to the pool.
			_ = c.Hijack().Close(context.WithoutCancel(ctx))
			return p.wrap(err, "locking %s", name)
		}
	}
	fnErr := fn(c.Conn())
	if fnErr != nil && pgIs(fnErr, pgerrcode.UndefinedTable, pgerrcode.InvalidSchemaName) {
		// The owners table was dropped under the provisioner: it is looked at again, and
		// created again, by the next call.
		p.markers.Store(markersUnknown)
	}

	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	if _, err := c.Exec(uctx, "SELECT pg_catalog.pg_advisory_unlock_all()"); err != nil {
		_ = c.Hijack().Close(uctx)
		return errors.Join(fnErr, p.wrap(err, "unlocking"))
	}
	c.Release()
	return fnErr
}

// confine takes from PUBLIC, once per provisioner, what would let a tenant's login into the
// server's shared databases: connecting to `postgres` (where Landlord's sessions run) and
// `template1`, and creating in the public schema of `postgres`. Every tenant login gets only
// what its own database grants it. An administrator that neither owns these databases nor is a
// superuser cannot take the rights (PostgreSQL refuses, or only warns); its sessions stay safe
// all the same (see the search_path in openPostgres), the server's own settings stand, and
// Check reports what PUBLIC keeps (ServerInfo.Unconfined) for the DatabaseServer's status.
func (p *postgres) confine(ctx context.Context, conn *pgx.Conn) error {
	if p.confined.Load() || p.tried.Load() {
		return nil
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return p.wrap(err, "starting a transaction")
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, stmt := range []string{
		"REVOKE CONNECT, TEMPORARY ON DATABASE postgres FROM PUBLIC",
		"REVOKE CONNECT, TEMPORARY ON DATABASE template1 FROM PUBLIC",
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
	} {
		// A refusal (an administrator without the rights), a database or schema public that
		// was dropped leaves nothing to do for that statement.
		if err := execUnless(ctx, tx, stmt, pgerrcode.InsufficientPrivilege, pgerrcode.InvalidSchemaName, pgerrcode.InvalidCatalogName); err != nil {
			return p.confineFailed(err, stmt)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return p.confineFailed(err, "COMMIT")
	}
	// Whether it took anything is read back by Check, which reports what PUBLIC keeps.
	p.tried.Store(true)
	return nil
}

// confineFailed is what a failure to confine means to the session that tried: two sessions
// changing one ACL at once (two replicas, or two Landlords with administrators of their own)
// answer "tuple concurrently updated", which leaves the confining to the next session; any
// other error is the server's and fails the call.
func (p *postgres) confineFailed(err error, stmt string) error {
	if concurrentlyUpdated(err) {
		return nil
	}
	return p.wrap(err, "confining the server's shared databases (%s)", stmt)
}

// prepareMarkers decides, once per provisioner, where its markers go: it creates pgOwnersTable
// when missing, closed to PUBLIC, and uses it when it may read and write it. An administrator
// that may not create the schema in `postgres` (its owner, or a superuser, may), or may not use
// the table another administrator created, keeps the markers in comments, as before the table.
func (p *postgres) prepareMarkers(ctx context.Context, conn *pgx.Conn) error {
	if p.markers.Load() != markersUnknown {
		return nil
	}
	p.prepared.Lock()
	defer p.prepared.Unlock()
	if p.markers.Load() != markersUnknown {
		return nil
	}
	var err error
	// Provisioners creating the table at once (replicas, a restart beside a running one): a
	// later one fails on an earlier one's catalog rows, or on its change of the same ACL, and
	// finds them done on a later try. Each try is one transaction; with several at once, one
	// may lose more than one race, so a few tries, each after a pause that grows and differs.
	const tries = 6
	for try := range tries {
		var where int32
		if where, err = p.createMarkers(ctx, conn); err == nil {
			p.markers.Store(where)
			return nil
		}
		if !pgIs(err, pgerrcode.UniqueViolation, pgerrcode.DuplicateSchema, pgerrcode.DuplicateTable) && !concurrentlyUpdated(err) || try == tries-1 {
			break
		}
		pause := time.Duration(try+1) * (10*time.Millisecond + rand.N(20*time.Millisecond))
		select {
		case <-ctx.Done():
			return p.wrap(errors.Join(err, ctx.Err()), "creating Landlord's owners table")
		case <-time.After(pause):
		}
	}
	return p.wrap(err, "creating Landlord's owners table")
}

func (p *postgres) createMarkers(ctx context.Context, conn *pgx.Conn) (int32, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return markersUnknown, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for _, stmt := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + pgOwnersSchema + " AUTHORIZATION CURRENT_USER",
		"REVOKE ALL ON SCHEMA " + pgOwnersSchema + " FROM PUBLIC",
		"CREATE TABLE IF NOT EXISTS " + pgOwnersTable + " (kind text NOT NULL, name text NOT NULL, tenant text NOT NULL, PRIMARY KEY (kind, name))",
		"REVOKE ALL ON TABLE " + pgOwnersTable + " FROM PUBLIC",
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			if !pgIs(err, pgerrcode.InsufficientPrivilege) {
				return markersUnknown, err
			}
			// PostgreSQL checks the right to create before it looks for what exists: an
			// administrator without it may still have been granted a table another created.
			_ = tx.Rollback(ctx)
			var exists bool
			if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $1::pg_catalog.name)", pgOwnersSchema).Scan(&exists); err != nil {
				return markersUnknown, err
			}
			if !exists {
				return markersInComments, nil
			}
			if err := p.checkMarkers(ctx, conn); err != nil {
				return markersUnknown, err
			}
			return markersInTable, nil
		}
	}
	if err := p.checkMarkers(ctx, tx); err != nil {
		return markersUnknown, err
	}
	return markersInTable, tx.Commit(ctx)
}

// checkMarkers refuses an owners table Landlord cannot trust or use. Writing a marker runs
// whatever the table's owner attached to it (a trigger, a rule, a row security policy) with the
// rights of the administrator writing, and the owner of the schema may replace the table: both
// must be this administrator, a superuser or a role holding this administrator's rights
// already, and the table a plain one with none of those. An
// administrator the table was not granted to is told which grants it needs, rather than taking
// every account marked there for one Landlord did not create.
func (p *postgres) checkMarkers(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	var (
		schemaOwner, tableOwner                  string
		schemaTrusted, tableTrusted, plain, used bool
		usable                                   bool
	)
	err := q.QueryRow(ctx, "SELECT pg_catalog.pg_get_userbyid(n.nspowner), n.nspowner = u.oid OR o.rolsuper OR pg_catalog.pg_has_role(n.nspowner, u.oid, 'MEMBER'),"+
		" pg_catalog.pg_get_userbyid(c.relowner), c.relowner = u.oid OR t.rolsuper OR pg_catalog.pg_has_role(c.relowner, u.oid, 'MEMBER'),"+
		" c.relkind = 'r' AND NOT c.relrowsecurity,"+
		" EXISTS (SELECT FROM pg_catalog.pg_trigger g WHERE g.tgrelid = c.oid) OR EXISTS (SELECT FROM pg_catalog.pg_rewrite w WHERE w.ev_class = c.oid),"+
		" pg_catalog.has_schema_privilege(n.oid, 'USAGE') AND pg_catalog.has_table_privilege(c.oid, 'SELECT') AND pg_catalog.has_table_privilege(c.oid, 'INSERT')"+
		" AND pg_catalog.has_table_privilege(c.oid, 'UPDATE') AND pg_catalog.has_table_privilege(c.oid, 'DELETE')"+
		" FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_roles o ON o.oid = n.nspowner"+
		" JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'owners'::pg_catalog.name"+
		" JOIN pg_catalog.pg_roles t ON t.oid = c.relowner"+
		" JOIN pg_catalog.pg_roles u ON u.rolname = CURRENT_USER"+
		" WHERE n.nspname = $1::pg_catalog.name", pgOwnersSchema).
		Scan(&schemaOwner, &schemaTrusted, &tableOwner, &tableTrusted, &plain, &used, &usable)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("schema %s exists in database postgres without Landlord's table %s: create it as a superuser "+
			"(CREATE TABLE %s (kind text NOT NULL, name text NOT NULL, tenant text NOT NULL, PRIMARY KEY (kind, name))) or drop the schema", pgOwnersSchema, pgOwnersTable, pgOwnersTable)
	case err != nil:
		return err
	case !schemaTrusted || !tableTrusted:
		return fmt.Errorf("Landlord's owners table %s (schema owned by %s, table by %s) is controlled by a role that is neither this administrator, a role holding its rights, nor a superuser: "+
			"Landlord does not write markers there; have a superuser take it over (ALTER SCHEMA %s OWNER TO ...; ALTER TABLE %s OWNER TO ...)",
			pgOwnersTable, schemaOwner, tableOwner, pgOwnersSchema, pgOwnersTable)
	case !plain || used:
		return fmt.Errorf("Landlord's owners table %s carries triggers, rules or row security, which would run with the rights of the administrator writing a marker: "+
			"Landlord does not write markers there until they are removed", pgOwnersTable)
	case !usable:
		return fmt.Errorf("Landlord's owners table %s holds the markers of the accounts on this server, and this administrator may not read and write it: "+
			"GRANT USAGE ON SCHEMA %s TO <administrator>; GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO <administrator>", pgOwnersTable, pgOwnersSchema, pgOwnersTable)
	}
	return nil
}

// concurrentlyUpdated reports PostgreSQL's answer to two sessions changing one catalog row (an
// ACL, say) at once.
func concurrentlyUpdated(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.InternalError && strings.Contains(pgErr.Message, "concurrently updated")
}

// advisoryKey maps a name into the 64-bit advisory lock space, keyed (see lockKeys) so that no
// tenant login can take Landlord's locks.
func (p *postgres) advisoryKey(name string) int64 {
	sum := p.locks.sum(name)
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// quietStatementLog turns off statement logging for the rest of the transaction. Only superusers
// (or roles granted SET on these parameters) may do that; any other administrator gets the
// server's own logging, inside a savepoint so that the refusal does not abort the transaction.
func quietStatementLog(ctx context.Context, tx pgx.Tx) error {
	return execUnless(ctx, tx, "SELECT pg_catalog.set_config('log_statement', 'none', true),"+
		" pg_catalog.set_config('log_min_error_statement', 'panic', true),"+
		" pg_catalog.set_config('log_min_duration_statement', '-1', true)",
		pgerrcode.InsufficientPrivilege)
}

// execUnless runs stmt in a savepoint of tx and takes a refusal with one of codes (SQLSTATEs) as
// nothing to do: the savepoint is rolled back, so the refusal does not abort the transaction.
func execUnless(ctx context.Context, tx pgx.Tx, stmt string, codes ...string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	_, err = sp.Exec(ctx, stmt)
	switch {
	case err == nil:
		return sp.Commit(ctx)
	case pgIs(err, codes...):
		return sp.Rollback(ctx)
	}
	return err
}

// quoteLiteral quotes s as an SQL string literal the way lib/pq's QuoteLiteral does: an
// escape-string literal when s holds a backslash, so that the result means the same whatever
// the server's standard_conforming_strings.
func quoteLiteral(s string) string {
	s = strings.ReplaceAll(s, "'", "''")
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(s, `\`, `\\`) + "'"
	}
	return "'" + s + "'"
}

// checkPassword rejects passwords that a server would refuse with an error quoting part of
// them: a NUL byte ends the statement text early (a syntax error then quotes the rest), and the
// server names the offending bytes of invalid UTF-8. An empty one would mean no password at all
// on MySQL.
func checkPassword(password string) error {
	switch {
	case password == "":
		return errors.New("empty password")
	case strings.ContainsRune(password, 0):
		return errors.New("password contains a NUL byte")
	case !utf8.ValidString(password):
		return errors.New("password is not valid UTF-8")
	}
	return nil
}

// pgIs reports whether err is nil or a server error with one of codes (SQLSTATEs); creating
// what already exists (duplicate, or a unique violation when two calls race) is the work done.
func pgIs(err error, codes ...string) bool {
	if err == nil {
		return true
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	for _, c := range codes {
		if pgErr.Code == c {
			return true
		}
	}
	return false
}

// checkTLS validates a server's TLS mode, treating an unset one as the strictest.
func checkTLS(m TLSMode) (TLSMode, error) {
	switch m = effectiveTLS(m); m {
	case TLSDisable, TLSRequire, TLSVerifyFull:
		return m, nil
	}
	return "", fmt.Errorf("unknown TLS mode %q", m)
}
