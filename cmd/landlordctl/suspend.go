package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/crdcheck"
)

// fieldManager is the field manager of landlordctl's writes. A name of its own matters on
// tenants a GitOps tool applies: Flux takes over (and so undoes) fields written by kubectl's
// field managers, but leaves alone a field its manifests do not set that another manager wrote.
const fieldManager = "landlordctl"

// reconcileOptions are the reconcile command's flags.
type reconcileOptions struct {
	wait    bool
	timeout time.Duration
}

func newSuspendCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suspend TENANT",
		Short: "Stop Landlord from changing a tenant until it is resumed.",
		Long: `Set the tenant's spec.suspend to true. While it is, Landlord changes nothing of the tenant: no
lifecycle phase runs, nothing that drifted is repaired, no shared secret is copied, no component or
database is changed. The tenant's Suspended condition says so; its other conditions keep what was
last observed. Deleting a suspended tenant still keeps its data, as for any tenant not Purged.

A tenant applied by Flux from Git keeps a suspend set here as long as its manifest in Git does not
set spec.suspend; if it does, Git owns the field: suspend the tenant in Git.`,
		Example:           `  landlordctl suspend acme`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setSuspend(cmd.Context(), root, args[0], true)
		},
	}
	return cmd
}

func newResumeCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume TENANT",
		Short: "Let Landlord converge a suspended tenant again, at once.",
		Long: `Remove the tenant's spec.suspend. Landlord converges the tenant at once: what drifted while it
was suspended is repaired, and spec changes made meanwhile are applied.`,
		Example:           `  landlordctl resume acme`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return setSuspend(cmd.Context(), root, args[0], false)
		},
	}
	return cmd
}

func newReconcileCommand(root *rootOptions) *cobra.Command {
	o := &reconcileOptions{}
	cmd := &cobra.Command{
		Use:   "reconcile TENANT",
		Short: "Ask Landlord to converge a tenant now, checking everything again.",
		Long: `Set the tenant's ` + tenancyv1alpha1.ReconcileRequestAnnotation + ` annotation to the current
time. Landlord converges the tenant at once and, rather than trusting what earlier reconciles found,
compares each of its objects with the API server's copy and checks its databases on their servers;
then it records the request in status.lastHandledReconcileAt.

With --wait, the command watches the tenant until the request is handled, then prints the tenant's
Ready condition, and fails if the tenant is not Ready. A suspended tenant is refused: it handles no
request until it is resumed.`,
		Example:           `  landlordctl reconcile acme --wait`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return requestReconcile(cmd.Context(), root, o, args[0], cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.wait, "wait", false, "Wait until the request is handled and report the tenant's Ready condition.")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "How long --wait waits.")
	return cmd
}

// patchTenant merge-patches one tenant: only the field the command is about is sent. Strict
// field validation makes the API server refuse a field the installed CRD does not declare,
// rather than drop it and answer success.
func patchTenant(ctx context.Context, c client.Client, name, patch string) (*tenancyv1alpha1.Tenant, error) {
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err := c.Patch(ctx, t, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(fieldManager), client.FieldValidation("Strict"))
	switch {
	case apierrors.IsNotFound(err):
		return nil, kindOf("Tenant").wrapNotFound("", name, err)
	case (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) && strings.Contains(err.Error(), "strict decoding error"):
		// The error quotes the whole tenant; the part that matters is its last clause.
		why := err.Error()
		if i := strings.LastIndex(why, "strict decoding error"); i >= 0 {
			why = why[i:]
		}
		return nil, fmt.Errorf("the API server refused the patch (%s); %s", why, outdatedCRD)
	}
	return t, err
}

// outdatedCRD is what to do about a Tenant CRD older than landlordctl.
const outdatedCRD = "the installed Tenant CRD is older than landlordctl: apply the CRDs of this release " +
	"(Helm never upgrades crds/: kubectl apply --server-side -f the chart's crds/)"

// checkTenantCRD refuses a Tenant CRD that lacks the fields suspend, resume and reconcile write
// or wait for: the API server would drop them and the command would look as if it worked. A
// check that cannot be made (an API server not serving OpenAPI v3 to this user) refuses
// nothing: the strict patch still catches a dropped spec.suspend.
func checkTenantCRD(ctx context.Context, root *rootOptions) error {
	cfg, err := root.restConfig()
	if err != nil {
		return err
	}
	var outdated *crdcheck.OutdatedError
	if err := crdcheck.Tenant(ctx, cfg); errors.As(err, &outdated) {
		return err
	}
	return nil
}

