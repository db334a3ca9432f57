package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// restoreOptions are the restore command's flags.
type restoreOptions struct {
	backup, beforeMigration, name string
	force                         bool
}

func newRestoreCommand(root *rootOptions) *cobra.Command {
	o := &restoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore TENANT (--backup BACKUP | --before-migration COMPONENT)",
		Short: "Put a tenant's databases back as a backup holds them.",
		Long: `Create a TenantRestore that writes a TenantBackup into the tenant's databases: --backup names the
backup; --before-migration COMPONENT the backup taken before the component's last migration
(status.components[].migration.backup), to bring back the data a failed migration changed. The
restore takes a safety backup of the data it replaces first, then replaces it: whatever the tenant
wrote since the backup is lost, which is why Landlord never restores on its own. A backup of
another tenant is restored as a copy, which the tenant must accept (the
tenancy.landlord.dev/accept-copy-from annotation). Follow it with landlordctl get restores.`,
		Example: `  landlordctl restore acme --before-migration web
  landlordctl restore acme --backup acme-nightly-20261207`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (o.backup == "") == (o.beforeMigration == "") {
				return usageErrorf("give exactly one of --backup and --before-migration")
			}
			if o.name != "" {
				if msgs := validation.IsDNS1123Subdomain(o.name); len(msgs) > 0 {
					return usageErrorf("--name %q is not an object name: %v", o.name, msgs)
				}
			}
			return restore(cmd.Context(), root, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.backup, "backup", "", "The TenantBackup to restore.")
	f.StringVar(&o.beforeMigration, "before-migration", "", "Restore the backup taken before this component's last migration.")
	f.StringVar(&o.name, "name", "", "The TenantRestore's name (<tenant>-restore-<time> when empty).")
	f.BoolVar(&o.force, "force", false, "With --before-migration, restore even though the migration did not fail.")
	return cmd
}

func restore(ctx context.Context, root *rootOptions, o *restoreOptions, tenant string) error {
	c, err := root.client()
	if err != nil {
		return err
	}
	t := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: tenant}, t); err != nil {
		return kindOf("Tenant").wrapNotFound("", tenant, err)
	}
	name := o.backup
	if o.beforeMigration != "" {
		if name, err = migrationBackup(t, o.beforeMigration, o.force); err != nil {
			return err
		}
	}
	b := &tenancyv1alpha1.TenantBackup{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		return kindOf("TenantBackup").wrapNotFound("", name, err)
	}
	rs := restoreOf(b, tenant, o.name, time.Now())
	if err := c.Create(ctx, rs, client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("creating TenantRestore %s: %w", rs.Name, err)
	}
	into := "its own tenant"
	if rs.Spec.Tenant != "" {
		into = "tenant " + rs.Spec.Tenant + ", as a copy"
	}
	fmt.Fprintf(root.out, "tenantrestore/%s created: restores TenantBackup %s (of tenant %s) into %s, after a safety backup of what it replaces\n",
		rs.Name, b.Name, b.Spec.Tenant, into)
	return nil
}

// migrationBackup is the backup the tenant's component took before its last migration, when
// that migration failed (or with force): after one that succeeded, or runs, the version's code
// expects the migrated data, and migrations do not run again.
func migrationBackup(t *tenancyv1alpha1.Tenant, component string, force bool) (string, error) {
	for _, c := range t.Status.Components {
		if c.Name != component {
			continue
		}
		m := c.Migration
		if m == nil || m.Backup == "" {
			return "", fmt.Errorf("component %s of tenant %s took no backup before a migration (status.components[].migration.backup is empty)", component, t.Name)
		}
		if m.Phase != tenancyv1alpha1.MigrationFailed && !force {
			return "", fmt.Errorf("component %s of tenant %s: its migration from %s to %s is %s, not Failed: the data its backup holds is from before it, and the code running expects it migrated; --force restores it anyway",
				component, t.Name, m.From, m.To, m.Phase)
		}
		return m.Backup, nil
	}
	return "", fmt.Errorf("tenant %s has no component %s in its status", t.Name, component)
}

// restoreOf is the TenantRestore of backup b into tenant: the backup's own tenant is written as
// itself (spec.tenant empty), another receives a copy.
func restoreOf(b *tenancyv1alpha1.TenantBackup, tenant, name string, now time.Time) *tenancyv1alpha1.TenantRestore {
	if name == "" {
		name = tenant + "-restore-" + now.UTC().Format("20060102150405")
	}
	rs := &tenancyv1alpha1.TenantRestore{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantRestoreSpec{Backup: b.Name},
	}
	if b.Spec.Tenant != tenant {
		rs.Spec.Tenant = tenant
	}
	return rs
}
