package database

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strconv"
)

// URL returns the connection URL a tenant application uses to reach its database:
// postgres://user:password@host:port/db?sslmode=MODE, or mysql://user:password@host:port/db with
// ?tls=skip-verify or ?tls=true unless TLS is disabled. It returns "" for an unknown engine.
func URL(s Server, acct Account) string {
	u := url.URL{
		User:    url.UserPassword(acct.Username, acct.Password),
		Host:    net.JoinHostPort(s.Host, strconv.Itoa(int(s.Port))),
		Path:    "/" + acct.Database,
		RawPath: "/" + url.PathEscape(acct.Database),
	}
	switch s.Engine {
	case Postgres:
		u.Scheme = "postgres"
		u.RawQuery = url.Values{"sslmode": {string(effectiveTLS(s.TLS))}}.Encode()
	case MySQL:
		u.Scheme = "mysql"
		if tls := mysqlTLS(effectiveTLS(s.TLS)); tls != "false" {
			u.RawQuery = url.Values{"tls": {tls}}.Encode()
		}
	default:
		return ""
	}
	return u.String()
}

// effectiveTLS treats an unset mode as the strictest one, so that forgetting to choose never
// sends passwords in clear text.
func effectiveTLS(m TLSMode) TLSMode {
	if m == "" {
		return TLSVerifyFull
	}
	return m
}

// mysqlTLS is the go-sql-driver/mysql "tls" value for a mode, which the tenant's URL shares.
func mysqlTLS(m TLSMode) string {
	switch m {
	case TLSDisable:
		return "false"
	case TLSRequire:
		return "skip-verify"
	}
	return "true"
}

// tlsConfig is the TLS configuration that verifies a server under TLSVerifyFull against its CA
// bundle; nil when the server has none (the drivers then verify against the system roots).
func tlsConfig(s Server, mode TLSMode) (*tls.Config, error) {
	if mode != TLSVerifyFull || len(s.CABundle) == 0 {
		return nil, nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.CABundle) {
		return nil, errors.New("the CA bundle holds no PEM certificate")
	}
	return &tls.Config{RootCAs: roots, ServerName: s.Host, MinVersion: tls.VersionTLS12}, nil
}
