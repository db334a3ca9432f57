// Package indexes holds every field index the operator's controllers list by: their names, the
// keys they hold, and the one call that registers them all with the manager's cache. A list by
// label selector visits every object in the cache; a list by index only the ones it returns, so
// an unchanged tenant, a pool's spares or a server's tenants are found without a scan.
package indexes

import (
	"context"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

const (
	// TenantDatabaseServer indexes tenants by the DatabaseServers holding their databases, so
	// placement counts a server's tenants without scanning them all.
	TenantDatabaseServer = "status.databases.server"
	// TenantDatabasesNotReady indexes, under the one key NotReady, the tenants with databases
	// whose DatabasesReady condition is not True: a DatabaseServer that appears, becomes Ready
	// or frees room wakes the tenants that may be waiting for it without reading the others.
	TenantDatabasesNotReady = "spec.databases,notReady"
	// TenantFollowedComponent indexes tenants by the components they let rollouts move (those
	// with followRollouts), so that a rollout reads the tenants it may move and no other.
	TenantFollowedComponent = "spec.components.followRollouts"
	// TenantComponentTemplate indexes tenants by the ComponentTemplates they pin, so a template
	// published after the tenant pinned it re-triggers exactly those tenants.
	TenantComponentTemplate = "spec.components.template"
	// TenantDomain indexes tenants by the domains they list, so that a domain's holder is found
	// in the cache without scanning every tenant (see DomainKeys and OverlapKeys).
	TenantDomain = "spec.domains"
	// TenantClass indexes tenants by the TenantClass they name.
	TenantClass = "spec.class"
	// RolloutReleased indexes ComponentRollouts by RolloutKey(component, tenant) for every tenant
	// of a released wave: the tenant reconciler finds the rollouts that may move a component of
	// a tenant from the cache, with no request.
	RolloutReleased = "status.waves.released"
	// TenantPool indexes the tenants that carry a pool's label and no claim has taken, by that
	// label: a pool's spares (and tenants labeled by hand). Allocated tenants are left out, so
	// that a pool reads only its spares however many tenants it has handed out.
	TenantPool = "metadata.labels.pool,unallocated"
	// TenantPoolAll indexes every tenant by its pool label, allocated ones too: what a pool
	// with spec.maxTenants counts, in one read of the cache, before it creates a spare.
	TenantPoolAll = "metadata.labels.pool"
	// TenantClaimUID indexes tenants by the UID of the claim they were bound to.
	TenantClaimUID = "metadata.labels.claim-uid"
	// PendingClaimPool indexes the claims not yet Bound by the pool they ask for (spec.pool): a
	// claim leaves it when it is Bound, so a spare turning Ready wakes only the claims waiting.
	PendingClaimPool = "spec.pool,pending"
	// PendingBackupTenant indexes the TenantBackups not started yet by the tenant they name: a
	// change to a tenant wakes only the backups waiting for it.
	PendingBackupTenant = "spec.tenant,pending"
	// OpenRestoreBackup indexes the TenantRestores not ended yet by the backups they wait for
	// (spec.backup, and status.safetyBackup once taken), by the tenant they name
	// (RestoreTenantKey), and by the UID of the tenant they write into (RestoreTenantUIDKey).
	OpenRestoreBackup = "spec.backup,open"
	// BackupTenantUID indexes the TenantBackups by the UID of the tenant they back up, once
	// recorded: what a purge deletes.
	BackupTenantUID = "status.tenantUID"
	// RunningJobServer indexes Landlord's Jobs that reach database servers (migrations,
	// backups, restores) and have not ended, by those servers (DatabaseServersAnnotation): how
	// many run against a server is one read of the cache.
	RunningJobServer = "metadata.annotations.database-servers,running"
	// OpenMoveTenant indexes the DatabaseMoves not ended yet by the tenant they move a database
	// of: what the tenant controller reads to leave a fenced database alone.
	OpenMoveTenant = "spec.tenant,open"
)

// DatabaseServersAnnotation on a migration, backup or restore Job lists the DatabaseServers its
// databases are on, comma-separated: the servers whose limit of Jobs at once it counts against.
const DatabaseServersAnnotation = "tenancy.landlord.dev/database-servers"

// NotReady is the one TenantDatabasesNotReady key.
const NotReady = "notReady"

// Add registers every index with the manager's cache; the operator calls it once.
func Add(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range []struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}{
		{&tenancyv1alpha1.Tenant{}, TenantDatabaseServer, TenantDatabaseServers},
		{&tenancyv1alpha1.Tenant{}, TenantDatabasesNotReady, tenantDatabasesNotReady},
		{&tenancyv1alpha1.Tenant{}, TenantFollowedComponent, tenantFollowedComponents},
		{&tenancyv1alpha1.Tenant{}, TenantComponentTemplate, tenantComponentTemplates},
		{&tenancyv1alpha1.Tenant{}, TenantDomain, tenantDomains},
		{&tenancyv1alpha1.Tenant{}, TenantClass, tenantClass},
		{&tenancyv1alpha1.ComponentRollout{}, RolloutReleased, rolloutReleased},
		{&tenancyv1alpha1.Tenant{}, TenantPool, tenantPool},
		{&tenancyv1alpha1.Tenant{}, TenantPoolAll, tenantPoolAll},
		{&tenancyv1alpha1.Tenant{}, TenantClaimUID, tenantClaimUID},
		{&tenancyv1alpha1.TenantClaim{}, PendingClaimPool, pendingClaimPool},
		{&batchv1.Job{}, RunningJobServer, RunningJobServers},
	} {
		if err := indexer.IndexField(ctx, ix.obj, ix.field, ix.fn); err != nil {
			return err
		}
	}
	return nil
}

