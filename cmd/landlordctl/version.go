package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/version"
)

// operatorNamespace is where config/manager and the chart install the operator.
const operatorNamespace = "landlord-system"

// operatorLabels select the operator's Deployment, as config/manager labels it.
var operatorLabels = client.MatchingLabels{"app.kubernetes.io/name": "landlord", "app.kubernetes.io/component": "controller-manager"}

// operatorTimeout bounds the look for the operator, so that version answers quickly without a
// reachable cluster.
const operatorTimeout = 5 * time.Second

// versions is what `version` reports.
type versionInfo struct {
	Client   version.Info  `json:"client"`
	Operator *operatorInfo `json:"operator,omitempty"`
}

// operatorInfo is the operator as found in the cluster: its version is its image's tag.
type operatorInfo struct {
	Version   string `json:"version"`
	Image     string `json:"image,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// Reason says why the version is unknown.
	Reason string `json:"reason,omitempty"`
}

func newVersionCommand(root *rootOptions) *cobra.Command {
	var (
		output     string
		clientOnly bool
	)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the CLI's version and, from the cluster, the operator's.",
		Long: `Print this build's version, commit, Go version and platform and, unless --client, the version of
the Landlord operator running in the cluster, read from the image of its Deployment (labeled
app.kubernetes.io/name=landlord, app.kubernetes.io/component=controller-manager). The operator's
version is "unknown", with the reason, when the cluster cannot be reached or shows no operator.`,
		Example: `  landlordctl version
  landlordctl version --client -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: want json or yaml", output)
			}
			info := versionInfo{Client: version.Get()}
			if !clientOnly {
				info.Operator = findOperator(cmd.Context(), root)
			}
			if output != "" {
				return printData(root.out, output, info)
			}
			c := info.Client
			fmt.Fprintf(root.out, "Client: %s (commit %s, %s, %s)\n", c.Version, c.Commit, c.GoVersion, c.Platform)
			if op := info.Operator; op != nil {
				switch {
				case op.Reason != "":
					fmt.Fprintf(root.out, "Operator: %s (%s)\n", op.Version, op.Reason)
				default:
					fmt.Fprintf(root.out, "Operator: %s (image %s, namespace %s)\n", op.Version, op.Image, op.Namespace)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json|yaml.")
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Only the CLI's version; the cluster is not contacted.")
	return cmd
}

// findOperator looks for the operator's Deployment in every namespace.
func findOperator(parent context.Context, root *rootOptions) *operatorInfo {
	unknown := func(format string, args ...any) *operatorInfo {
		return &operatorInfo{Version: "unknown", Reason: fmt.Sprintf(format, args...)}
	}
	cfg, err := root.restConfig()
	if err != nil {
		return unknown("%v", err)
	}
	cfg.Timeout = operatorTimeout
	c, err := client.New(cfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return unknown("%v", err)
	}
	ctx, cancel := context.WithTimeout(parent, operatorTimeout)
	defer cancel()
	list := &appsv1.DeploymentList{}
	// Only the operator's own namespace: the labels are not protected elsewhere, and a tenant
	// could label a Deployment of its own to pass for the operator.
	if err := c.List(ctx, list, operatorLabels, client.InNamespace(operatorNamespace)); err != nil {
		return unknown("listing Deployments: %v", err)
	}
	for _, d := range list.Items {
		for _, container := range d.Spec.Template.Spec.Containers {
			if container.Name == "manager" {
				return &operatorInfo{Version: imageTag(container.Image), Image: container.Image, Namespace: d.Namespace}
			}
		}
	}
	return unknown("no Landlord operator Deployment found")
}

// imageTag is an image reference's tag, or "unknown" for one pinned only by digest or untagged.
func imageTag(image string) string {
	ref, _, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[colon+1:]
	}
	return "unknown"
}
