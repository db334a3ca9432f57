package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

const waitLimit = 30 * time.Second

// readyTenant creates a minimal tenant and waits until it is Ready for its generation.
func readyTenant(t *testing.T, c client.Client, name string) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Organization: name + " Inc.", Email: "ops@" + name + ".example.com"},
	}
	g := NewWithT(t)
	g.Expect(c.Create(context.Background(), tenant)).To(Succeed())
	return eventuallyTenant(t, c, name, func(g Gomega, tenant *tenancyv1alpha1.Tenant) {
		g.Expect(tenant.Status.ObservedGeneration).To(Equal(tenant.Generation))
		g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	})
}

// eventuallyTenant waits until the tenant passes check, and returns it as it then was.
func eventuallyTenant(t *testing.T, c client.Client, name string, check func(Gomega, *tenancyv1alpha1.Tenant)) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
		check(g, tenant)
	}).WithTimeout(waitLimit).Should(Succeed())
	return tenant
}

// managersOf are the field managers that own a field path ("f:spec" "f:suspend") of the tenant.
func managersOf(tenant *tenancyv1alpha1.Tenant, path ...string) []string {
	var out []string
	for _, e := range tenant.ManagedFields {
		if e.FieldsV1 == nil {
			continue
		}
		raw := e.FieldsV1.GetRawString()
		found := true
		for _, p := range path {
			if !strings.Contains(raw, `"`+p+`"`) {
				found = false
			}
		}
		if found {
			out = append(out, e.Manager)
		}
	}
	return out
}

func TestSuspendAndResumeChangeOnlySpecSuspendAndTheOperatorFollows(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	const name = "ctl-paused"
	readyTenant(t, c, name)

	t.Run("suspend sets spec.suspend as landlordctl's own field, and the status says Suspended", func(t *testing.T) {
		g := NewWithT(t)
		stdout, _, err := landlordctlClaim(t, "suspend", name, "--kubeconfig", kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stdout).To(Equal("tenant/" + name + " suspended\n"))
		tenant := eventuallyTenant(t, c, name, func(g Gomega, tenant *tenancyv1alpha1.Tenant) {
			g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.SuspendedCondition)).To(BeTrue())
			g.Expect(tenant.Status.ObservedGeneration).To(Equal(tenant.Generation))
		})
		g.Expect(tenant.Spec.Suspend).To(BeTrue())
		// A GitOps tool that does not set the field leaves it to its manager.
		g.Expect(managersOf(tenant, "f:spec", "f:suspend")).To(Equal([]string{fieldManager}))
		g.Expect(tenant.Spec.Organization).To(Equal(name + " Inc."))
	})

	t.Run("a reconcile of a suspended tenant is refused and requests nothing", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := landlordctlClaim(t, "reconcile", name, "--wait", "--kubeconfig", kubeconfig)
		g.Expect(err).To(MatchError(ContainSubstring("is suspended")))
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
		g.Expect(tenant.Annotations).NotTo(HaveKey(tenancyv1alpha1.ReconcileRequestAnnotation))
	})

	t.Run("suspending again is no error", func(t *testing.T) {
		_, _, err := landlordctlClaim(t, "suspend", name, "--kubeconfig", kubeconfig)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	})

	t.Run("resume removes spec.suspend, and the tenant is Ready without the Suspended condition", func(t *testing.T) {
		g := NewWithT(t)
		stdout, _, err := landlordctlClaim(t, "resume", name, "--kubeconfig", kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stdout).To(Equal("tenant/" + name + " resumed\n"))
		tenant := eventuallyTenant(t, c, name, func(g Gomega, tenant *tenancyv1alpha1.Tenant) {
			g.Expect(tenant.Status.ObservedGeneration).To(Equal(tenant.Generation))
			g.Expect(meta.FindStatusCondition(tenant.Status.Conditions, tenancyv1alpha1.SuspendedCondition)).To(BeNil())
			g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		})
		g.Expect(tenant.Spec.Suspend).To(BeFalse())
		g.Expect(managersOf(tenant, "f:spec", "f:suspend")).To(BeEmpty())
	})
}

func TestReconcileWithWaitReturnsOnceTheOperatorHandledTheRequest(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	const name = "ctl-reconcile"
	readyTenant(t, c, name)
	g := NewWithT(t)

	stdout, stderr, err := landlordctlClaim(t, "reconcile", name, "--wait", "--kubeconfig", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred(), "stderr: %s", stderr)
	g.Expect(stdout).To(HavePrefix("tenant/" + name + " reconciled: Ready=True Succeeded: "))
	g.Expect(stderr).To(ContainSubstring("waiting for it to be handled"))

	// The wait ended on the very request it made: the status records the annotation's value.
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	requested := tenant.Annotations[tenancyv1alpha1.ReconcileRequestAnnotation]
	_, err = time.Parse(time.RFC3339Nano, requested)
	g.Expect(err).NotTo(HaveOccurred(), "the request %q is a time", requested)
	g.Expect(tenant.Status.LastHandledReconcileAt).To(Equal(requested))
	g.Expect(managersOf(tenant, "f:metadata", "f:annotations", "f:"+tenancyv1alpha1.ReconcileRequestAnnotation)).To(Equal([]string{fieldManager}))

	t.Run("without --wait it returns at once, naming the request", func(t *testing.T) {
		g := NewWithT(t)
		stdout, _, err := landlordctlClaim(t, "reconcile", name, "--kubeconfig", kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stdout).To(MatchRegexp(`^tenant/` + name + ` reconcile requested at \S+\n$`))
		// And the operator handles it all the same.
		eventuallyTenant(t, c, name, func(g Gomega, tenant *tenancyv1alpha1.Tenant) {
			g.Expect(tenant.Status.LastHandledReconcileAt).To(Equal(tenant.Annotations[tenancyv1alpha1.ReconcileRequestAnnotation]))
			g.Expect(tenant.Status.LastHandledReconcileAt).NotTo(Equal(requested))
		})
	})
}

