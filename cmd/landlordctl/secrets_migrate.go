package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/templatesync"
)

func newSecretMigrateCommand(o *rootOptions) *cobra.Command {
	var to, toKey string
	cmd := &cobra.Command{
		Use:   "migrate --to URL [--to-key KEY_URL]",
		Short: "Copy every record of the secret store into another store, and make the cluster use it.",
		Long: `Copy every record of the configured secret store — shared secrets and tenants' credentials —
into another store, each re-encrypted under the new store's key and read back to check it,
then record the new store's identity on the template namespace in place of the old one's.

--to names the new store: a directory (file:///DIR) for the file backend, or with --to-key, a
bucket and a key-encryption key for the url backend (s3://, azblob://, gs:// or file://, and
awskms://, azurekeyvault://, gcpkms:// or hashivault://), with the credentials of the
environment. The new store must be empty, or hold what an interrupted run of this command
copied: run it again, and it completes what is missing. A store holding anything else — an
identity of its own, records, another program's objects — is refused, and nothing is written.

Scale the operator to zero replicas first, so nothing is written to the old store while it is
copied: once everything is copied, both stores are read again, and a source that changed
meanwhile (a record added, rotated or removed) is not switched from; run the command again once
the operator is stopped. Once the identity is switched, an operator still configured with the
old store refuses it; set secrets.store in the operator's configuration to what this command
prints, then start the operator again.`,
		Example: `  # From the file store to S3, under an AWS KMS key:
  landlordctl secrets migrate --to 's3://landlord-secrets?region=eu-west-1' --to-key 'awskms://alias/landlord?region=eu-west-1'

  # Back to a directory:
  landlordctl secrets migrate --to file:///var/lib/landlord/secrets`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			target, err := targetStore(to, toKey)
			if err != nil {
				return err
			}
			cfg, source, _, err := o.load()
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			return migrateStore(cmd.Context(), o, c, cfg, source, target)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "The new store: file:///DIR, or a bucket URL (s3://, azblob://, gs://, file://) with --to-key.")
	cmd.Flags().StringVar(&toKey, "to-key", "", "The new store's key-encryption key (awskms://, azurekeyvault://, gcpkms://, hashivault://).")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// targetStore is the store configuration --to and --to-key name.
func targetStore(to, toKey string) (config.SecretStore, error) {
	if toKey == "" {
		u, err := url.Parse(to)
		if err != nil || u.Scheme != "file" {
			return config.SecretStore{}, errors.New("--to-key is required unless --to names a directory (file:///DIR) for the file backend")
		}
		if err := config.CheckObjectsURL(to); err != nil {
			return config.SecretStore{}, fmt.Errorf("--to: %w", err)
		}
		dir := filepath.Clean(u.Path)
		return config.SecretStore{Backend: config.StoreBackendFile, File: config.FileSecretStore{Dir: dir, KeyFile: filepath.Join(dir, "key.json")}}, nil
	}
	if err := config.CheckObjectsURL(to); err != nil {
		return config.SecretStore{}, fmt.Errorf("--to: %w", err)
	}
	if err := config.CheckKeyURL(toKey); err != nil {
		return config.SecretStore{}, fmt.Errorf("--to-key: %w", err)
	}
	return config.SecretStore{Backend: config.StoreBackendURL, URL: config.URLSecretStore{Objects: to, Key: toKey}}, nil
}

// migrateStore copies source into the store target names and switches the identity the
// template namespace records from the one to the other.
func migrateStore(ctx context.Context, o *rootOptions, c client.Client, cfg config.Config, source secret.Store, target config.SecretStore) error {
	from, ok := source.(secret.Migratable)
	if !ok {
		return fmt.Errorf("the %s secret store cannot be migrated from", cfg.Secrets.Store.Backend)
	}
	opened, err := secret.Open(ctx, target)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	to, ok := opened.(secret.Migratable)
	if !ok {
		return fmt.Errorf("--to: the %s secret store cannot be migrated to", target.Backend)
	}
	timeout := cfg.Secrets.Store.Timeout.Duration
	namespace := cfg.Secrets.TemplateNamespace

	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return fmt.Errorf("reading the secret store the cluster records on namespace %s: %w", namespace, err)
	}
	recorded := ns.Annotations[tenancyv1alpha1.SecretStoreAnnotation]
	sourceID, err := secret.WithTimeout(from, timeout).Identity(ctx)
	if err != nil {
		return fmt.Errorf("reading the configured secret store's identity: %w", err)
	}
	switch recorded {
	case sourceID:
	case "":
		return fmt.Errorf("namespace %s records no secret store: the cluster has not used the configured store (identity %s) yet; run '%s secrets sync' with this configuration first, so that it is recorded", namespace, sourceID, o.name)
	default:
		// A run that switched the identity and was interrupted before it said so, run again.
		if done, err := alreadySwitched(ctx, to, timeout, sourceID, recorded); err != nil || !done {
			return errors.Join(err, fmt.Errorf("namespace %s records the secret store with identity %s, not the configured store (identity %s): check --config and --context; nothing was copied", namespace, recorded, sourceID))
		}
		fmt.Fprintf(o.out, "namespace %s already records the new store (identity %s): nothing to copy\n", namespace, recorded)
		return printNewConfig(o, target)
	}

	migration := secret.Migration{From: from, To: to, Timeout: timeout, Progress: func(key secret.RecordKey, outcome string) {
		fmt.Fprintf(o.out, "%s %s\n", key, outcome)
	}}
	report, err := migration.Run(ctx)
	if err != nil {
		return err
	}
	if report.Resumed {
		fmt.Fprintf(o.out, "resumed the migration into the new store (identity %s)\n", report.To)
	}
	fmt.Fprintf(o.out, "%d records copied, %d already there, %d removed; each copy read back and checked\n", report.Copied, report.Unchanged, report.Removed)
	if err := templatesync.SwitchStore(ctx, c, namespace, report.From, report.To); err != nil {
		return err
	}
	fmt.Fprintf(o.out, "namespace %s now records the new store (identity %s) in place of the old one (identity %s)\n", namespace, report.To, report.From)
	return printNewConfig(o, target)
}

// alreadySwitched is a target filled from sourceID whose identity the cluster records.
func alreadySwitched(ctx context.Context, to secret.Migratable, timeout time.Duration, sourceID, recorded string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := to.Contents(ctx)
	if err != nil {
		return false, fmt.Errorf("listing the new store: %w", err)
	}
	return c.MigratedFrom == sourceID && c.Identity == recorded, nil
}

// printNewConfig says what the operator's configuration must say from now on.
func printNewConfig(o *rootOptions, target config.SecretStore) error {
	section := map[string]any{"secrets": map[string]any{"store": storeSection(target)}}
	doc, err := yaml.Marshal(section)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.out, "\nSet secrets.store in the operator's configuration (keep its timeout) to:\n\n%s\nthen start the operator again. Until then, an operator configured with the old store refuses it.\n", doc)
	return nil
}

// storeSection is secrets.store as the configuration file writes it, in its order.
func storeSection(s config.SecretStore) any {
	type file struct {
		Dir string `json:"dir"`
	}
	type urls struct {
		Objects string `json:"objects"`
		Key     string `json:"key"`
	}
	type store struct {
		Backend string `json:"backend"`
		File    *file  `json:"file,omitempty"`
		URL     *urls  `json:"url,omitempty"`
	}
	if s.Backend == config.StoreBackendFile {
		return store{Backend: s.Backend, File: &file{Dir: s.File.Dir}}
	}
	return store{Backend: s.Backend, URL: &urls{Objects: s.URL.Objects, Key: s.URL.Key}}
}
