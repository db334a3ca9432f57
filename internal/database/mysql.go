package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQL and MariaDB error numbers that mean another call, or an earlier one, already did the
// work, or that the session to end has already gone.
const (
	myDatabaseExists  = 1007
	myOperationFailed = 1396 // CREATE USER for an existing user, ALTER/DROP USER for a missing one
	myUnknownThread   = 1094
	myNoSuchTable     = 1146
	// mySpecificAccessDenied: the statement needs a privilege (SUPER, for SET sql_log_off) the
	// administrator lacks.
	mySpecificAccessDenied = 1227
)

// myStatementTimeout bounds a hung server; it is generous because dropping a large database
// takes a while.
const myStatementTimeout = 30 * time.Second

type mysqlServer struct {
	db *sql.DB
	// health is the check's own connection (see Provisioner.Check); measure is Sizes' own (see
	// the PostgreSQL one).
	health, measure *sql.DB
	addr            string
	connLimit       int32
	// ownersReady: the bookkeeping table is known to exist.
	ownersReady atomic.Bool
	locks       lockKeys
}

func openMySQL(s Server) (Provisioner, error) {
	mode, err := checkTLS(s.TLS)
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	cfg.User = s.AdminUser
	cfg.Passwd = s.AdminPassword
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(s.Host, strconv.Itoa(int(s.Port)))
	cfg.TLSConfig = mysqlTLS(mode)
	custom, err := tlsConfig(s, mode)
	if err != nil {
		return nil, fmt.Errorf("mysql server %s: %w", cfg.Addr, err)
	}
	if custom != nil {
		cfg.TLS = custom
	}
	cfg.Timeout = connectTimeout
	cfg.ReadTimeout = myStatementTimeout
	cfg.WriteTimeout = myStatementTimeout
	// Account statements (CREATE USER ... IDENTIFIED BY, GRANT) cannot be prepared, so the driver
	// quotes the arguments itself, following the session's NO_BACKSLASH_ESCAPES mode.
	cfg.InterpolateParams = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql server %s: %w", cfg.Addr, err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(MaxAdminConns)
	db.SetMaxIdleConns(MaxAdminConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	health := sql.OpenDB(connector)
	health.SetMaxOpenConns(1)
	health.SetMaxIdleConns(1)
	health.SetConnMaxIdleTime(5 * time.Minute)
	measure := sql.OpenDB(connector)
	measure.SetMaxOpenConns(1)
	measure.SetMaxIdleConns(1)
	measure.SetConnMaxIdleTime(5 * time.Minute)
	return &mysqlServer{db: db, health: health, measure: measure, addr: cfg.Addr, connLimit: s.ConnectionLimit, locks: newLockKeys(s)}, nil
}

func (m *mysqlServer) Check(ctx context.Context) (ServerInfo, error) {
	var info ServerInfo
	// MySQL and MariaDB keep one slot beyond max_connections for an administrator
	// (CONNECTION_ADMIN, SUPER): none of max_connections is reserved.
	if err := m.health.QueryRowContext(ctx, "SELECT VERSION(), @@max_connections").Scan(&info.Version, &info.MaxConnections); err != nil {
		return ServerInfo{}, m.wrap(err, "reading version and connection slots")
	}
	return info, nil
}

// Sizes sums each schema's data and index lengths as information_schema reports them (InnoDB's
// are estimates, refreshed by the server's statistics), over the schemas the administrator sees.
// It runs on a connection of its own (see the PostgreSQL Sizes).
func (m *mysqlServer) Sizes(ctx context.Context) (map[string]int64, error) {
	rows, err := m.measure.QueryContext(ctx, "SELECT s.SCHEMA_NAME, CAST(COALESCE(SUM(t.DATA_LENGTH + t.INDEX_LENGTH), 0) AS SIGNED)"+
		" FROM information_schema.SCHEMATA s LEFT JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = s.SCHEMA_NAME"+
		" WHERE s.SCHEMA_NAME NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') GROUP BY s.SCHEMA_NAME")
	if err != nil {
		return nil, m.wrap(err, "reading database sizes")
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var bytes int64
		if err := rows.Scan(&name, &bytes); err != nil {
			return nil, m.wrap(err, "reading database sizes")
		}
		out[name] = bytes
	}
	if err := rows.Err(); err != nil {
		return nil, m.wrap(err, "reading database sizes")
	}
	return out, nil
}

func (m *mysqlServer) Ensure(ctx context.Context, acct Account) error {
	if err := checkPassword(acct.Password); err != nil {
		return err
	}
	return m.examined(ctx, acct, func(conn *sql.Conn, u, d found) error {
		remarkUser, err := u.claim(acct, false)
		if err != nil {
			return err
		}
		remarkDB, err := d.claim(acct, false)
		if err != nil {
			return err
		}
		// The marker is written before the object is created, so nothing of Landlord's exists
		// unmarked; a marker without its object (a crash between the two) is harmless.
		for _, f := range []struct {
			found
			remark bool
		}{{u, remarkUser}, {d, remarkDB}} {
			if f.remark {
				if _, err := conn.ExecContext(ctx, "REPLACE INTO "+ownersTable+" (kind, name, tenant) VALUES (?, ?, ?)", f.object, f.name, acct.Owner); err != nil {
					return m.wrap(err, "marking %s %q", f.object, f.name)
				}
			}
		}
		// utf8mb4 because MariaDB still defaults to latin1, which cannot store most of the world's text.
		if _, err := conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteMySQLIdent(acct.Database)+" CHARACTER SET utf8mb4"); !myIs(err, myDatabaseExists) {
			return m.wrap(err, "creating database %q", acct.Database)
		}
		limit := " WITH MAX_USER_CONNECTIONS " + strconv.Itoa(int(max(m.connLimit, 0)))
		// IDENTIFIED BY belongs in CREATE USER too: a user created without it could log in with
		// an empty password until the ALTER USER below.
		if _, err := conn.ExecContext(ctx, "CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?"+limit, acct.Username, acct.Password); !myIs(err, myOperationFailed) {
			return m.wrap(redact(err, acct.Password), "creating user %q", acct.Username)
		}
		if _, err := conn.ExecContext(ctx, "ALTER USER ?@'%' IDENTIFIED BY ?"+limit, acct.Username, acct.Password); err != nil {
			return m.wrap(redact(err, acct.Password), "setting the password of user %q", acct.Username)
		}
		if _, err := conn.ExecContext(ctx, "GRANT ALL PRIVILEGES ON "+grantPattern(acct.Database)+".* TO ?@'%'", acct.Username); err != nil {
			return m.wrap(err, "granting user %q access to database %q", acct.Username, acct.Database)
		}
		return nil
	})
}

