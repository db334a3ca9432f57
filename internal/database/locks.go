package database

import (
	"crypto/hmac"
	"crypto/sha256"

	"golang.org/x/crypto/scrypt"
)

// lockKeys names the locks Landlord takes on a server to serialise the work on one account.
// Every login may take advisory (PostgreSQL) and named (MySQL, MariaDB) locks, so a name derived
// from the account alone is one a tenant's login can compute and hold, and stop every replica's
// provisioning, rotation and purge of that account. The names are keyed with the administrator's
// credentials instead: every Landlord replica of a server shares them, no tenant has them.
//
// A held lock's key is visible to every PostgreSQL login (pg_locks), next to a name a tenant can
// guess, so the key is stretched with scrypt: each guess at the administrator's password costs
// the guesser what it costs Landlord once per connection pool.
type lockKeys struct{ key []byte }

func newLockKeys(s Server) lockKeys {
	key, err := scrypt.Key([]byte(s.AdminUser+"\x00"+s.AdminPassword), []byte("landlord lock key"), 1<<15, 8, 1, 32)
	if err != nil {
		// Only for parameters out of range, which these are not.
		panic(err)
	}
	return lockKeys{key: key}
}

// sum is the keyed digest a lock's name is made of.
func (k lockKeys) sum(name string) []byte {
	mac := hmac.New(sha256.New, k.key)
	mac.Write([]byte(name))
	return mac.Sum(nil)
}
