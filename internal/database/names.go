package database

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"unicode/utf8"
)

// Naming is how the names of a tenant's new databases and logins are made.
type Naming string

const (
	// NamingTenant names them after the tenant and the database (Names): readable, and visible
	// to every login of a shared PostgreSQL server.
	NamingTenant Naming = "tenant"
	// NamingOpaque names them with a digest of the tenant's UID and the database (OpaqueNames),
	// so a shared server shows no tenant's name.
	NamingOpaque Naming = "opaque"
)

// NewNames returns the database and login names of a tenant's new database, as naming asks.
// They are recorded (store record, status) when the database is created and read from there
// ever after, so a change of naming never renames an existing database.
func NewNames(naming Naming, engine Engine, prefix, tenant, uid, db string) (database, username string) {
	if naming == NamingOpaque {
		return OpaqueNames(engine, prefix, uid, db)
	}
	return Names(engine, prefix, tenant, db)
}

// identifierLimits returns the longest database and login names an engine accepts, in bytes.
// An unknown engine gets the tightest limits so that its names fit anywhere.
func identifierLimits(engine Engine) (database, username int) {
	switch engine {
	case Postgres:
		return 63, 63
	case MySQL:
		// MySQL 5.7 and later cap user names at 32 characters; MariaDB allows 80, but a name
		// must not change when a tenant moves between the two.
		return 64, 32
	}
	return 32, 32
}

// hashSuffixLen is the length of "__" plus the 10 hex digits that stand in for a name's tail.
const hashSuffixLen = 2 + 10

// Names returns the database and login names of a tenant's database on an engine, each starting
// with the server's reserved prefix (see DatabaseServer spec.namePrefix), so that no tenant and
// database can spell a login the server already has: "landlord" and "admin" would otherwise
// make "landlord_admin".
//
// Tenant names are DNS labels of at most 50 characters and database names DNS labels of at most
// 30, so neither contains '_'. The name is "<tenant>_<db>" when it fits the engine's limit: the
// single '_' marks where the tenant ends, so two different pairs never share it, even when
// "a-b"/"c" and "a"/"b-c" would look alike with '-'. A longer name keeps as much of that prefix
// as fits and ends in "__" and 10 hex digits of sha256("<tenant>/<db>"), exactly at the limit;
// an exact name never contains "__", so a shortened name cannot take an exact one. The result
// depends on nothing but the arguments, and the names are recorded when the database is
// created, so they never change for an existing tenant.
func Names(engine Engine, prefix, tenant, db string) (database, username string) {
	exact := prefix + tenant + "_" + db
	sum := sha256.Sum256([]byte(prefix + tenant + "/" + db))
	suffix := "__" + hex.EncodeToString(sum[:])[:hashSuffixLen-2]
	fit := func(limit int) string {
		if len(exact) <= limit {
			return exact
		}
		n := limit - len(suffix)
		// Never cut a multi-byte character in half: the server would reject the name.
		for n > 0 && !utf8.RuneStart(exact[n]) {
			n--
		}
		return exact[:n] + suffix
	}
	dbLimit, userLimit := identifierLimits(engine)
	return fit(dbLimit), fit(userLimit)
}

// opaqueDigestLen is the number of base32 digits of an opaque name: 110 bits, and with the
// longest namePrefix the CRD allows (10) exactly a MySQL login's 32 characters.
const opaqueDigestLen = 22

// opaqueEncoding is lowercase base32 without padding: letters and digits only, so a name needs
// no quoting beyond what every name gets, and holds no '_'.
var opaqueEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// OpaqueNames returns the database and login names of a tenant's database that show nothing of
// the tenant: the server's prefix and 22 base32 digits of sha256 over the tenant's UID and the
// database's name, the same for database and login. The tenant's name plays no part, so
// another login reading the server's catalog learns nothing of the customer; the UID it may
// read in Landlord's markers tells it no more than the marker itself does.
//
// UIDs are unique, so two tenants never share a name (and the markers still refuse any object
// another tenant holds). An opaque name has no '_' after the prefix, and every name Names makes
// has one, so the two namings never give the same name on one server.
func OpaqueNames(engine Engine, prefix, uid, db string) (database, username string) {
	sum := sha256.Sum256([]byte("landlord opaque name\x00" + uid + "\x00" + db))
	name := prefix + opaqueEncoding.EncodeToString(sum[:])[:opaqueDigestLen]
	dbLimit, userLimit := identifierLimits(engine)
	// The CRD bounds the prefix so that this never cuts; were it longer, the name is shortened
	// rather than refused by the server.
	return name[:min(len(name), dbLimit)], name[:min(len(name), userLimit)]
}

// GeneratePassword returns a new login password: 256 random bits, URL-safe base64 without
// padding, so that it needs no escaping in connection URLs, DSNs or shell variables.
func GeneratePassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