func (m *mysqlServer) SetConnectionLimit(ctx context.Context, acct Account) error {
	return m.examined(ctx, acct, func(conn *sql.Conn, u, _ found) error {
		if err := u.limitable(acct); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "ALTER USER ?@'%' WITH MAX_USER_CONNECTIONS "+strconv.Itoa(int(max(m.connLimit, 0))), acct.Username); err != nil {
			return m.wrap(err, "setting the connection limit of user %q", acct.Username)
		}
		return nil
	})
}

// ownersTable is where Landlord marks the databases and users it creates on a MySQL server,
// which, unlike PostgreSQL, cannot comment on a user. Its schema's name has no '_', so no
// tenant database (see Names) can take it, and no tenant login is granted anything on it.
const (
	ownersSchema = "landlord"
	ownersTable  = "`" + ownersSchema + "`.`owners`"
)

// inspect reads whether the account's user and database exist and whom their markers name.
func (m *mysqlServer) inspect(ctx context.Context, conn *sql.Conn, acct Account) (user, db found, err error) {
	user = found{object: "login", name: acct.Username}
	db = found{object: "database", name: acct.Database}
	// A user of the name from any host counts: Landlord creates only user@'%', and an existing
	// user@'localhost' of the name is someone else's login that MySQL would prefer over it.
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) > 0 FROM mysql.user WHERE User = ?", acct.Username).Scan(&user.exists); err != nil {
		return user, db, m.wrap(err, "reading user %q", acct.Username)
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) > 0 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", acct.Database).Scan(&db.exists); err != nil {
		return user, db, m.wrap(err, "reading database %q", acct.Database)
	}
	for _, f := range []*found{&user, &db} {
		err := conn.QueryRowContext(ctx, "SELECT tenant FROM "+ownersTable+" WHERE kind = ? AND name = ?", f.object, f.name).Scan(&f.owner)
		switch {
		case err == nil:
			f.marked = f.owner != ""
		case !errors.Is(err, sql.ErrNoRows):
			return user, db, m.wrap(err, "reading the marker of %s %q", f.object, f.name)
		}
	}
	return user, db, nil
}

