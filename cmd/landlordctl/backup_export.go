package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/config"
)

func newBackupCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Work with tenants' backups outside the cluster.",
		Args:  noArgs,
	}
	cmd.AddCommand(newBackupExportCommand(o))
	return cmd
}

// exportOptions are the export command's flags.
type exportOptions struct {
	output string
}

func newBackupExportCommand(root *rootOptions) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export BACKUP -o DIR|-",
		Short: "Write a backup's databases as plain dumps, for the customer or for a restore outside Landlord.",
		Long: `Fetch a succeeded TenantBackup from the backup store, decrypt each database's dump with its
tenant's data key, check it against the backup's manifest (size and SHA-256), and write it as
its engine's own tool wrote it: NAME.dump (PostgreSQL's custom format, for pg_restore) and
NAME.sql (MariaDB's or MySQL's SQL, for mariadb or mysql), with manifest.json beside them. -o DIR
writes them into a new directory, readable by you alone; -o - writes a tar stream of them to
stdout (with set -o pipefail: a stream cut short by a dump that failed its check ends without
manifest.json).

The backup store, and the key-encryption key that opens each tenant's data key, are those of the
operator's configuration (--config, backups.objects, backups.key and backups.keys), reached with
the credentials of your environment, as the operator reaches them. The files hold the tenant's
data in the clear: hand them over as the customer's data.`,
		Example: `  landlordctl backup export acme-202612070300 -o ./acme-export
  landlordctl backup export acme-202612070300 -o - | gzip > acme.tar.gz

  # Then, on any machine with the engines' tools, as a login with no more rights than the
  # tenant's (the dump is its data and SQL):
  pg_restore --no-owner --no-acl -d NEWDB ./acme-export/app.dump
  mariadb --sandbox --local-infile=0 NEWDB < ./acme-export/legacy.sql`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("TenantBackup"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.output == "" {
				return usageErrorf("-o is required: a directory to create, or - for a tar stream on stdout")
			}
			cfg, err := config.Load(root.configPath)
			if err != nil {
				return err
			}
			if !cfg.Backups.Enabled() {
				return usageErrorf("the operator's configuration (--config) names no backup store (backups.objects)")
			}
			c, err := root.client()
			if err != nil {
				return err
			}
			return exportBackup(cmd.Context(), c, cfg.Backups, args[0], o.output, root.out, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "A directory to create, or - for a tar stream on stdout.")
	return cmd
}

func exportBackup(ctx context.Context, c client.Client, cfg config.Backups, name, output string, stdout, stderr io.Writer) error {
	b := &tenancyv1alpha1.TenantBackup{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		return err
	}
	if b.Status.Phase != tenancyv1alpha1.BackupSucceeded || b.Status.Location == "" {
		return fmt.Errorf("TenantBackup %s is %s: only a succeeded backup is whole", name, orNone(string(b.Status.Phase)))
	}
	store, err := backup.OpenStore(ctx, cfg.Objects, cfg.Key, cfg.Keys)
	if err != nil {
		return err
	}
	defer store.Close()
	// Another tenant's objects at the backup's location are refused before anything is written.
	m, err := store.Manifest(ctx, b.Status.Location)
	if err != nil {
		return err
	}
	if m.TenantUID != b.Status.TenantUID {
		return fmt.Errorf("the store's manifest at %s is tenant %s's, not the backup's (%s)", b.Status.Location, m.TenantUID, b.Status.TenantUID)
	}
	if output == "-" {
		tw := tar.NewWriter(stdout)
		modTime := b.CreationTimestamp.Time
		if b.Status.CompletionTime != nil {
			modTime = b.Status.CompletionTime.Time
		}
		if _, err := backup.Export(ctx, store, b.Status.Location, backup.TarSink{W: tw, Dir: name, ModTime: modTime}); err != nil {
			return err
		}
		return tw.Close()
	}
	if _, err := os.Stat(output); err == nil {
		return usageErrorf("%s exists: give a directory to create", output)
	}
	if m, err = backup.Export(ctx, store, b.Status.Location, backup.DirSink(output)); err != nil {
		return errors.Join(err, fmt.Errorf("what was written is in %s: remove it", output))
	}
	fmt.Fprintf(stderr, "exported %d database(s) of tenant %s to %s\n", len(m.Databases), m.Tenant, output)
	return nil
}
