package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAConnectionURLIsReadAsTheOperatorWritesIt(t *testing.T) {
	for _, tc := range []struct {
		name, url       string
		engine, address string
		database, tls   string
	}{
		{name: "a PostgreSQL URL with its TLS mode", url: "postgres://app_1:p%40ss@db.example.com:5433/app?sslmode=disable",
			engine: "postgres", address: "db.example.com:5433", database: "app"},
		{name: "a MySQL URL without TLS", url: "mysql://legacy_1:p%40ss@127.0.0.1:3307/legacy",
			engine: "mysql", address: "127.0.0.1:3307", database: "legacy", tls: "false"},
		{name: "a MySQL URL with TLS unverified", url: "mysql://legacy_1:p%40ss@db:3306/legacy?tls=skip-verify",
			engine: "mysql", address: "db:3306", database: "legacy", tls: "skip-verify"},
		{name: "a MySQL URL without a port", url: "mysql://legacy_1:p%40ss@db/legacy?tls=true",
			engine: "mysql", address: "db:3306", database: "legacy", tls: "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, err := parseURL(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if target.engine != tc.engine || target.password != "p@ss" || strings.Contains(target.redacted, "p@ss") || strings.Contains(target.redacted, "p%40ss") {
				t.Errorf("engine %s, password %q, redacted %q", target.engine, target.password, target.redacted)
			}
			switch tc.engine {
			case "postgres":
				if target.pg.Host+":5433" != tc.address || target.pg.Database != tc.database || target.pg.User != "app_1" || target.pg.Password != "p@ss" {
					t.Errorf("pgx config %+v", target.pg)
				}
			case "mysql":
				if target.my.Addr != tc.address || target.my.DBName != tc.database || target.my.User != "legacy_1" || target.my.Passwd != "p@ss" || target.my.TLSConfig != tc.tls {
					t.Errorf("mysql config %+v", target.my)
				}
			}
		})
	}
}

func TestAFailureIsWrittenWithoutThePassword(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "no statement", args: []string{"APP"}, want: "usage: migrator PREFIX STATEMENT..."},
		{name: "no URL", args: []string{"APP", "SELECT 1"}, want: "APP_URL is not set"},
		{name: "a URL that does not parse", args: []string{"APP", "SELECT 1"},
			env: map[string]string{"APP_URL": "postgres://u:hunter2@host:notaport/db"}, want: "APP_URL: "},
		{name: "a URL of another engine", args: []string{"APP", "SELECT 1"},
			env: map[string]string{"APP_URL": "redis://u:hunter2@host:6379/0"}, want: `scheme "redis" is neither postgres nor mysql`},
		{name: "a server that does not answer", args: []string{"APP", "SELECT 1"},
			env: map[string]string{"APP_URL": "postgres://u:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"}, want: "statement 1 of 1: "},
	} {
		t.Run(tc.name+" fails, and says so in the termination message and on stderr", func(t *testing.T) {
			termination := filepath.Join(t.TempDir(), "termination-log")
			env := map[string]string{"TERMINATION_LOG": termination}
			for k, v := range tc.env {
				env[k] = v
			}
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if code := run(ctx, tc.args, func(k string) string { return env[k] }, &stdout, &stderr); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			msg, err := os.ReadFile(termination)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(msg), tc.want) || strings.Contains(string(msg), "hunter2") {
				t.Errorf("termination message %q, want %q and no password", msg, tc.want)
			}
			if strings.TrimSpace(stderr.String()) != string(msg) {
				t.Errorf("stderr %q, want the termination message %q", stderr.String(), msg)
			}
		})
	}
}
