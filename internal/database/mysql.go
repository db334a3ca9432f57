package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MySQL and MariaDB error numbers that mean another call, or an earlier one, already did the
// work, or that the session to end has already gone.
const (
	myDatabaseExists  = 1007
	myOperationFailed = 1396 // CREATE USER for an existing user, ALTER/DROP USER for a missing one
	myUnknownThread   = 1094
	// mySpecificAccessDenied: the statement needs a privilege (SUPER, for SET sql_log_off) the
	// administrator lacks.
	mySpecificAccessDenied = 1227
)

// myStatementTimeout bounds a hung server; it is generous because dropping a large database
// takes a while.
const myStatementTimeout = 30 * time.Second

type mysqlServer struct {
	db   *sql.DB
	addr string
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
	db.SetMaxOpenConns(maxAdminConns)
	db.SetMaxIdleConns(maxAdminConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return &mysqlServer{db: db, addr: cfg.Addr}, nil
}

func (m *mysqlServer) Version(ctx context.Context) (string, error) {
	var v string
	if err := m.db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return "", m.wrap(err, "reading version")
	}
	return v, nil
}

func (m *mysqlServer) Ensure(ctx context.Context, acct Account) error {
	if err := checkPassword(acct.Password); err != nil {
		return err
	}
	// utf8mb4 because MariaDB still defaults to latin1, which cannot store most of the world's text.
	if _, err := m.db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteMySQLIdent(acct.Database)+" CHARACTER SET utf8mb4"); !myIs(err, myDatabaseExists) {
		return m.wrap(err, "creating database %q", acct.Database)
	}
	err := m.unlogged(ctx, func(conn *sql.Conn) error {
		// IDENTIFIED BY belongs in CREATE USER too: a user created without it could log in with
		// an empty password until the ALTER USER below.
		if _, err := conn.ExecContext(ctx, "CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?", acct.Username, acct.Password); !myIs(err, myOperationFailed) {
			return m.wrap(err, "creating user %q", acct.Username)
		}
		if _, err := conn.ExecContext(ctx, "ALTER USER ?@'%' IDENTIFIED BY ?", acct.Username, acct.Password); err != nil {
			return m.wrap(err, "setting the password of user %q", acct.Username)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := m.db.ExecContext(ctx, "GRANT ALL PRIVILEGES ON "+grantPattern(acct.Database)+".* TO ?@'%'", acct.Username); err != nil {
		return m.wrap(err, "granting user %q access to database %q", acct.Username, acct.Database)
	}
	return nil
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

func (m *mysqlServer) Drop(ctx context.Context, database, username string) error {
	// The user goes first so that no new session can start while the old ones are ended.
	if _, err := m.db.ExecContext(ctx, "DROP USER IF EXISTS ?@'%'", username); err != nil {
		return m.wrap(err, "dropping user %q", username)
	}
	// A tenant session inside a transaction holds metadata locks that would make DROP DATABASE
	// wait for lock_wait_timeout (a year by default); end them, as PostgreSQL's FORCE does.
	if err := m.killSessions(ctx, username); err != nil {
		return err
	}
	if _, err := m.db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteMySQLIdent(database)); err != nil {
		return m.wrap(err, "dropping database %q", database)
	}
	return nil
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
	return m.db.Close()
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
