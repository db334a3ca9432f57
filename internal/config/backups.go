package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// Backups configures per-tenant backups and restores (TenantBackup, TenantRestore): the store
// they are kept in and the Jobs that make and restore them. With no store, backups are off: a
// TenantBackup waits with BackupsNotConfigured.
type Backups struct {
	// Objects is the bucket the backups are kept in, as a Go CDK URL (s3://, azblob://, gs://,
	// file://), under the URL's prefix= when set; each backup is a folder <tenant
	// UID>/<backup UID>/ of one encrypted dump per database and a manifest.
	Objects string `json:"objects,omitempty"`
	// Key is the key-encryption key each tenant's data key is wrapped with (awskms://,
	// azurekeyvault://, gcpkms://, hashivault://). Required with objects: dumps are never kept
	// in clear. Only the operator uses it: a Job is handed the data key of the tenant it serves,
	// so give the Jobs' identity (envFromSecrets, serviceAccountName) no access to this key.
	Key string `json:"key,omitempty"`
	// Keys is the bucket the tenants' data keys are kept in, wrapped by key, as a Go CDK URL;
	// under keys/ in objects' bucket when empty. A purge destroys the tenant's key there, which
	// makes every copy of its backups unreadable: keep this bucket free of object versioning,
	// replication and retention locks, which would keep the key, and out of the Jobs' reach.
	Keys string `json:"keys,omitempty"`
	// KeepAfterPurge is how long a Purged tenant's backups are kept, with the data key that
	// opens them: 0 (the default) deletes them, and destroys the key, when the tenant is
	// purged. The Purged tenant's status.purge says what was deleted, and when what is kept
	// goes.
	KeepAfterPurge metav1.Duration `json:"keepAfterPurge,omitempty"`
	// Image runs the Jobs: Landlord's backup image (the Dockerfile's backup target), which holds
	// pg_dump, pg_restore, psql, mariadb-dump, mariadb and Landlord's own binary.
	Image string `json:"image,omitempty"`
	// Namespace is where the Jobs and their Secrets are made: databases.credentialsNamespace
	// (the operator's own) when empty. Tenants must not be able to read it.
	Namespace string `json:"namespace,omitempty"`
	// ServiceAccountName is the ServiceAccount the Jobs run as, for a cloud's workload identity
	// to the store and the key; the namespace's default when empty.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// EnvFromSecrets are Secrets in the Jobs' namespace whose keys become the Jobs'
	// environment: the store's and the key's credentials where no workload identity gives them
	// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, VAULT_TOKEN).
	EnvFromSecrets []string `json:"envFromSecrets,omitempty"`
	// PodLabels and PodAnnotations are put on the Jobs' pods (a mesh's sidecar turned off, a
	// network policy's selector).
	PodLabels      map[string]string `json:"podLabels,omitempty"`
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// Resources are the Job container's requests and limits.
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// MaxDumpSize bounds each database's dump, before encryption: a larger one fails the
	// backup, and nothing of it is kept. 100Gi by default.
	MaxDumpSize *resource.Quantity `json:"maxDumpSize,omitempty"`
	// ScratchSize bounds the Job's dumps volume, where a backup's dumps wait to be sealed and
	// a restore's are checked before any is written: at least the largest backup's dumps. 0 (the
	// default) leaves it to the node; set it, so that a Job's dumps do not fill the node's disk.
	ScratchSize *resource.Quantity `json:"scratchSize,omitempty"`
	// Timeout bounds one Job (its activeDeadlineSeconds); 6h by default.
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// ExportAtPurge is a bucket, as a Go CDK URL (under the URL's prefix= when set), where
	// purging a tenant first writes its newest backup that succeeded as an export (the engines'
	// own dumps, decrypted, and the manifest; docs/tenant-backups.md, Exporting a backup), in a
	// folder <tenant>-<tenant UID>/, before any of its backups is deleted or its key destroyed.
	// The tenant's status.purge.export names it. It holds customers' data in the clear: give it
	// the access and the retention of an offboarding hand-over. Off when empty.
	ExportAtPurge string `json:"exportAtPurge,omitempty"`
	// SelfService lets tenants ask for backups and restores of their own data, from their
	// namespaces (BackupRequest, RestoreRequest); off by default.
	SelfService SelfService `json:"selfService,omitempty"`
}

