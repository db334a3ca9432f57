package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/landlord-dev/landlord/internal/database"
)

const connectTimeout = 10 * time.Second

// connect opens a pool that logs in as the target's login, to its database, under its TLS mode.
// Like sql.Open, it does not connect.
func connect(t Target) (*sql.DB, error) {
	mode := effectiveTLS(t.TLS)
	addr := net.JoinHostPort(t.Host, strconv.Itoa(int(t.Port)))
	custom, err := verifyingTLS(t, mode)
	if err != nil {
		return nil, err
	}
	switch t.Engine {
	case database.Postgres:
		// The password stays out of the connection string, so that no parse error can echo it.
		u := url.URL{Scheme: "postgres", User: url.User(t.Username), Host: addr,
			Path: "/" + t.Database, RawPath: "/" + url.PathEscape(t.Database),
			RawQuery: url.Values{"sslmode": {string(mode)}, "application_name": {"landlord-backup"}}.Encode()}
		cfg, err := pgx.ParseConfig(u.String())
		if err != nil {
			return nil, fmt.Errorf("postgres server %s: %w", addr, err)
		}
		cfg.Password = t.Password
		cfg.ConnectTimeout = connectTimeout
		if custom != nil {
			cfg.TLSConfig = custom
		}
		return stdlib.OpenDB(*cfg), nil
	case database.MySQL:
		cfg := mysql.NewConfig()
		cfg.User = t.Username
		cfg.Passwd = t.Password
		cfg.Net = "tcp"
		cfg.Addr = addr
		cfg.DBName = t.Database
		cfg.Timeout = connectTimeout
		switch mode {
		case database.TLSDisable:
			cfg.TLSConfig = "false"
		case database.TLSRequire:
			cfg.TLSConfig = "skip-verify"
		default:
			cfg.TLSConfig = "true"
		}
		if custom != nil {
			cfg.TLS = custom
		}
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("mysql server %s: %w", addr, err)
		}
		return sql.OpenDB(connector), nil
	}
	return nil, fmt.Errorf("unknown database engine %q", t.Engine)
}

// verifyingTLS verifies the server against the target's CA bundle under verify-full; nil leaves
// the drivers to the system roots.
func verifyingTLS(t Target, mode database.TLSMode) (*tls.Config, error) {
	if mode != database.TLSVerifyFull || len(t.CABundle) == 0 {
		return nil, nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(t.CABundle) {
		return nil, errors.New("the CA bundle holds no PEM certificate")
	}
	return &tls.Config{RootCAs: roots, ServerName: t.Host, MinVersion: tls.VersionTLS12}, nil
}

// serverVersion logs in as the target's login and reads the server's version.
func serverVersion(ctx context.Context, t Target) (string, error) {
	db, err := connect(t)
	if err != nil {
		return "", err
	}
	defer db.Close()
	query := "SELECT VERSION()"
	if t.Engine == database.Postgres {
		query = "SHOW server_version"
	}
	var v string
	if err := db.QueryRowContext(ctx, query).Scan(&v); err != nil {
		return "", fmt.Errorf("logging in to %s as %s to read the server's version: %w", t.Database, t.Username, err)
	}
	return v, nil
}

// majorVersion is what must match between the server a dump was taken from and the one it is
// restored into: PostgreSQL's first number (from 10; 9.6 before), MySQL's and MariaDB's first
// two, with which of the two it is.
func majorVersion(engine database.Engine, version string) (string, error) {
	num := version
	if i := strings.IndexFunc(num, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }); i >= 0 {
		num = num[:i]
	}
	parts := strings.Split(num, ".")
	first, err := strconv.Atoi(parts[0])
	unreadable := fmt.Errorf("server version %q is not one Landlord can read", version)
	if err != nil {
		return "", unreadable
	}
	if engine == database.Postgres && first >= 10 {
		return parts[0], nil // "16beta1" too
	}
	if len(parts) < 2 || parts[1] == "" {
		return "", unreadable
	}
	switch engine {
	case database.Postgres:
		return parts[0] + "." + parts[1], nil
	case database.MySQL:
		flavor := "MySQL"
		if strings.Contains(strings.ToLower(version), "mariadb") {
			flavor = "MariaDB"
		}
		return flavor + " " + parts[0] + "." + parts[1], nil
	}
	return "", fmt.Errorf("unknown database engine %q", engine)
}

// CanLogin reports whether the target's login logs in to its database with the target's
// password: a database move checks, before its switch, that the fence it put on the old login
// still held while its copy ran.
func CanLogin(ctx context.Context, t Target) error {
	db, err := connect(t)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	return db.PingContext(ctx)
}

// LoginRefused reports whether err is the server refusing the login's credentials (PostgreSQL's
// invalid_password or invalid_authorization_specification, MySQL's and MariaDB's access
// denied), rather than failing to answer.
func LoginRefused(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "28P01" || pgErr.Code == "28000"
	}
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1045
}