// session runs fn on one connection holding named locks on the account's database and user
// (two Landlord replicas, or two reconciles, must not interleave the look and the change) with
// the general query log off where the administrator may turn it off, and the bookkeeping
// table in place.
func (m *mysqlServer) session(ctx context.Context, acct Account, fn func(*sql.Conn) error) error {
	return m.unlogged(ctx, func(conn *sql.Conn) error {
		for _, name := range []string{"database/" + acct.Database, "user/" + acct.Username} {
			var got sql.NullInt64
			if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", m.lockName(name), int(myStatementTimeout.Seconds())).Scan(&got); err != nil {
				return m.wrap(err, "locking %s", name)
			}
			if !got.Valid || got.Int64 != 1 {
				return m.wrap(errors.New("timed out"), "locking %s", name)
			}
		}
		defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_ALL_LOCKS()") }()
		if err := m.ensureOwnersTable(ctx, conn); err != nil {
			return err
		}
		err := fn(conn)
		if err != nil && myIs(err, myNoSuchTable) {
			// Dropped behind Landlord's back: created again on the next call.
			m.ownersReady.Store(false)
		}
		return err
	})
}

// ensureOwnersTable creates the bookkeeping table once per provisioner, not on every call.
func (m *mysqlServer) ensureOwnersTable(ctx context.Context, conn *sql.Conn) error {
	if m.ownersReady.Load() {
		return nil
	}
	for _, stmt := range []string{
		"CREATE DATABASE IF NOT EXISTS `" + ownersSchema + "` CHARACTER SET utf8mb4",
		"CREATE TABLE IF NOT EXISTS " + ownersTable + " (kind VARCHAR(16) NOT NULL, name VARCHAR(128) NOT NULL," +
			" tenant VARCHAR(64) NOT NULL, PRIMARY KEY (kind, name)) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return m.wrap(err, "creating Landlord's bookkeeping table")
		}
	}
	m.ownersReady.Store(true)
	return nil
}

// lockName is a named lock's name: keyed (see lockKeys) so that no tenant login can take it,
// and cut to fit MySQL's 64 characters; the prefix keeps Landlord's locks apart from other
// programs'.
func (m *mysqlServer) lockName(name string) string {
	sum := m.locks.sum(name)
	return "landlord/" + hex.EncodeToString(sum[:16])
}

// unlogged runs fn on one connection whose statements the general query log does not record:
// account statements carry the password as a literal (they cannot be prepared), and MariaDB's
// general log, when an administrator turns it on, records statement text as sent. Turning it
// off takes SUPER; an administrator without it gets the server's own logging. The connection
// is reset before it goes back to the pool, or discarded when that fails.
func (m *mysqlServer) unlogged(ctx context.Context, fn func(*sql.Conn) error) error {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return m.wrap(err, "connecting")
	}
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, "SET SESSION sql_log_off = ON")
	quiet := err == nil
	if !quiet && !myIs(err, mySpecificAccessDenied) {
		return m.wrap(err, "turning off the query log for the session")
	}
	err = fn(conn)
	if quiet {
		if _, resetErr := conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION sql_log_off = OFF"); resetErr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}
	return err
}

