package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

const (
	// reservedLabelPrefix is Landlord's own label space; the API refuses claim labels under it.
	reservedLabelPrefix = "tenancy.landlord.dev/"
	// maxClaimLabels and maxPoolName are the API's limits on a claim.
	maxClaimLabels = 32
	maxPoolName    = 40
)

// claimEmail is the API's check of a claim's email.
var claimEmail = regexp.MustCompile(`^[^@ ]+@[^@ ]+[.][^@ ]+$`)

type claimOptions struct {
	pool         string
	organization string
	email        string
	namespace    string
	labels       []string
	name         string
	wait         bool
	timeout      time.Duration
	output       *outputFlags
}

func newClaimCommand(root *rootOptions) *cobra.Command {
	o := &claimOptions{}
	cmd := &cobra.Command{
		Use:   "claim --pool POOL --org ORGANIZATION --email EMAIL",
		Short: "Claim a Ready spare tenant of a pool for a customer.",
		Long: `Create a TenantClaim: the operator binds one Ready spare of the pool to the customer, labels it
allocated, stamps the organization and email on it and releases it from the pool, which then
refills. Label keys under tenancy.landlord.dev/ are Landlord's own and refused.

Without --wait, the claim's namespace/name is printed and the command returns at once; follow it
with landlordctl get claims. With --wait, the claim is watched until it is bound, and the tenant's
name is printed alone on stdout, one line, for scripts:

  tenant=$(landlordctl claim --pool standard --org "Acme Inc." --email ops@acme.example --wait)

Progress and the outcome for people go to stderr: the claim's name, why it is still pending (such
as NoReadySpare while the pool refills, or PoolNotFound), then the tenant's namespace and how long
the bind took, as seen from landlordctl. A claim that fails, or is not bound within --timeout, makes
the command exit non-zero with the claim's phase, reason and message; a claim not bound in time is
left in place and still binds once the pool has a Ready spare, unless it is deleted.

The claim is created in --namespace, or the namespace of the kubeconfig's context. With -o
json|yaml|name the claim itself is printed instead (once bound, with --wait).`,
		Example: `  landlordctl claim --pool standard --org "Acme Inc." --email ops@acme.example --label plan=trial
  landlordctl claim --pool standard --org "Acme Inc." --email ops@acme.example -n signups --name acme --wait --timeout 30s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClaim(cmd.Context(), root, o, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.pool, "pool", "", "TenantPool to take a spare from (required).")
	f.StringVar(&o.organization, "org", "", "The customer's organization (required).")
	f.StringVar(&o.email, "email", "", "The customer's contact address (required).")
	f.StringArrayVar(&o.labels, "label", nil, "Label for the tenant, KEY=VALUE (repeatable); keys under tenancy.landlord.dev/ are reserved.")
	f.StringVar(&o.name, "name", "", `Name of the claim (default: generated, "claim-" and a suffix).`)
	f.BoolVar(&o.wait, "wait", false, "Wait until the claim is bound and print the tenant's name.")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "How long --wait waits for the bind.")
	o.output = addOutputFlags(cmd, false)
	_ = cmd.MarkFlagRequired("pool")
	_ = cmd.MarkFlagRequired("org")
	_ = cmd.MarkFlagRequired("email")
	_ = cmd.RegisterFlagCompletionFunc("pool", completeNamesOf(root, kindOf("TenantPool"), 0))
	return cmd
}

// parseClaimLabels turns --label flags into the claim's labels, refusing what the API would.
func parseClaimLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, l := range flags {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--label %q: want KEY=VALUE", l)
		}
		if strings.HasPrefix(k, reservedLabelPrefix) {
			return nil, fmt.Errorf("--label %q: keys under %s are reserved for Landlord", l, reservedLabelPrefix)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--label %q: key: %s", l, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("--label %q: value: %s", l, strings.Join(errs, "; "))
		}
		if prev, dup := out[k]; dup && prev != v {
			return nil, fmt.Errorf("--label %q: key %s given twice, with %q and %q", l, k, prev, v)
		}
		out[k] = v
	}
	if len(out) > maxClaimLabels {
		return nil, fmt.Errorf("--label: %d labels, at most %d are allowed", len(out), maxClaimLabels)
	}
	return out, nil
}

// newClaim checks the flags and builds the claim, before any cluster is contacted.
func (o *claimOptions) newClaim() (*tenancyv1alpha1.TenantClaim, error) {
	switch {
	case len(o.pool) > maxPoolName || len(validation.IsDNS1123Subdomain(o.pool)) > 0:
		return nil, fmt.Errorf("--pool %q: want a pool name (lowercase letters, digits, '-' and '.', at most %d characters)", o.pool, maxPoolName)
	case strings.TrimSpace(o.organization) == "":
		return nil, errors.New("--org must not be empty")
	case len(o.organization) > 256:
		return nil, errors.New("--org: at most 256 characters")
	case !claimEmail.MatchString(o.email) || len(o.email) > 254:
		return nil, fmt.Errorf("--email %q: want an email address such as ops@example.com", o.email)
	case len(validation.IsDNS1123Label(o.namespace)) > 0:
		return nil, fmt.Errorf("--namespace %q: want a namespace name", o.namespace)
	case o.name != "" && len(validation.IsDNS1123Subdomain(o.name)) > 0:
		return nil, fmt.Errorf("--name %q: want lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", o.name)
	case o.timeout <= 0:
		return nil, errors.New("--timeout must be positive")
	}
	labels, err := parseClaimLabels(o.labels)
	if err != nil {
		return nil, err
	}
	claim := &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: o.name},
		Spec: tenancyv1alpha1.TenantClaimSpec{
			Pool: o.pool, Organization: o.organization, Email: o.email, Labels: labels,
		},
	}
	if o.name == "" {
		claim.GenerateName = "claim-"
	}
	return claim, nil
}

func runClaim(ctx context.Context, root *rootOptions, o *claimOptions, stderr io.Writer) error {
	if !o.output.human() {
		if _, err := o.output.print.ToPrinter(); err != nil {
			return err
		}
	}
	ns, err := root.namespace()
	if err != nil {
		return err
	}
	o.namespace = ns
	claim, err := o.newClaim()
	if err != nil {
		return asUsage(err)
	}
	c, err := root.client()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := c.Create(ctx, claim); err != nil {
		return fmt.Errorf("creating the claim: %w", err)
	}
	key := claim.Namespace + "/" + claim.Name
	if !o.wait {
		if !o.output.human() {
			claim.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("TenantClaim"))
			return o.output.printObject(root.out, claim)
		}
		fmt.Fprintln(root.out, key)
		return nil
	}
	fmt.Fprintf(stderr, "claim %s created; waiting for a Ready spare of pool %s\n", key, o.pool)
	bound, err := waitBound(ctx, c, claim, o.timeout, stderr)
	if err != nil {
		return err
	}
	if o.output.human() {
		fmt.Fprintln(root.out, bound.Status.Tenant)
	} else {
		bound.SetGroupVersionKind(tenancyv1alpha1.GroupVersion.WithKind("TenantClaim"))
		if err := o.output.printObject(root.out, bound); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "claim %s bound tenant %s (namespace %s) in %s\n",
		key, bound.Status.Tenant, bound.Status.Namespace, time.Since(start).Round(time.Millisecond))
	return nil
}

// waitBound watches the created claim until it is Bound, gone, failed (kstatus Failed: a
// Stalled condition), or the time is up. Each new reason the claim gives while pending is
// written to progress.
func waitBound(parent context.Context, c client.WithWatch, created *tenancyv1alpha1.TenantClaim, timeout time.Duration, progress io.Writer) (*tenancyv1alpha1.TenantClaim, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	key, pool := client.ObjectKeyFromObject(created), created.Spec.Pool
	name := key.Namespace + "/" + key.Name
	// One read first: a claim already gone, or one this user may not read, is said at once
	// rather than after the informer underneath the watch retried until the timeout.
	last := &tenancyv1alpha1.TenantClaim{}
	switch err := c.Get(ctx, key, last); {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("claim %s was deleted before it was bound", name)
	case err != nil:
		return nil, fmt.Errorf("reading claim %s: %w", name, err)
	}
	if last.Status.Reason != "" {
		fmt.Fprintf(progress, "claim %s: %s\n", name, claimStatus(last))
	}
	var bound *tenancyv1alpha1.TenantClaim
	seen := func(obj runtime.Object, deleted bool) (bool, error) {
		claim, ok := obj.(*tenancyv1alpha1.TenantClaim)
		if !ok || claim.Name != key.Name || claim.Namespace != key.Namespace {
			return false, nil
		}
		if deleted {
			return false, fmt.Errorf("claim %s was deleted before it was bound", name)
		}
		if claim.Status.Phase == tenancyv1alpha1.ClaimBound {
			bound = claim
			return true, nil
		}
		if res, err := kstatusOf(claim, "TenantClaim"); err == nil && res.Status == kstatus.FailedStatus {
			return false, fmt.Errorf("claim %s failed: %s", name, claimStatus(claim))
		}
		if claim.Status.Reason != "" && (last.Status.Reason != claim.Status.Reason || last.Status.Message != claim.Status.Message) {
			fmt.Fprintf(progress, "claim %s: %s\n", name, claimStatus(claim))
		}
		last = claim
		return false, nil
	}
	settle := func(store cache.Store) (bool, error) {
		if _, exists, _ := store.Get(created); !exists {
			return false, fmt.Errorf("claim %s was deleted before it was bound", name)
		}
		return false, nil
	}
	scope := watchScope{
		list: &tenancyv1alpha1.TenantClaimList{}, namespace: key.Namespace,
		fields: fields.OneTermEqualSelector("metadata.name", key.Name),
	}
	err := watchUntil(ctx, c, scope, &tenancyv1alpha1.TenantClaim{}, seen, settle)
	switch {
	case bound != nil:
		return bound, nil
	case parent.Err() != nil:
		return nil, fmt.Errorf("waiting for claim %s: %w", name, parent.Err())
	case ctx.Err() == nil && err != nil:
		return nil, err
	}
	why := claimStatus(last)
	if last.Status.Phase == "" {
		why = "it has no status yet; is the Landlord operator running?"
	}
	return nil, fmt.Errorf("claim %s not bound within %s: %s (the claim is left in place and binds once pool %s has a Ready spare; delete it to withdraw)",
		name, timeout, why, pool)
}

// claimStatus is the claim's phase, reason and message, as one line.
func claimStatus(c *tenancyv1alpha1.TenantClaim) string {
	s := string(c.Status.Phase)
	if s == "" {
		s = "no phase"
	}
	parts := []string{s}
	if c.Status.Reason != "" {
		parts = append(parts, c.Status.Reason)
	}
	if c.Status.Message != "" {
		parts = append(parts, c.Status.Message)
	}
	return strings.Join(parts, ": ")
}
