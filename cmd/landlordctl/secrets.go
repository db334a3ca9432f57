package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/templatesync"
)

func newSecretsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Manage secrets in the encrypted secret store.",
		Long: `Manage secrets in the encrypted secret store. The commands act on the store's template
namespace, unless --namespace names another store namespace (the kubeconfig's namespace is not
used: the store is not the cluster). Secrets in the template namespace are mirrored into the
cluster by the operator; those labeled shared (--shared) are copied into every tenant, or only
into tenants matching --tenant-selector. Values are never printed unless asked for with --show.`,
	}
	cmd.AddCommand(newSecretPutCommand(o), newSecretGetCommand(o), newSecretListCommand(o), newSecretDeleteCommand(o), newSecretSyncCommand(o), newSecretMigrateCommand(o))
	return cmd
}

func newSecretPutCommand(o *rootOptions) *cobra.Command {
	var (
		literals, files []string
		secretType      string
		shared          bool
		selector        string
	)
	cmd := &cobra.Command{
		Use:   "put NAME (--from-literal KEY=VALUE | --from-file [KEY=]PATH)...",
		Short: "Create or replace a secret.",
		Example: `  landlordctl secrets put stripe --from-literal token=sk_live_... --shared --tenant-selector plan=enterprise
  landlordctl secrets put tls-ca --from-file ca.crt=./ca.pem --shared`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(literals)+len(files) == 0 {
				return errors.New("nothing to store: give --from-literal or --from-file")
			}
			if selector != "" {
				if _, err := labels.Parse(selector); err != nil {
					return fmt.Errorf("--tenant-selector: %w", err)
				}
			}
			cfg, store, namespace, err := o.load()
			if err != nil {
				return err
			}
			if namespace == cfg.Secrets.TemplateNamespace && cfg.Secrets.SharedSource == config.SharedFromNamespace {
				// Nothing would ever read it: the operator mirrors nothing into the template
				// namespace, and a secret kept here alone is one a rebuilt cluster would not have.
				return fmt.Errorf("secrets.sharedSource is %s: the template namespace %s is written by another tool, and Landlord mirrors nothing of the store into it. "+
					"Put the secret where that tool reads from, and have it write the Secret into %s labelled %s=true",
					config.SharedFromNamespace, namespace, namespace, tenancyv1alpha1.SharedLabel)
			}
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: args[0]},
				Type:       corev1.SecretType(secretType),
				Data:       map[string][]byte{},
			}
			for _, l := range literals {
				k, v, ok := strings.Cut(l, "=")
				if !ok || k == "" {
					return fmt.Errorf("--from-literal %q: want KEY=VALUE", l)
				}
				s.Data[k] = []byte(v)
			}
			for _, f := range files {
				k, path, ok := strings.Cut(f, "=")
				if !ok {
					k, path = filepath.Base(f), f
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return fmt.Errorf("--from-file: %w", err)
				}
				s.Data[k] = data
			}
			if shared {
				s.Labels = map[string]string{tenancyv1alpha1.SharedLabel: "true"}
			}
			if selector != "" {
				s.Annotations = map[string]string{tenancyv1alpha1.TenantSelectorAnnotation: selector}
			}
			if err := store.Put(cmd.Context(), s); err != nil {
				return err
			}
			fmt.Fprintf(o.out, "secret %s/%s stored (%d keys)\n", s.Namespace, s.Name, len(s.Data))
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&literals, "from-literal", nil, "A key and its value, KEY=VALUE (repeatable).")
	cmd.Flags().StringArrayVar(&files, "from-file", nil, "A key and the file holding its value, [KEY=]PATH (repeatable).")
	cmd.Flags().StringVar(&secretType, "type", string(corev1.SecretTypeOpaque), "Secret type.")
	cmd.Flags().BoolVar(&shared, "shared", false, "Share with tenants (template namespace only).")
	cmd.Flags().StringVar(&selector, "tenant-selector", "", "Share only with tenants whose labels match this selector, e.g. plan=enterprise.")
	return cmd
}

