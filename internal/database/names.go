package database

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"unicode/utf8"
)

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

// GeneratePassword returns a new login password: 256 random bits, URL-safe base64 without
// padding, so that it needs no escaping in connection URLs, DSNs or shell variables.
func GeneratePassword() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
