// Package database provisions tenant databases on shared servers: one database and one login
// per tenant database, with a generated password. A Provisioner speaks one engine's SQL; the
// tenant controller decides when to call it and never drops anything outside the Purged state.
package database

import (
	"context"
	"fmt"
)

// Engine is a database server's SQL dialect.
type Engine string

const (
	Postgres Engine = "postgres"
	MySQL    Engine = "mysql"
)

// TLSMode is how connections to a server are encrypted.
type TLSMode string

const (
	// TLSDisable sends everything in clear text (loopback and test servers only).
	TLSDisable TLSMode = "disable"
	// TLSRequire encrypts without verifying the server's certificate.
	TLSRequire TLSMode = "require"
	// TLSVerifyFull encrypts and verifies the certificate and host name against the system roots.
	TLSVerifyFull TLSMode = "verify-full"
)

// Server is where a database server listens and how Landlord logs in to it as its administrator.
type Server struct {
	Engine Engine
	Host   string
	Port   int32
	// TLS applies to Landlord's connections and to the tenants' URLs; unset means TLSVerifyFull.
	TLS TLSMode
	// CABundle, PEM, verifies the server's certificate under TLSVerifyFull instead of the system
	// roots: a private CA, as managed database services use.
	CABundle []byte
	// AdminUser needs to create databases and logins: a superuser, or on PostgreSQL a role with
	// CREATEROLE and CREATEDB (Landlord then makes it a member of each tenant's login role).
	AdminUser     string
	AdminPassword string
	// ConnectionLimit caps each tenant login's concurrent sessions; 0 leaves them unlimited.
	ConnectionLimit int32
}

// Account is one tenant database and the login that owns it. Names usually come from Names, but
// the provisioners quote any name the server accepts.
type Account struct {
	Database string
	Username string
	Password string
	// Owner is the UID of the tenant the account belongs to. Ensure marks the database and the
	// login with it, and no call uses, changes or drops a database or login marked otherwise.
	Owner string
	// Adopt, when set, is the UID of an earlier tenant whose database and login the account
	// takes over: Ensure re-marks them as Owner's. Only an explicit request sets it.
	Adopt string
	// AdoptUnmarked lets Ensure mark a database and login that carry no marker: those created
	// by a Landlord release that did not mark them, for the tenant that has them in its status.
	// Anything else unmarked was not created by Landlord and is refused.
	AdoptUnmarked bool
	// MustExist, set while an adopted database and login are first taken over, refuses one that
	// does not exist (a *MissingError) rather than creating it: the data to adopt is elsewhere
	// (a DatabaseServer of the same name that is another machine), and an empty database under
	// the adopted password would hide that, and strand the data.
	MustExist bool
}

// ServerInfo is what a check reads of a server.
type ServerInfo struct {
	Version string
	// MaxConnections is the server's max_connections; Reserved, the slots of them only a
	// superuser (PostgreSQL's superuser_reserved_connections and reserved_connections) may take.
	MaxConnections, Reserved int
	// Unconfined lists what PUBLIC keeps on the server's shared databases that Landlord would
	// take from it (PostgreSQL: "CONNECT on database postgres"), because its administrator
	// neither owns them nor is a superuser; empty when confined, and on MySQL and MariaDB.
	Unconfined []string
}

// Provisioner creates, converges and drops tenant databases on one server. Every method is
// idempotent and safe to run concurrently with itself for the same account.
type Provisioner interface {
	// Check logs in and reads the server's version and connection slots; it is the
	// reachability check. It has a connection of its own: a server whose every administrator
	// session is busy (provisioning, or waiting on a lock) still answers it.
	Check(ctx context.Context) (ServerInfo, error)
	// Ensure creates the database and its login when missing, marked as acct.Owner's, sets the
	// login's password to acct.Password, and grants the login every privilege on its database
	// and nothing else. A database or login that exists and is not the account's (see Account)
	// is left untouched and reported as a *ForeignError.
	Ensure(ctx context.Context, acct Account) error
	// Holds reports whether the server holds the account's database or its login, whoever they
	// belong to. It changes nothing.
	Holds(ctx context.Context, acct Account) (bool, error)
	// Drop removes the database and its login, ending the login's open sessions; missing ones
	// are not an error. Nothing is dropped when either is not the account's: the error is a
	// *ForeignError.
	Drop(ctx context.Context, acct Account) error
	// Disconnect ends the open sessions of the account's login, and changes nothing else. With
	// Ensure giving the login a password its applications do not hold, it fences them off the
	// database (a move's cut-over). A login marked as another tenant's is left alone (a
	// *ForeignError).
	Disconnect(ctx context.Context, acct Account) error
	// SetConnectionLimit gives the account's existing login the server's connection limit, and
	// changes nothing else: not its password, nor its database. A login marked as another
	// tenant's is left alone (a *ForeignError).
	SetConnectionLimit(ctx context.Context, acct Account) error
	// Sizes reads, in one query, the bytes each database on the server holds, as the server
	// reports them (PostgreSQL's pg_database_size; MariaDB's and MySQL's data and index lengths,
	// which InnoDB estimates), by database name. A database the administrator may not measure is
	// left out. It changes nothing.
	Sizes(ctx context.Context) (map[string]int64, error)
	// Close releases the administrator connections.
	Close() error
}

// Open returns the provisioner for a server's engine. It connects lazily: an unreachable server
// is reported by the first call, not by Open.
func Open(s Server) (Provisioner, error) {
	switch s.Engine {
	case Postgres:
		return openPostgres(s)
	case MySQL:
		return openMySQL(s)
	}
	return nil, fmt.Errorf("unknown database engine %q", s.Engine)
}
