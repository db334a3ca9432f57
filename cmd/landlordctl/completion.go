package main

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// completionTimeout bounds the reads a completion makes: a shell waits on them at every TAB, and
// an unreachable cluster must leave it with no names rather than hang it.
const completionTimeout = 5 * time.Second

// completionExecutable is the name kubectl runs to complete a plugin's arguments: for the plugin
// kubectl-landlord, kubectl_complete-landlord on the PATH, given the words typed after
// "kubectl landlord". This binary answers to that name as well, so a link to it is all kubectl
// needs.
const completionExecutable = "kubectl_complete-landlord"

func newCompletionCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion (bash|zsh|fish|powershell)",
		Short: "Print the shell completion script for bash, zsh, fish or powershell.",
		Long: `Print the script that makes the shell complete landlordctl's commands, flags, kinds and the names
of tenants, pools, claims, rollouts, database servers and templates, read from the cluster the
flags typed so far name (as kubectl completes names).

  bash:  source <(landlordctl completion bash)   # in ~/.bashrc; needs the bash-completion package
  zsh:   landlordctl completion zsh > "${fpath[1]}/_landlordctl"   # then start a new shell
  fish:  landlordctl completion fish > ~/.config/fish/completions/landlordctl.fish

kubectl completes "kubectl landlord" itself, by running ` + completionExecutable + ` from the PATH
with the words typed after "kubectl landlord". That is this program under another name: link it
next to kubectl-landlord, and kubectl's own completion (kubectl completion bash|zsh|fish) does
the rest:

  ln -s "$(command -v kubectl-landlord)" "$(dirname "$(command -v kubectl-landlord)")/` + completionExecutable + `"`,
		Example: `  landlordctl completion bash > /etc/bash_completion.d/landlordctl
  landlordctl completion zsh > "${fpath[1]}/_landlordctl"`,
		Args:      exactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if root.name != binaryName {
				// A script made here would complete a command named landlordctl.
				return usageErrorf(`kubectl completes "kubectl landlord" through kubectl's own completion script: put %s on the PATH, next to kubectl-landlord (see --help)`, completionExecutable)
			}
			return writeCompletion(cmd.Root(), root.out, args[0])
		},
	}
	return cmd
}