// RolloutKey is the RolloutReleased key of a tenant's component.
func RolloutKey(component, tenant string) string { return component + "/" + tenant }

// CoveringWildcard is the wildcard that covers a plain domain ("*.example.com" for
// "a.example.com"), or "" for a wildcard or a single label: the one label a wildcard stands for,
// as the admission policies match hosts.
func CoveringWildcard(d string) string {
	if strings.HasPrefix(d, "*.") {
		return ""
	}
	_, parent, ok := strings.Cut(d, ".")
	if !ok {
		return ""
	}
	return "*." + parent
}

// OverlapKeys are the TenantDomain keys of the tenants holding a domain that can name the same
// host as d: d itself, a wildcard over it, or, for a wildcard, a name under it.
func OverlapKeys(d string) []string {
	keys := []string{"exact:" + d}
	if strings.HasPrefix(d, "*.") {
		keys = append(keys, "covered:"+d)
	} else if w := CoveringWildcard(d); w != "" {
		keys = append(keys, "exact:"+w)
	}
	return keys
}

// tenantDomains indexes each domain as "exact:<domain>", and a plain domain also as
// "covered:*.<parent>", under the wildcard that would cover it.
func tenantDomains(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	var keys []string
	for _, d := range t.Spec.Domains {
		keys = append(keys, "exact:"+string(d))
		if w := CoveringWildcard(string(d)); w != "" {
			keys = append(keys, "covered:"+w)
		}
	}
	return keys
}

// TenantDatabaseServers are a tenant's TenantDatabaseServer keys: the servers its databases
// are placed on, each once.
func TenantDatabaseServers(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range t.Status.Databases {
		if !seen[d.Server] {
			seen[d.Server] = true
			out = append(out, d.Server)
		}
	}
	return out
}

func tenantDatabasesNotReady(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok || len(t.Spec.Databases.Postgres)+len(t.Spec.Databases.MySQL) == 0 ||
		meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.DatabasesReadyCondition) {
		return nil
	}
	return []string{NotReady}
}

func tenantFollowedComponents(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	var out []string
	for _, c := range t.Spec.Components {
		if c.FollowRollouts {
			out = append(out, c.Name)
		}
	}
	return out
}

func tenantComponentTemplates(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(t.Spec.Components))
	for _, c := range t.Spec.Components {
		out = append(out, tenancyv1alpha1.ComponentTemplateName(c.Name, c.Version))
	}
	return out
}

func rolloutReleased(obj client.Object) []string {
	ro, ok := obj.(*tenancyv1alpha1.ComponentRollout)
	if !ok {
		return nil
	}
	var out []string
	for i, w := range ro.Status.Waves {
		if i >= int(ro.Status.Released) {
			break
		}
		for _, name := range w.Tenants {
			out = append(out, RolloutKey(ro.Spec.Component, name))
		}
	}
	return out
}

func tenantPool(obj client.Object) []string {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok || t.IsAllocated() {
		return nil
	}
	if pool := t.Labels[tenancyv1alpha1.PoolLabel]; pool != "" {
		return []string{pool}
	}
	return nil
}