func setSuspend(ctx context.Context, root *rootOptions, name string, suspend bool) error {
	c, err := root.client()
	if err != nil {
		return err
	}
	// Resuming removes the field: absent is how a tenant that was never suspended reads.
	patch, doing, verb := `{"spec":{"suspend":null}}`, "resuming", "resumed"
	if suspend {
		patch, doing, verb = `{"spec":{"suspend":true}}`, "suspending", "suspended"
	}
	if err := checkTenantCRD(ctx, root); err != nil {
		return fmt.Errorf("%s tenant %s: %w", doing, name, err)
	}
	t, err := patchTenant(ctx, c, name, patch)
	if err != nil {
		if errors.As(err, new(notFoundError)) {
			return err
		}
		return fmt.Errorf("%s tenant %s: %w", doing, name, err)
	}
	if t.Spec.Suspend != suspend {
		return fmt.Errorf("%s tenant %s: the API server answered with spec.suspend %t; %s", doing, name, t.Spec.Suspend, outdatedCRD)
	}
	fmt.Fprintf(root.out, "tenant/%s %s\n", name, verb)
	return nil
}

func requestReconcile(ctx context.Context, root *rootOptions, o *reconcileOptions, name string, progress io.Writer) error {
	if o.wait && o.timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	c, err := root.client()
	if err != nil {
		return err
	}
	// Without status.lastHandledReconcileAt the request is never seen handled.
	if err := checkTenantCRD(ctx, root); err != nil {
		return fmt.Errorf("requesting a reconcile of tenant %s: %w", name, err)
	}
	current := &tenancyv1alpha1.Tenant{}
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, current); {
	case apierrors.IsNotFound(err):
		return kindOf("Tenant").wrapNotFound("", name, err)
	case err != nil:
		return err
	case current.Spec.Suspend:
		return fmt.Errorf("tenant %s is suspended, and handles no reconcile request until it is resumed (landlordctl resume %s)", name, name)
	}
	requested := time.Now().UTC().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.ReconcileRequestAnnotation, requested)
	if _, err := patchTenant(ctx, c, name, patch); err != nil {
		return fmt.Errorf("requesting a reconcile of tenant %s: %w", name, err)
	}
	if !o.wait {
		fmt.Fprintf(root.out, "tenant/%s reconcile requested at %s\n", name, requested)
		return nil
	}
	fmt.Fprintf(progress, "tenant %s: reconcile requested at %s; waiting for it to be handled\n", name, requested)
	handled, err := waitHandled(ctx, c, name, requested, o.timeout)
	if err != nil {
		return err
	}
	ready := meta.FindStatusCondition(handled.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	if ready == nil {
		return fmt.Errorf("tenant %s: reconciled, but it reports no Ready condition", name)
	}
	line := fmt.Sprintf("tenant/%s reconciled: Ready=%s %s: %s", name, ready.Status, ready.Reason, ready.Message)
	if ready.Status != metav1.ConditionTrue {
		return errors.New(line)
	}
	fmt.Fprintln(root.out, line)
	return nil
}

// waitHandled watches the tenant until its status records the request as handled. The watch
// starts with a list, so a request handled before the watch began is seen at once, and is
// re-established if the API server ends it.
func waitHandled(parent context.Context, c client.WithWatch, name, requested string, timeout time.Duration) (*tenancyv1alpha1.Tenant, error) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			list := &tenancyv1alpha1.TenantList{}
			return list, c.List(ctx, list, &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return c.Watch(ctx, &tenancyv1alpha1.TenantList{}, &client.ListOptions{Raw: &opts})
		},
	}
	var last *tenancyv1alpha1.Tenant
	ev, err := watchtools.UntilWithSync(ctx, lw, &tenancyv1alpha1.Tenant{}, nil, func(ev watch.Event) (bool, error) {
		t, ok := ev.Object.(*tenancyv1alpha1.Tenant)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("tenant %s was deleted before the request was handled", name)
		}
		last = t
		return t.Status.LastHandledReconcileAt == requested, nil
	})
	switch {
	case err == nil:
		return ev.Object.(*tenancyv1alpha1.Tenant), nil
	case parent.Err() != nil:
		return nil, fmt.Errorf("waiting for tenant %s: %w", name, parent.Err())
	case errors.Is(err, watchtools.ErrWatchClosed), ctx.Err() != nil:
		why := "is the Landlord operator running?"
		if last != nil && last.Spec.Suspend {
			why = "the tenant is suspended"
		}
		return nil, fmt.Errorf("tenant %s: the reconcile requested at %s was not handled within %s; %s", name, requested, timeout, why)
	}
	return nil, err
}
