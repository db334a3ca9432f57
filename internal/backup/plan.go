// Package backup dumps one tenant's databases with each engine's own tool into an object store,
// encrypted, and restores them, into the same tenant or another. It is what a backup or restore
// Job runs (landlord job --plan FILE); the controllers that make those Jobs only read manifests.
package backup

import (
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

// Operation is what a Job does.
type Operation string

const (
	OpBackup  Operation = "backup"
	OpRestore Operation = "restore"
)

// ManifestName is the object, in a backup's location, that says the backup is whole: it is
// written last, so a backup without it is not one.
const ManifestName = "manifest.json"

// Target is one database and the login that owns it: what a dump reads and a restore writes.
// A Job only ever logs in as the tenant's own login, never as a server's administrator: what a
// dump holds is the tenant's, and a restore runs it with no more rights than the tenant has.
type Target struct {
	Engine   database.Engine  `json:"engine"`
	Host     string           `json:"host"`
	Port     int32            `json:"port"`
	TLS      database.TLSMode `json:"tls,omitempty"`
	CABundle []byte           `json:"caBundle,omitempty"`
	Database string           `json:"database"`
	Username string           `json:"username"`
	Password string           `json:"password"`
}

// Database is one of the tenant's databases in a plan: its name in the tenant's spec, which
// names it in the backup, and where it is.
type Database struct {
	Name   string `json:"name"`
	Target Target `json:"target"`
}

// Plan is the whole of what a Job is told. It holds passwords, and reaches the Job in a Secret
// made for that Job alone.
type Plan struct {
	Operation Operation `json:"operation"`
	// Objects is the object store's URL.
	Objects string `json:"objects"`
	// TenantKey is the data key, in clear, of the tenant whose backup this is: the backup's
	// tenant's, for a restore or a copy. It opens that tenant's dumps and no other's.
	TenantKey []byte `json:"tenantKey,omitempty"`
	// Key is the key-encryption key's URL, named only to restore a backup of manifest format 1,
	// sealed before tenants had keys of their own.
	Key string `json:"key,omitempty"`
	// Location is the backup's folder in the store, "<tenant UID>/<backup UID>/".
	Location string `json:"location"`
	// Tenant, TenantUID and Backup are recorded in the manifest (backup).
	Tenant    string `json:"tenant,omitempty"`
	TenantUID string `json:"tenantUID,omitempty"`
	Backup    string `json:"backup,omitempty"`
	// Databases are dumped (backup) or written (restore, matched by name to the manifest's).
	Databases []Database `json:"databases"`
	// MaxBytes bounds each dump, before encryption; 0 leaves it unbounded (backup).
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// Clone restores into another tenant: nothing of the source's logins (owners, privileges,
	// definers) is carried over (restore).
	Clone bool `json:"clone,omitempty"`
	// CopyTo is, for each of Databases in the same order and under the same name, where it is
	// copied to (copy: a move between servers).
	CopyTo []Database `json:"copyTo,omitempty"`
}

// Manifest says what a backup holds.
type Manifest struct {
	// Format is 2: the dumps are sealed under the tenant's data key (1: under the store's key).
	Format    int         `json:"format"`
	Tenant    string      `json:"tenant"`
	TenantUID string      `json:"tenantUID"`
	Backup    string      `json:"backup"`
	Started   time.Time   `json:"started"`
	Finished  time.Time   `json:"finished"`
	Databases []DumpEntry `json:"databases"`
}

// DumpEntry is one database's dump in a backup.
type DumpEntry struct {
	// Name is the database's name in the tenant's spec.
	Name          string          `json:"name"`
	Engine        database.Engine `json:"engine"`
	ServerVersion string          `json:"serverVersion"`
	// Object is the dump's object name, relative to the backup's location.
	Object string `json:"object"`
	// Size and SHA256 (hex) are the dump's, before encryption; StoredSize is the object's.
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256"`
	StoredSize int64  `json:"storedSize"`
}