func newSecretGetCommand(o *rootOptions) *cobra.Command {
	var show bool
	cmd := &cobra.Command{
		Use:     "get NAME",
		Short:   "Show a secret's keys (and, with --show, its values).",
		Example: `  landlordctl secrets get stripe --show`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, store, namespace, err := o.load()
			if err != nil {
				return err
			}
			s, err := store.Get(cmd.Context(), namespace, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(o.out, "name:      %s/%s\ntype:      %s\n", s.Namespace, s.Name, s.Type)
			if s.Labels[tenancyv1alpha1.SharedLabel] == "true" {
				sel := s.Annotations[tenancyv1alpha1.TenantSelectorAnnotation]
				if sel == "" {
					sel = "all tenants"
				}
				fmt.Fprintf(o.out, "shared:    %s\n", sel)
			}
			fmt.Fprintln(o.out, "data:")
			for _, k := range slices.Sorted(maps.Keys(s.Data)) {
				if show {
					fmt.Fprintf(o.out, "  %s: %s\n", k, s.Data[k])
				} else {
					fmt.Fprintf(o.out, "  %s: %d bytes\n", k, len(s.Data[k]))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&show, "show", false, "Print the values.")
	return cmd
}

func newSecretListCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the secrets of a namespace: names, keys and sharing, never values.",
		Example: `  landlordctl secrets list`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, store, namespace, err := o.load()
			if err != nil {
				return err
			}
			secrets, err := store.List(cmd.Context(), namespace)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(o.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tTYPE\tKEYS\tSHARED")
			for _, s := range secrets {
				shared := "no"
				if s.Labels[tenancyv1alpha1.SharedLabel] == "true" {
					shared = "yes"
					if sel := s.Annotations[tenancyv1alpha1.TenantSelectorAnnotation]; sel != "" {
						shared = sel
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.Name, s.Type, strings.Join(slices.Sorted(maps.Keys(s.Data)), ","), shared)
			}
			return w.Flush()
		},
	}
}

func newSecretDeleteCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete a secret from the store (the next sync removes a shared secret from every tenant).",
		Example: `  landlordctl secrets delete stripe`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, store, namespace, err := o.load()
			if err != nil {
				return err
			}
			if err := store.Delete(cmd.Context(), namespace, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(o.out, "secret %s/%s deleted\n", namespace, args[0])
			return nil
		},
	}
}

func newSecretSyncCommand(o *rootOptions) *cobra.Command {
	var maxDeletionPercent int
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Bring the cluster's template namespace in line with the store now.",
		Long: `Bring the cluster's template namespace in line with the store now. Like the operator's own sync,
it changes nothing when the store is not the one the namespace records (a wrong configuration
or context), removes nothing when more than --max-deletion-percent of the namespace's shared
secrets left the store (the configuration's secrets.maxDeletionPercent by default), and never
rewrites or removes a Secret someone else wrote there. With secrets.sharedSource Namespace it
writes no Secret: it records the store in the namespace, or checks the one recorded.`,
		Example: `  landlordctl --config landlord.yaml secrets sync`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, store, _, err := o.load()
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			if maxDeletionPercent == 0 {
				maxDeletionPercent = cfg.Secrets.MaxDeletionPercent
			}
			if cfg.Secrets.SharedSource == config.SharedFromNamespace {
				if err := templatesync.RecordStore(cmd.Context(), c, secret.WithTimeout(store, cfg.Secrets.Store.Timeout.Duration), cfg.Secrets.TemplateNamespace); err != nil {
					return err
				}
				fmt.Fprintf(o.out, "namespace %s records the store; its Secrets are written by another tool (secrets.sharedSource %s), and nothing was written there\n", cfg.Secrets.TemplateNamespace, config.SharedFromNamespace)
				return nil
			}
			opts := templatesync.Options{MaxDeletionPercent: maxDeletionPercent}
			if err := templatesync.Mirror(cmd.Context(), c, secret.WithTimeout(store, cfg.Secrets.Store.Timeout.Duration), cfg.Secrets.TemplateNamespace, opts); err != nil {
				return err
			}
			fmt.Fprintf(o.out, "namespace %s is in line with the store\n", cfg.Secrets.TemplateNamespace)
			return nil
		},
	}
	cmd.Flags().IntVar(&maxDeletionPercent, "max-deletion-percent", 0, "Largest share of the namespace's shared secrets this sync may remove (100 to remove every one the store no longer holds).")
	return cmd
}
