// Command migrator is a test program of migration Jobs: `migrator PREFIX STATEMENT...` connects to
// the database the environment variable PREFIX_URL describes (a tenant's connection URL, as
// internal/database.URL writes it: postgres://user:password@host:port/db?sslmode=MODE or
// mysql://user:password@host:port/db[?tls=...]), runs each statement in order, and exits 0.
// On any error it writes the error, never the password, to the file TERMINATION_LOG names (else
// /dev/termination-log, when writable: a container's termination message) and to stderr, and
// exits 1. It logs one line per statement run.
//
// The tests run it as a Job's container on the local cluster (testenv.MigratorImage); the
// operator never imports it.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// defaultTerminationLog is where a container writes why it ended.
const defaultTerminationLog = "/dev/termination-log"

// run is the program; it returns its exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := migrate(ctx, args, getenv, stdout)
	if err == nil {
		return 0
	}
	msg := "migrator: " + err.Error()
	fmt.Fprintln(stderr, msg)
	if path := getenv("TERMINATION_LOG"); path != "" {
		if err := os.WriteFile(path, []byte(msg), 0o600); err != nil {
			fmt.Fprintln(stderr, "migrator: writing the termination message:", err)
		}
	} else if f, err := os.OpenFile(defaultTerminationLog, os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		_, _ = f.WriteString(msg)
		_ = f.Close()
	}
	return 1
}

// migrate runs the statements of args against the database of args[0]_URL.
func migrate(ctx context.Context, args []string, getenv func(string) string, log io.Writer) error {
	if len(args) < 2 {
		return errors.New("usage: migrator PREFIX STATEMENT... (connects to the database of PREFIX_URL)")
	}
	variable := args[0] + "_URL"
	raw := getenv(variable)
	if raw == "" {
		return fmt.Errorf("%s is not set", variable)
	}
	target, err := parseURL(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", variable, err)
	}
	db, err := target.open()
	if err != nil {
		return target.scrub(fmt.Errorf("%s: %w", variable, err))
	}
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for i, stmt := range args[1:] {
		start := time.Now()
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return target.scrub(fmt.Errorf("statement %d of %d: %w", i+1, len(args)-1, err))
		}
		fmt.Fprintf(log, "migrator: ran statement %d of %d on %s (%s): %s\n", i+1, len(args)-1, target.redacted, time.Since(start).Round(time.Millisecond), summary(stmt))
	}
	return nil
}

// summary is a statement's first line, cut short, for the log.
func summary(stmt string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(stmt), "\n")
	if len(line) > 60 {
		line = line[:60] + "..."
	}
	return line
}

// target is a parsed connection URL.
type target struct {
	engine string // postgres or mysql
	pg     *pgx.ConnConfig
	my     *mysql.Config
	// password is kept out of every message; redacted is the URL without it.
	password, redacted string
}

// parseURL reads a tenant's connection URL. Its errors never quote the URL, which holds the
// password.
func parseURL(raw string) (*target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	password, _ := u.User.Password()
	t := &target{password: password, redacted: u.Redacted()}
	switch u.Scheme {
	case "postgres", "postgresql":
		cfg, err := pgx.ParseConfig(raw)
		if err != nil {
			return nil, t.scrub(err)
		}
		t.engine, t.pg = "postgres", cfg
	case "mysql":
		cfg := mysql.NewConfig()
		cfg.Net = "tcp"
		cfg.User = u.User.Username()
		cfg.Passwd = password
		host, port := u.Hostname(), u.Port()
		if host == "" {
			return nil, errors.New("the URL names no host")
		}
		if port == "" {
			port = "3306"
		}
		cfg.Addr = net.JoinHostPort(host, port)
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		cfg.TLSConfig = "false"
		for k, v := range u.Query() {
			switch k {
			case "tls":
				// internal/database.URL's values: true, skip-verify (and false).
				cfg.TLSConfig = v[0]
			default:
				return nil, fmt.Errorf("the URL's parameter %q is not one migrator reads", k)
			}
		}
		cfg.Timeout = 10 * time.Second
		t.engine, t.my = "mysql", cfg
	default:
		return nil, fmt.Errorf("the URL's scheme %q is neither postgres nor mysql", u.Scheme)
	}
	return t, nil
}

func (t *target) open() (*sql.DB, error) {
	if t.pg != nil {
		return stdlib.OpenDB(*t.pg), nil
	}
	connector, err := mysql.NewConnector(t.my)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// scrub replaces the password wherever an error would quote it.
func (t *target) scrub(err error) error {
	if err == nil || t.password == "" || !strings.Contains(err.Error(), t.password) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), t.password, "xxxxx"))
}