// SelfService sets what a tenant may ask for itself: a tenant admin makes a BackupRequest or a
// RestoreRequest in its namespace, and Landlord makes the TenantBackup or TenantRestore of that
// namespace's tenant, never another's. Requests beyond a day's limit are refused.
type SelfService struct {
	// Enabled lets tenant admins make requests; without it every request is refused.
	Enabled bool `json:"enabled,omitempty"`
	// BackupsPerDay is how many backups a tenant may ask for in any 24 hours; 2 by default, 0
	// for none.
	BackupsPerDay *int32 `json:"backupsPerDay,omitempty"`
	// Keep is how many of a tenant's requested backups are kept: once a newer one has
	// succeeded, the oldest beyond it are deleted (a schedule's backups are the schedule's
	// own). At least backupsPerDay, so that every backup of the last day counts; 3 by default.
	Keep int32 `json:"keep,omitempty"`
	// RestoresPerDay is how many restores a tenant may ask for in any 24 hours; 1 by default, 0
	// for none. Each restore first takes a safety backup of what it replaces, which keep counts
	// among the tenant's requested backups.
	RestoresPerDay *int32 `json:"restoresPerDay,omitempty"`
}

// DefaultMaxDumpSize is backups.maxDumpSize when unset.
var DefaultMaxDumpSize = resource.MustParse("100Gi")

// Enabled reports whether a backup store is configured.
func (b Backups) Enabled() bool { return b.Objects != "" }

func (b *Backups) applyDefaults(credentialsNamespace string) {
	if b.Namespace == "" {
		b.Namespace = credentialsNamespace
	}
	if b.MaxDumpSize == nil {
		q := DefaultMaxDumpSize.DeepCopy()
		b.MaxDumpSize = &q
	}
	if b.Timeout.Duration == 0 {
		b.Timeout.Duration = 6 * time.Hour
	}
	if b.SelfService.BackupsPerDay == nil {
		b.SelfService.BackupsPerDay = ptr.To[int32](2)
	}
	if b.SelfService.Keep == 0 {
		b.SelfService.Keep = max(3, *b.SelfService.BackupsPerDay)
	}
	if b.SelfService.RestoresPerDay == nil {
		b.SelfService.RestoresPerDay = ptr.To[int32](1)
	}
}

func (b Backups) validate(namespacePrefix, templateNamespace string) []error {
	var errs []error
	if !b.Enabled() {
		if b.Key != "" {
			errs = append(errs, errors.New("backups.objects is required with backups.key"))
		}
		return errs
	}
	if err := CheckObjectsURL(b.Objects); err != nil {
		errs = append(errs, fmt.Errorf("backups.objects: %w", err))
	}
	if err := CheckKeyURL(b.Key); err != nil {
		errs = append(errs, fmt.Errorf("backups.key: %w", err))
	}
	if b.Keys != "" {
		if err := CheckObjectsURL(b.Keys); err != nil {
			errs = append(errs, fmt.Errorf("backups.keys: %w", err))
		} else if overlap(b.Keys, b.Objects) {
			errs = append(errs, errors.New("backups.keys: the keys' bucket and prefix overlap backups.objects': keep the keys apart (another bucket), or leave backups.keys empty for keys/ in the backups' bucket"))
		}
	}
	if b.ExportAtPurge != "" {
		if err := CheckObjectsURL(b.ExportAtPurge); err != nil {
			errs = append(errs, fmt.Errorf("backups.exportAtPurge: %w", err))
		} else if overlap(b.ExportAtPurge, b.Objects) || b.Keys != "" && overlap(b.ExportAtPurge, b.Keys) {
			// The backups' bucket is the Jobs' to write, and a purge deletes under it: the
			// exports, in the clear, are kept apart from both.
			errs = append(errs, errors.New("backups.exportAtPurge: the exports' bucket and prefix overlap backups.objects' or backups.keys': keep the exports apart (another bucket)"))
		}
	}
	if b.KeepAfterPurge.Duration < 0 {
		errs = append(errs, fmt.Errorf("backups.keepAfterPurge: %s is negative", b.KeepAfterPurge.Duration))
	}
	if b.Image == "" {
		errs = append(errs, errors.New("backups.image is required with backups.objects: the Jobs run Landlord's backup image"))
	}
	switch msgs := validation.IsDNS1123Label(b.Namespace); {
	case len(msgs) > 0:
		errs = append(errs, fmt.Errorf("backups.namespace: %q is not a namespace name: %v", b.Namespace, msgs))
	case strings.HasPrefix(b.Namespace, namespacePrefix) || b.Namespace == templateNamespace:
		// The Jobs' Secrets hold tenants' passwords: never where a tenant, or a copy of every
		// tenant's shared secrets, is.
		errs = append(errs, fmt.Errorf("backups.namespace: %q is a tenant namespace (namespacePrefix %q) or the template namespace; the Jobs' Secrets hold tenants' passwords", b.Namespace, namespacePrefix))
	}
	if b.ServiceAccountName != "" {
		if msgs := validation.IsDNS1123Subdomain(b.ServiceAccountName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("backups.serviceAccountName: %q is not a ServiceAccount name: %v", b.ServiceAccountName, msgs))
		}
	}
	for i, s := range b.EnvFromSecrets {
		if msgs := validation.IsDNS1123Subdomain(s); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("backups.envFromSecrets[%d]: %q is not a Secret name: %v", i, s, msgs))
		}
	}
	if b.MaxDumpSize.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("backups.maxDumpSize: %s is not positive", b.MaxDumpSize))
	}
	if b.ScratchSize != nil && b.ScratchSize.Sign() < 0 {
		errs = append(errs, fmt.Errorf("backups.scratchSize: %s is negative", b.ScratchSize))
	}
	if b.Timeout.Duration < time.Minute {
		errs = append(errs, fmt.Errorf("backups.timeout: %s is shorter than 1m", b.Timeout.Duration))
	}
	return append(errs, b.SelfService.validate()...)
}

