package v1alpha1

import "strings"

// Keys of a database credentials Secret in a tenant namespace. The stored record of the same
// database (in the secret store) carries database, username and password.
const (
	CredentialsKeyHost     = "host"
	CredentialsKeyPort     = "port"
	CredentialsKeyDatabase = "database"
	CredentialsKeyUsername = "username"
	CredentialsKeyPassword = "password"
	CredentialsKeyURL      = "url"
	CredentialsKeyTLS      = "tls"
	// CredentialsKeyCA is the CA bundle that verifies the server, when its DatabaseServer has one.
	CredentialsKeyCA = "ca.crt"
	// CredentialsKeyPgBouncerPoolSize carries spec.pgbouncer.defaultPoolSize to the tenant's
	// pooler.
	CredentialsKeyPgBouncerPoolSize = "pgbouncer-default-pool-size"
)

// DatabaseSecretName is the Secret holding a tenant database's credentials, in the tenant
// namespace and in the secret store alike; components read it by this name.
func DatabaseSecretName(database string) string { return databaseSecretPrefix + database }

// DatabaseOfSecret is the database a credentials Secret name is for, and whether it is one.
func DatabaseOfSecret(secretName string) (string, bool) {
	return strings.CutPrefix(secretName, databaseSecretPrefix)
}

const databaseSecretPrefix = "db-"