func TestTenantCommandsNameWhatIsWrong(t *testing.T) {
	_, kubeconfig := sharedCluster(t)
	cases := map[string]struct {
		args []string
		want string
	}{
		"suspend without a tenant":      {[]string{"suspend"}, "suspend wants TENANT; got no arguments"},
		"suspend of a missing tenant":   {[]string{"suspend", "no-such-tenant"}, `tenant "no-such-tenant" not found`},
		"resume of a missing tenant":    {[]string{"resume", "no-such-tenant"}, `tenant "no-such-tenant" not found`},
		"reconcile of a missing tenant": {[]string{"reconcile", "no-such-tenant"}, `tenant "no-such-tenant" not found`},
		"a wait of no time":             {[]string{"reconcile", "any", "--wait", "--timeout", "0s"}, "--timeout must be positive"},
		"an unknown context":            {[]string{"suspend", "any", "--context", "elsewhere"}, `no context "elsewhere"`},
	}
	for name, tc := range cases {
		t.Run(name+" is refused", func(t *testing.T) {
			_, _, err := landlordctlClaim(t, append(tc.args, "--kubeconfig", kubeconfig)...)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// kubectl runs the real kubectl of the local cluster's binaries against the shared cluster.
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kubectl of the local cluster: %v (set KUBEBUILDER_ASSETS)", err)
	}
	out, err := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// What kubectl users expect of Landlord's API works with kubectl itself: waiting for a claim to
// be Ready, listing everything of Landlord's by category, and a tenant's Ready reason and
// message in its columns.
func TestKubectlWaitsForAClaimAndListsLandlordsObjects(t *testing.T) {
	c, kubeconfig := sharedCluster(t)
	createPool(t, c, "kubectl-pool", 1)
	spares := waitPool(t, c, "kubectl-pool", 1, 0)
	g := NewWithT(t)
	claim := &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubectl-claim"},
		Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "kubectl-pool", Organization: "Kubectl Inc.", Email: "ops@kubectl.example.com"},
	}
	g.Expect(c.Create(context.Background(), claim)).To(Succeed())

	t.Run("kubectl wait --for=condition=Ready returns once the claim is bound", func(t *testing.T) {
		g := NewWithT(t)
		out, err := kubectl(t, kubeconfig, "wait", "--for=condition=Ready", "tc/kubectl-claim", "-n", "default", "--timeout=30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("tenantclaim.tenancy.landlord.dev/kubectl-claim condition met"))
		bound := &tenancyv1alpha1.TenantClaim{}
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(claim), bound)).To(Succeed())
		g.Expect(bound.Status.Phase).To(Equal(tenancyv1alpha1.ClaimBound))
		g.Expect(spares).To(ContainElement(bound.Status.Tenant))
	})

	t.Run("kubectl get landlord lists tenants, pools and claims", func(t *testing.T) {
		g := NewWithT(t)
		out, err := kubectl(t, kubeconfig, "get", "landlord", "-A")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("tenant.tenancy.landlord.dev/" + spares[0]))
		g.Expect(out).To(ContainSubstring("tenantpool.tenancy.landlord.dev/kubectl-pool"))
		g.Expect(out).To(ContainSubstring("tenantclaim.tenancy.landlord.dev/kubectl-claim"))
	})

	t.Run("a tenant shows its Ready reason, whether it is suspended, and in -o wide its message", func(t *testing.T) {
		g := NewWithT(t)
		out, err := kubectl(t, kubeconfig, "get", "tenant", spares[0])
		g.Expect(err).NotTo(HaveOccurred(), out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		g.Expect(lines).To(HaveLen(2), out)
		g.Expect(strings.Fields(lines[0])).To(Equal([]string{"NAME", "STATE", "READY", "REASON", "SUSPENDED", "NAMESPACE", "AGE"}))
		g.Expect(strings.Fields(lines[1])[:4]).To(Equal([]string{spares[0], "Active", "True", "Succeeded"}))

		wide, err := kubectl(t, kubeconfig, "get", "tenant", spares[0], "-o", "wide")
		g.Expect(err).NotTo(HaveOccurred(), wide)
		g.Expect(wide).To(ContainSubstring("MESSAGE"))
		g.Expect(wide).To(ContainSubstring("tenant is Active in namespace"))

		_, _, err = landlordctlClaim(t, "suspend", spares[0], "--kubeconfig", kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		out, err = kubectl(t, kubeconfig, "wait", "--for=condition=Suspended", "tenant/"+spares[0], "--timeout=30s")
		g.Expect(err).NotTo(HaveOccurred(), out)
		paused, err := kubectl(t, kubeconfig, "get", "tenant", spares[0], "--no-headers")
		g.Expect(err).NotTo(HaveOccurred(), paused)
		g.Expect(strings.Fields(paused)[4]).To(Equal("true"), paused)
		// Ready is as last observed, for the generation before spec.suspend: kubectl wait does
		// not take it for the current one.
		out, err = kubectl(t, kubeconfig, "wait", "--for=condition=Ready", "tenant/"+spares[0], "--timeout=1s")
		g.Expect(err).To(HaveOccurred(), out)
		g.Expect(out).To(ContainSubstring("timed out"))
	})
}
