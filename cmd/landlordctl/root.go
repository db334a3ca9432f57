package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/version"
)

// pluginName is how kubectl runs the CLI as a plugin: a binary named kubectl-landlord on the
// PATH answers `kubectl landlord ...`.
const (
	binaryName = "landlordctl"
	pluginName = "kubectl landlord"
)

// rootOptions are the flags every command shares: kubectl's own connection flags (--kubeconfig,
// --context, --namespace, --as, --server, ...), and the operator configuration naming the
// secret store. Commands reach the cluster through restConfig or client, so that every one of
// them honours the same flags the same way.
type rootOptions struct {
	configPath string
	kube       *genericclioptions.ConfigFlags
	// name is how the user invoked the CLI ("landlordctl" or "kubectl landlord"), for messages.
	name string
	out  io.Writer
}

// commandName is the name the CLI answers to when run as arg0: kubectl runs a plugin by its
// file name, kubectl-landlord.
func commandName(arg0 string) string {
	base := arg0[strings.LastIndexAny(arg0, `/\`)+1:]
	base = strings.TrimSuffix(base, ".exe")
	if strings.HasPrefix(base, "kubectl-") {
		return pluginName
	}
	return binaryName
}

func newRootCommand(out io.Writer) *cobra.Command { return newRootCommandAs(binaryName, out) }

// newRootCommandAs builds the CLI as invoked under name: usage, examples and help then name
// the command as the user typed it.
func newRootCommandAs(name string, out io.Writer) *cobra.Command {
	o := &rootOptions{
		name: name,
		out:  out,
		// Not persistent: a rollout builds one configuration per context from the same flags.
		kube: genericclioptions.NewConfigFlags(false),
	}
	root := &cobra.Command{
		Use:   binaryName,
		Short: "Operate Landlord: tenants, the secret store, component rollouts, spare pool claims and more.",
		Long: `Operate Landlord: list, watch and describe tenants, claims, pools, rollouts and database servers,
roll component versions out across the fleet, claim spare tenants, pause a tenant or have it
checked again now, move one to another cluster or one of its databases to another server,
render component templates before they are published, and manage the secret store. It connects
to clusters as kubectl does, with the same flags and output formats, installs as the kubectl
plugin "kubectl landlord", and completes commands and the names of the cluster's objects in
bash, zsh and fish (see "completion --help").`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	// The exit codes close the root's help only: they hold for every command.
	root.SetHelpTemplate(root.HelpTemplate() + "{{if not .HasParent}}\n" + exitCodesHelp + "\n{{end}}")
	flags := root.PersistentFlags()
	flags.StringVar(&o.configPath, "config", os.Getenv("LANDLORD_CONFIG"), "Operator configuration file naming the secret store ($LANDLORD_CONFIG).")
	o.kube.AddFlags(flags)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newGetCommand(o), newDescribeCommand(o), newStatusCommand(o), newClaimCommand(o), newRolloutCommand(o),
		newTemplateCommand(o), newSecretsCommand(o), newVersionCommand(o),
		newSuspendCommand(o), newResumeCommand(o), newReconcileCommand(o), newMoveCommand(o), newCheckCommand(o), newUsageCommand(o),
		newRestoreCommand(o), newBackupCommand(o), newDBCommand(o), newTenantCommand(o), newCompletionCommand(o),
	)
	registerConnectionCompletions(root, o)
	markCommandErrors(root)
	root.SetUsageTemplate(groupUsageTemplate(root))
	if name != binaryName {
		renameCommands(root, name)
	}
	return root
}

// renameCommands makes help and examples speak of the command as it was invoked.
func renameCommands(cmd *cobra.Command, name string) {
	if cmd.Parent() == nil {
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		cmd.Annotations[cobra.CommandDisplayNameAnnotation] = name
	}
	cmd.Example = strings.ReplaceAll(cmd.Example, binaryName+" ", name+" ")
	cmd.Long = strings.ReplaceAll(cmd.Long, "$("+binaryName+" ", "$("+name+" ")
	for _, c := range cmd.Commands() {
		renameCommands(c, name)
	}
}

// restConfig is the connection the flags name: the kubeconfig's context (or --context), with
// --server, --as and the other overrides applied.
func (o *rootOptions) restConfig() (*rest.Config, error) {
	return o.restConfigFor("")
}

// restConfigFor is restConfig for the named context ("" for the one the flags name).
func (o *rootOptions) restConfigFor(context string) (*rest.Config, error) {
	if context != "" {
		saved := *o.kube.Context
		*o.kube.Context = context
		defer func() { *o.kube.Context = saved }()
	}
	raw, err := o.checkKubeconfig()
	if err != nil {
		return nil, err
	}
	cfg, err := o.kube.ToRESTConfig()
	if err != nil {
		if raw.CurrentContext == "" && *o.kube.Context == "" {
			return nil, errors.New("kubeconfig has no current context: name one with --context")
		}
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = binaryName + "/" + version.Get().Version + " " + rest.DefaultKubernetesUserAgent()
	return cfg, nil
}

// checkKubeconfig loads the kubeconfig and checks the context the flags name is in it, so that
// a misspelled --context is said as such, and that the context's cluster is in it too: client-go
// takes a context without its cluster for no configuration at all and connects to its default,
// plain http://localhost:8080 (inside a pod, the pod's own cluster), so a command would act on
// another cluster than the one named.
func (o *rootOptions) checkKubeconfig() (clientcmdapi.Config, error) {
	raw, err := o.kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return raw, fmt.Errorf("loading kubeconfig: %w", err)
	}
	name := *o.kube.Context
	if name != "" {
		if _, ok := raw.Contexts[name]; !ok {
			return raw, fmt.Errorf("kubeconfig has no context %q", name)
		}
	} else {
		name = raw.CurrentContext
	}
	if kctx, ok := raw.Contexts[name]; ok && *o.kube.ClusterName == "" && *o.kube.APIServer == "" {
		if _, ok := raw.Clusters[kctx.Cluster]; !ok {
			return raw, fmt.Errorf("the context names cluster %q, which the kubeconfig does not have", kctx.Cluster)
		}
	}
	return raw, nil
}

// client is a client of the cluster the flags name, knowing Landlord's and Kubernetes' types,
// that can also watch.
func (o *rootOptions) client() (client.WithWatch, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
}

// contextName is the kubeconfig context the flags name, for messages.
func (o *rootOptions) contextName() string {
	if *o.kube.Context != "" {
		return *o.kube.Context
	}
	raw, err := o.kube.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// namespace is --namespace, or else the namespace of the kubeconfig's context, or else default,
// as with kubectl.
func (o *rootOptions) namespace() (string, error) {
	if _, err := o.checkKubeconfig(); err != nil {
		return "", err
	}
	ns, _, err := o.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	return ns, nil
}

// load reads the operator configuration and opens the secret store it names. The store
// namespace is --namespace when given, else the template namespace (never the kubeconfig's
// namespace: the store is not the cluster).
func (o *rootOptions) load() (config.Config, secret.Store, string, error) {
	cfg, err := config.Load(o.configPath)
	if err != nil {
		return cfg, nil, "", err
	}
	store, err := secret.Open(context.Background(), cfg.Secrets.Store)
	if err != nil {
		return cfg, nil, "", err
	}
	ns := *o.kube.Namespace
	if ns == "" {
		ns = cfg.Secrets.TemplateNamespace
	}
	return cfg, store, ns, nil
}
