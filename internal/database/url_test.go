package database

import (
	"net/url"
	"testing"
)

func TestURL(t *testing.T) {
	acct := Account{Database: "acme_orders", Username: "acme_orders", Password: "s3cret"}
	tests := []struct {
		name   string
		server Server
		acct   Account
		want   string
	}{
		{
			name:   "postgres carries its sslmode",
			server: Server{Engine: Postgres, Host: "db.example.com", Port: 5432, TLS: TLSVerifyFull},
			acct:   acct,
			want:   "postgres://acme_orders:s3cret@db.example.com:5432/acme_orders?sslmode=verify-full",
		},
		{
			name:   "postgres without TLS says so",
			server: Server{Engine: Postgres, Host: "127.0.0.1", Port: 15432, TLS: TLSDisable},
			acct:   acct,
			want:   "postgres://acme_orders:s3cret@127.0.0.1:15432/acme_orders?sslmode=disable",
		},
		{
			name:   "an unset TLS mode means verify-full",
			server: Server{Engine: Postgres, Host: "db", Port: 5432},
			acct:   acct,
			want:   "postgres://acme_orders:s3cret@db:5432/acme_orders?sslmode=verify-full",
		},
		{
			name:   "mysql without TLS has no query",
			server: Server{Engine: MySQL, Host: "db", Port: 3306, TLS: TLSDisable},
			acct:   acct,
			want:   "mysql://acme_orders:s3cret@db:3306/acme_orders",
		},
		{
			name:   "mysql with required TLS skips verification",
			server: Server{Engine: MySQL, Host: "db", Port: 3306, TLS: TLSRequire},
			acct:   acct,
			want:   "mysql://acme_orders:s3cret@db:3306/acme_orders?tls=skip-verify",
		},
		{
			name:   "mysql with verify-full verifies",
			server: Server{Engine: MySQL, Host: "db", Port: 3306, TLS: TLSVerifyFull},
			acct:   acct,
			want:   "mysql://acme_orders:s3cret@db:3306/acme_orders?tls=true",
		},
		{
			name:   "an IPv6 host is bracketed",
			server: Server{Engine: MySQL, Host: "::1", Port: 3306, TLS: TLSDisable},
			acct:   acct,
			want:   "mysql://acme_orders:s3cret@[::1]:3306/acme_orders",
		},
		{
			name:   "an unknown engine has no URL",
			server: Server{Engine: "oracle", Host: "db", Port: 1521},
			acct:   acct,
			want:   "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := URL(tc.server, tc.acct); got != tc.want {
				t.Errorf("URL() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestURLEscapesCredentialsAndDatabase(t *testing.T) {
	acct := Account{Database: "we/ird db?#", Username: "us@r:x", Password: "p@ss:w/o?rd#%"}
	for _, engine := range []Engine{Postgres, MySQL} {
		t.Run(string(engine), func(t *testing.T) {
			raw := URL(Server{Engine: engine, Host: "db", Port: 1, TLS: TLSRequire}, acct)
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("URL %q does not parse: %v", raw, err)
			}
			pw, _ := u.User.Password()
			if u.User.Username() != acct.Username || pw != acct.Password {
				t.Errorf("URL %q parses to user %q password %q", raw, u.User.Username(), pw)
			}
			if u.Path != "/"+acct.Database {
				t.Errorf("URL %q parses to path %q", raw, u.Path)
			}
			if u.Host != "db:1" {
				t.Errorf("URL %q parses to host %q", raw, u.Host)
			}
		})
	}
}