func (s SelfService) validate() []error {
	var errs []error
	if s.BackupsPerDay == nil || s.RestoresPerDay == nil {
		return []error{errors.New("backups.selfService: defaults not applied")}
	}
	if *s.BackupsPerDay < 0 {
		errs = append(errs, fmt.Errorf("backups.selfService.backupsPerDay: %d is negative", *s.BackupsPerDay))
	}
	if *s.RestoresPerDay < 0 {
		errs = append(errs, fmt.Errorf("backups.selfService.restoresPerDay: %d is negative", *s.RestoresPerDay))
	}
	if s.Keep < *s.BackupsPerDay {
		// Retention deletes the oldest requested backups: were fewer kept than a day allows,
		// the ones deleted would no longer count against the day's limit.
		errs = append(errs, fmt.Errorf("backups.selfService.keep: %d is fewer than backupsPerDay (%d): keep at least a day's requests", s.Keep, *s.BackupsPerDay))
	}
	return errs
}

// apartFrom refuses a backup store that shares the secret store's bucket (and prefix) or its
// key-encryption key: a Job's plan holds the backup store's place and a tenant's data key, and
// nothing of it may reach the records of every tenant's credentials, nor a key that opens them.
func (b Backups) apartFrom(st SecretStore) []error {
	if !b.Enabled() {
		return nil
	}
	var objects, key string
	switch st.Backend {
	case StoreBackendURL:
		objects, key = st.URL.Objects, st.URL.Key
	case StoreBackendGCS:
		objects, key = "gs://"+st.GCS.Bucket+"?prefix="+st.GCS.Prefix, "gcpkms://"+st.GCS.KMSKey
	case StoreBackendFile:
		if st.File.Dir != "" {
			objects = "file://" + st.File.Dir
		}
	}
	var errs []error
	if objects != "" && (overlap(b.Objects, objects) || (b.Keys != "" && overlap(b.Keys, objects))) {
		errs = append(errs, errors.New("backups.objects (or backups.keys) overlaps the secret store's bucket and prefix: keep the backups in another bucket, or another prefix that neither contains"))
	}
	if objects != "" && b.ExportAtPurge != "" && overlap(b.ExportAtPurge, objects) {
		errs = append(errs, errors.New("backups.exportAtPurge overlaps the secret store's bucket and prefix: keep the exports in another bucket"))
	}
	if key != "" && strings.TrimRight(b.Key, "/") == strings.TrimRight(key, "/") {
		errs = append(errs, errors.New("backups.key is the secret store's key-encryption key: give the backups a key of their own, so that the Jobs' access to it opens no tenant's credentials"))
	}
	return errs
}

// overlap reports whether two bucket URLs name places one of which holds the other: the same
// bucket with prefixes one of which starts the other, or (file://) a directory inside the other.
func overlap(a, b string) bool {
	la, okA := location(a)
	lb, okB := location(b)
	return okA && okB && (strings.HasPrefix(la, lb) || strings.HasPrefix(lb, la))
}

// location is where a bucket URL puts its objects, as one path: scheme, bucket (or directory)
// and prefix.
func location(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	where := u.Host + "/" + strings.Trim(u.Path, "/")
	if u.Scheme == "file" {
		where = path.Clean("/" + u.Host + u.Path)
	}
	return u.Scheme + "://" + strings.TrimSuffix(where, "/") + "/" + u.Query().Get("prefix"), true
}
