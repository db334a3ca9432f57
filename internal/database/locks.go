package database

import (
	"crypto/hmac"
	"crypto/sha256"
)

// lockKeys names the locks Landlord takes on a server to serialise the work on one account.
// Every login may take advisory (PostgreSQL) and named (MySQL, MariaDB) locks, so a name derived
// from the account alone is one a tenant's login can compute and hold, and stop every replica's
// provisioning, rotation and purge of that account. The names are keyed with the administrator's
// credentials instead: every Landlord replica of a server shares them, no tenant has them.
type lockKeys struct{ key []byte }

func newLockKeys(s Server) lockKeys {
	sum := sha256.Sum256([]byte("landlord lock key\x00" + s.AdminUser + "\x00" + s.AdminPassword))
	return lockKeys{key: sum[:]}
}

// sum is the keyed digest a lock's name is made of.
func (k lockKeys) sum(name string) []byte {
	mac := hmac.New(sha256.New, k.key)
	mac.Write([]byte(name))
	return mac.Sum(nil)
}