// examined runs fn in the account's session with what the server holds of the account, read
// first: everything is looked at before anything is changed, so a refused account leaves no
// trace.
func (m *mysqlServer) examined(ctx context.Context, acct Account, fn func(conn *sql.Conn, user, db found) error) error {
	if err := checkOwner(acct); err != nil {
		return err
	}
	return m.session(ctx, acct, func(conn *sql.Conn) error {
		u, d, err := m.inspect(ctx, conn, acct)
		if err != nil {
			return err
		}
		return fn(conn, u, d)
	})
}

func (m *mysqlServer) Holds(ctx context.Context, acct Account) (bool, error) {
	var held bool
	if err := m.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM mysql.user WHERE User = ?)"+
		" OR EXISTS (SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?)", acct.Username, acct.Database).Scan(&held); err != nil {
		return false, m.wrap(err, "looking for database %q and user %q", acct.Database, acct.Username)
	}
	return held, nil
}

func (m *mysqlServer) Drop(ctx context.Context, acct Account) error {
	return m.examined(ctx, acct, func(conn *sql.Conn, u, d found) error {
		for _, f := range []found{u, d} {
			if _, err := f.claim(acct, false); err != nil {
				return err
			}
		}
		// The user goes first so that no new session can start while the old ones are ended.
		if _, err := conn.ExecContext(ctx, "DROP USER IF EXISTS ?@'%'", acct.Username); err != nil {
			return m.wrap(err, "dropping user %q", acct.Username)
		}
		// A tenant session inside a transaction holds metadata locks that would make DROP
		// DATABASE wait for lock_wait_timeout (a year by default); end them, as PostgreSQL's
		// FORCE does.
		if err := m.killSessions(ctx, acct.Username); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteMySQLIdent(acct.Database)); err != nil {
			return m.wrap(err, "dropping database %q", acct.Database)
		}
		if _, err := conn.ExecContext(ctx, "DELETE FROM "+ownersTable+" WHERE (kind = 'login' AND name = ?) OR (kind = 'database' AND name = ?)", acct.Username, acct.Database); err != nil {
			return m.wrap(err, "removing the markers of %q", acct.Database)
		}
		return nil
	})
}

func (m *mysqlServer) Disconnect(ctx context.Context, acct Account) error {
	return m.examined(ctx, acct, func(_ *sql.Conn, u, _ found) error {
		if _, err := u.claim(acct, false); err != nil {
			return err
		}
		return m.killSessions(ctx, acct.Username)
	})
}

func (m *mysqlServer) killSessions(ctx context.Context, username string) error {
	rows, err := m.db.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", username)
	if err != nil {
		return m.wrap(err, "listing the sessions of user %q", username)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return m.wrap(err, "listing the sessions of user %q", username)
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return m.wrap(err, "listing the sessions of user %q", username)
	}
	for _, id := range ids {
		if _, err := m.db.ExecContext(ctx, "KILL CONNECTION ?", id); !myIs(err, myUnknownThread) {
			return m.wrap(err, "ending session %d of user %q", id, username)
		}
	}
	return nil
}

func (m *mysqlServer) Close() error {
	return errors.Join(m.db.Close(), m.health.Close(), m.measure.Close())
}

func (m *mysqlServer) wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("mysql server %s: %s: %w", m.addr, fmt.Sprintf(format, args...), err)
}

// quoteMySQLIdent quotes an identifier in backticks; a backtick inside is doubled, and nothing
// else is special there, whatever the SQL mode.
func quoteMySQLIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// grantPattern quotes a database name for GRANT ... ON db.*, where the name is a LIKE-style
// pattern: unescaped, the '_' in every Landlord name would match any character, and a grant on
// "a_b" would also open a database "axb" that belongs to someone else.
func grantPattern(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch r {
		case '\\', '_', '%':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return quoteMySQLIdent(b.String())
}

// myIs reports whether err is nil or a server error with one of numbers.
func myIs(err error, numbers ...uint16) bool {
	if err == nil {
		return true
	}
	var myErr *mysql.MySQLError
	if !errors.As(err, &myErr) {
		return false
	}
	for _, n := range numbers {
		if myErr.Number == n {
			return true
		}
	}
	return false
}
