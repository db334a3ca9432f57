package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
)

// checkStatus is a check's verdict: failed fails the command, a warning does not.
type checkStatus string

const (
	checkOK      checkStatus = "ok"
	checkWarning checkStatus = "warning"
	checkFailed  checkStatus = "failed"
)

// checkResult is one check's verdict, what it found, and for anything but ok, what to do.
type checkResult struct {
	Name    string      `json:"name"`
	Status  checkStatus `json:"status"`
	Message string      `json:"message"`
	Fix     string      `json:"fix,omitempty"`
}

// checkReport is what `check -o json|yaml` prints.
type checkReport struct {
	Checks   []checkResult `json:"checks"`
	Failed   int           `json:"failed"`
	Warnings int           `json:"warnings"`
}

func passed(format string, args ...any) checkResult {
	return checkResult{Status: checkOK, Message: fmt.Sprintf(format, args...)}
}

func warning(message, fix string) checkResult {
	return checkResult{Status: checkWarning, Message: message, Fix: fix}
}

func failed(message, fix string) checkResult {
	return checkResult{Status: checkFailed, Message: message, Fix: fix}
}

// checkTimeout bounds each check, so that one unreachable dependency (a secret store, a cluster
// down) does not hold the others.
const checkTimeout = 20 * time.Second

func newCheckCommand(root *rootOptions) *cobra.Command {
	var (
		output         string
		leaseNamespace string
	)
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a cluster for Landlord: Kubernetes, the CRDs, roles and policies, the operator, the secret store and the database servers.",
		Long: `Check, before and after installing or upgrading Landlord, that the cluster can run this build and
runs it as it should:

  kubernetes-version   Kubernetes 1.36 or later
  admission-apis       admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and MutatingAdmissionPolicy served
  crds                 Landlord's CRDs installed and the same as this build's
  tenant-roles         the tenant ClusterRoles present and unedited
  admission-policies   the admission policies and bindings present and as the operator makes them for --config
  operator-leader      the operator's leader election Lease, of every shard, renewed within its duration
  secret-store         the store --config names is the one the cluster records
  database-servers     every DatabaseServer Ready, as the operator last found it
  platform-namespaces  every namespace network.platformNamespaceSelector names exists
  flux, argo-cd        Flux v2.9 and Argo CD v2.10 or later, when installed

Each check is ok, warning or failed, with what to do for anything but ok. Without --config the
policies are compared with those of the default configuration (a difference is then a warning)
and the secret store is not checked. The command exits non-zero when a check failed; warnings
alone do not fail it.`,
		Example: `  landlordctl check --config landlord.yaml
  landlordctl check --context prod-eu --config landlord.yaml -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: want json or yaml", output)
			}
			k, err := newChecker(root, leaseNamespace)
			if err != nil {
				return err
			}
			report := k.run(cmd.Context())
			if output != "" {
				if err := printData(root.out, output, report); err != nil {
					return err
				}
			} else {
				printChecks(root.out, report)
			}
			if report.Failed > 0 {
				return fmt.Errorf("%d of %d checks failed", report.Failed, len(report.Checks))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json|yaml.")
	cmd.Flags().StringVar(&leaseNamespace, "operator-namespace", operatorNamespace, "Namespace the operator runs in, where its leader election Leases are.")
	return cmd
}

// checker holds what the checks read the cluster and the configuration with.
type checker struct {
	client     client.Client
	discovery  discovery.DiscoveryInterface
	config     config.Config
	configured bool
	// operatorNamespace holds the operator's leader election Leases.
	operatorNamespace string
	now               func() time.Time
}

func newChecker(root *rootOptions, operatorNamespace string) (*checker, error) {
	cfg, err := config.Load(root.configPath)
	if err != nil {
		return nil, err
	}
	restCfg, err := root.restConfig()
	if err != nil {
		return nil, err
	}
	if restCfg.Timeout == 0 {
		restCfg.Timeout = checkTimeout
	}
	scheme := tenancyv1alpha1.Scheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(restCfg))
	if err != nil {
		return nil, err
	}
	return &checker{client: c, discovery: dc, config: cfg, configured: root.configPath != "",
		operatorNamespace: operatorNamespace, now: time.Now}, nil
}

// run runs every check, in the order a platform team fixes them: the cluster, what is
// installed, what runs, then what it depends on.
func (k *checker) run(ctx context.Context) checkReport {
	checks := []struct {
		name string
		run  func(context.Context) checkResult
	}{
		{"kubernetes-version", k.kubernetesVersion},
		{"admission-apis", k.admissionAPIs},
		{"crds", k.crds},
		{"tenant-roles", k.tenantRoles},
		{"admission-policies", k.admissionPolicies},
		{"operator-leader", k.operatorLeader},
		{"secret-store", k.secretStore},
		{"database-servers", k.databaseServers},
		{"platform-namespaces", k.platformNamespaces},
		{"flux", k.gitOps(fluxTool)},
		{"argo-cd", k.gitOps(argoCDTool)},
	}
	var report checkReport
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		res := c.run(cctx)
		cancel()
		res.Name = c.name
		switch res.Status {
		case checkFailed:
			report.Failed++
		case checkWarning:
			report.Warnings++
		}
		report.Checks = append(report.Checks, res)
	}
	return report
}

// printChecks writes the report for people: one line per check, then what to do.
func printChecks(out io.Writer, report checkReport) {
	for _, c := range report.Checks {
		fmt.Fprintf(out, "%-9s %s: %s\n", "["+string(c.Status)+"]", c.Name, c.Message)
		if c.Fix != "" {
			fmt.Fprintf(out, "%-9s to fix: %s\n", "", c.Fix)
		}
	}
	switch {
	case report.Failed == 0 && report.Warnings == 0:
		fmt.Fprintf(out, "all %d checks passed\n", len(report.Checks))
	default:
		fmt.Fprintf(out, "%d failed, %d warnings, %d passed\n", report.Failed, report.Warnings, len(report.Checks)-report.Failed-report.Warnings)
	}
}

// listed joins problems, one a line under the check's own.
func listed(problems []string) string {
	if len(problems) == 1 {
		return problems[0]
	}
	return "\n  - " + strings.Join(problems, "\n  - ")
}