func tenantPoolAll(obj client.Object) []string {
	if pool := obj.GetLabels()[tenancyv1alpha1.PoolLabel]; pool != "" {
		return []string{pool}
	}
	return nil
}

func tenantClaimUID(obj client.Object) []string {
	if uid := obj.GetLabels()[tenancyv1alpha1.ClaimUIDLabel]; uid != "" {
		return []string{uid}
	}
	return nil
}

// AddBackups registers the indexes of the backup and restore controllers, which run only where
// their CustomResourceDefinitions are installed.
func AddBackups(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &tenancyv1alpha1.TenantBackup{}, PendingBackupTenant, pendingBackupTenant); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &tenancyv1alpha1.TenantBackup{}, BackupTenantUID, BackupTenantUIDs); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &tenancyv1alpha1.TenantRestore{}, OpenRestoreBackup, OpenRestoreKeys)
}

func tenantClass(obj client.Object) []string {
	if t, ok := obj.(*tenancyv1alpha1.Tenant); ok && t.Spec.Class != "" {
		return []string{t.Spec.Class}
	}
	return nil
}

// AddMoves registers the index of database moves, where their CustomResourceDefinition is
// installed.
func AddMoves(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &tenancyv1alpha1.DatabaseMove{}, OpenMoveTenant, openMoveTenant)
}

func openMoveTenant(obj client.Object) []string {
	m, ok := obj.(*tenancyv1alpha1.DatabaseMove)
	if !ok || m.Terminal() {
		return nil
	}
	return []string{m.Spec.Tenant}
}

func pendingBackupTenant(obj client.Object) []string {
	b, ok := obj.(*tenancyv1alpha1.TenantBackup)
	if !ok || (b.Status.Phase != "" && b.Status.Phase != tenancyv1alpha1.BackupPending) {
		return nil
	}
	return []string{b.Spec.Tenant}
}

// BackupTenantUIDs are the BackupTenantUID keys of a backup: the UID of the tenant backed up,
// once recorded.
func BackupTenantUIDs(obj client.Object) []string {
	b, ok := obj.(*tenancyv1alpha1.TenantBackup)
	if !ok || b.Status.TenantUID == "" {
		return nil
	}
	return []string{b.Status.TenantUID}
}

// OpenRestoreKeys are the OpenRestoreBackup keys of a restore: the backups it reads, and the
// tenant it writes into, while it has not ended.
func OpenRestoreKeys(obj client.Object) []string {
	r, ok := obj.(*tenancyv1alpha1.TenantRestore)
	if !ok || r.Status.Phase == tenancyv1alpha1.BackupSucceeded || r.Status.Phase == tenancyv1alpha1.BackupFailed {
		return nil
	}
	keys := []string{r.Spec.Backup}
	if r.Status.SafetyBackup != "" {
		keys = append(keys, r.Status.SafetyBackup)
	}
	if r.Spec.Tenant != "" {
		keys = append(keys, RestoreTenantKey(r.Spec.Tenant))
	}
	if r.Status.TenantUID != "" {
		keys = append(keys, RestoreTenantUIDKey(r.Status.TenantUID))
	}
	return keys
}

// RestoreTenantKey is the OpenRestoreBackup key of the restores naming a tenant; no backup's
// name holds a '/'.
func RestoreTenantKey(tenant string) string { return "tenant/" + tenant }

// RestoreTenantUIDKey is the OpenRestoreBackup key of the restores writing into a tenant.
func RestoreTenantUIDKey(uid string) string { return "tenant-uid/" + uid }

func pendingClaimPool(obj client.Object) []string {
	c, ok := obj.(*tenancyv1alpha1.TenantClaim)
	if !ok || c.Status.Phase == tenancyv1alpha1.ClaimBound || c.Spec.Pool == "" {
		return nil
	}
	return []string{c.Spec.Pool}
}

// RunningJobServers indexes a migration, backup or restore Job that has not ended (no Complete
// or Failed condition: the operator's cache keeps a migration Job's conditions, and a backup's
// or restore's Job whole) by its servers. Any other Job (a component's, whose status the cache
// drops) counts against no server, whatever its annotations say.
func RunningJobServers(obj client.Object) []string {
	j, ok := obj.(*batchv1.Job)
	if !ok || (j.Labels[tenancyv1alpha1.MigrationLabel] == "" && j.Labels[tenancyv1alpha1.BackupJobLabel] == "") {
		return nil
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return nil
		}
	}
	var out []string
	for s := range strings.SplitSeq(j.Annotations[DatabaseServersAnnotation], ",") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