func writeCompletion(root *cobra.Command, out io.Writer, shell string) error {
	switch shell {
	case "bash":
		return root.GenBashCompletionV2(out, true)
	case "zsh":
		return root.GenZshCompletion(out)
	case "fish":
		return root.GenFishCompletion(out, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(out)
	}
	return usageErrorf("unknown shell %q: want bash, zsh, fish or powershell", shell)
}

// completeFrom completes one of a fixed list of words.
func completeFrom(words []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []string
		for _, w := range words {
			if strings.HasPrefix(w, toComplete) {
				out = append(out, w)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionContext is the context of one completion's reads.
func completionContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
}

// objectNames lists the names of a kind's objects in the cluster of the kubeconfig context
// kubeContext ("" for the one the flags name), in namespace ("" for every one or a cluster-scoped
// kind), starting with prefix. A failure completes nothing: the shell has nowhere to say why.
func objectNames(cmd *cobra.Command, root *rootOptions, kubeContext string, k *resourceKind, namespace, prefix string) []string {
	cfg, err := root.restConfigFor(kubeContext)
	if err != nil {
		return nil
	}
	c, err := client.New(cfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return nil
	}
	ctx, cancel := completionContext(cmd)
	defer cancel()
	// Names only: a TAB on a fleet of thousands lists their metadata, not their specs and
	// statuses.
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind(k.kind + "List"))
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var names []string
	for _, item := range list.Items {
		if strings.HasPrefix(item.Name, prefix) {
			names = append(names, item.Name)
		}
	}
	slices.Sort(names)
	return names
}

// completeNamesOf completes the names of a kind's objects, none already typed, for a command
// taking up to most of them (0: any number).
func completeNamesOf(root *rootOptions, k *resourceKind, most int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if most > 0 && len(args) >= most {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		namespace, ok := completionNamespace(cmd, root, k)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return without(objectNames(cmd, root, "", k, namespace, toComplete), args), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeTenantIn completes one tenant's name from the cluster of the context a flag names
// (move's --from), or of the one the connection flags name while it is not typed yet.
func completeTenantIn(root *rootOptions, contextFlag string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kubeContext, _ := cmd.Flags().GetString(contextFlag)
		return objectNames(cmd, root, kubeContext, kindOf("Tenant"), "", toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completionNamespace is the namespace whose objects a completion lists: none for a
// cluster-scoped kind or with -A, else the one the flags or the kubeconfig name.
func completionNamespace(cmd *cobra.Command, root *rootOptions, k *resourceKind) (string, bool) {
	if !k.namespaced {
		return "", true
	}
	if f := cmd.Flags().Lookup("all-namespaces"); f != nil && f.Value.String() == "true" {
		return "", true
	}
	ns, err := root.namespace()
	return ns, err == nil
}

// completeKindThenNames completes get's and describe's arguments: a kind first, then the names
// of that kind's objects.
func completeKindThenNames(root *rootOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			var out []cobra.Completion
			for _, k := range kinds {
				if strings.HasPrefix(k.name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(k.name(), k.kind))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
		k, ok := kindByName(args[0])
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeNamesOf(root, k, 0)(cmd, args[1:], toComplete)
	}
}

// completeComponents completes rollout's --component with the components that have published
// templates.
func completeComponents(root *rootOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		components := map[string]bool{}
		for _, t := range publishedTemplates(cmd, root) {
			if strings.HasPrefix(t.Spec.Component, toComplete) {
				components[t.Spec.Component] = true
			}
		}
		return slices.Sorted(maps.Keys(components)), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeVersions completes rollout's --version with the versions published for the
// --component typed so far (every version without one).
func completeVersions(root *rootOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		component, _ := cmd.Flags().GetString("component")
		versions := map[string]bool{}
		for _, t := range publishedTemplates(cmd, root) {
			if (component == "" || t.Spec.Component == component) && strings.HasPrefix(t.Spec.Version, toComplete) {
				versions[t.Spec.Version] = true
			}
		}
		return slices.Sorted(maps.Keys(versions)), cobra.ShellCompDirectiveNoFileComp
	}
}

func publishedTemplates(cmd *cobra.Command, root *rootOptions) []tenancyv1alpha1.ComponentTemplate {
	c, err := root.client()
	if err != nil {
		return nil
	}
	ctx, cancel := completionContext(cmd)
	defer cancel()
	list := &tenancyv1alpha1.ComponentTemplateList{}
	if err := c.List(ctx, list); err != nil {
		return nil
	}
	return list.Items
}

// completeContexts completes a kubeconfig context's name, as kubectl's --context.
func completeContexts(root *rootOptions) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		raw, err := root.kube.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for name := range raw.Contexts {
			if strings.HasPrefix(name, toComplete) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces completes --namespace with the cluster's namespaces, as kubectl's.
func completeNamespaces(root *rootOptions) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := root.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := completionContext(cmd)
		defer cancel()
		list := &corev1.NamespaceList{}
		if err := c.List(ctx, list); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, ns := range list.Items {
			if strings.HasPrefix(ns.Name, toComplete) {
				out = append(out, ns.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// registerConnectionCompletions completes kubectl's --context and --namespace, as kubectl does.
func registerConnectionCompletions(root *cobra.Command, o *rootOptions) {
	_ = root.RegisterFlagCompletionFunc("context", completeContexts(o))
	_ = root.RegisterFlagCompletionFunc("namespace", completeNamespaces(o))
}

// without is names less those already typed.
func without(names, typed []string) []string {
	return slices.DeleteFunc(names, func(n string) bool { return slices.Contains(typed, n) })
}

// invocation is the name the CLI answers to and the arguments it runs, from how it was started:
// kubectl runs a plugin by its file name (kubectl-landlord), and a plugin's completion as
// kubectl_complete-landlord with the words to complete, which cobra completes as __complete.
func invocation(argv []string) (string, []string) {
	base := argv[0][strings.LastIndexAny(argv[0], `/\`)+1:]
	base = strings.TrimSuffix(base, ".exe")
	if base == completionExecutable {
		return pluginName, append([]string{cobra.ShellCompRequestCmd}, argv[1:]...)
	}
	return commandName(argv[0]), argv[1:]
}
