package main

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// Against the previous release's Tenant CRD (what a Helm upgrade that skips crds/ leaves), the
// API server would drop spec.suspend and status.lastHandledReconcileAt and answer success:
// suspend, resume and reconcile fail instead, saying to apply the new CRDs, and change nothing.
func TestTenantCommandsRefuseATenantCRDOlderThanLandlordctl(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	testenv.NeedCluster(t)
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	g.Expect(env.InstallPreviousTenantCRD(ctx)).To(Succeed())
	kubeconfig := writeKubeconfig(t, env)
	const name = "old-crd"
	g.Expect(env.AdminClient.Create(ctx, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.TenantSpec{Organization: "Acme Inc.", Email: "ops@acme.example.com"},
	})).To(Succeed())

	for _, command := range []string{"suspend", "resume", "reconcile"} {
		t.Run(command+" fails naming the CRDs to apply and changes nothing", func(t *testing.T) {
			g := NewWithT(t)
			// The API server publishes a CRD's OpenAPI a moment after it serves the CRD.
			g.Eventually(func() error {
				_, _, err := landlordctlClaim(t, command, name, "--kubeconfig", kubeconfig)
				return err
			}).WithTimeout(waitLimit).Should(MatchError(And(ContainSubstring("older than"), ContainSubstring("apply the CRDs"))))
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
			g.Expect(tenant.Annotations).NotTo(HaveKey(tenancyv1alpha1.ReconcileRequestAnnotation))
			g.Expect(managersOf(tenant, "f:spec", "f:suspend")).To(BeEmpty())
		})
	}

	t.Run("the suspend patch itself is refused by strict field validation", func(t *testing.T) {
		g := NewWithT(t)
		c, err := client.New(env.Admin, client.Options{Scheme: tenancyv1alpha1.Scheme()})
		g.Expect(err).NotTo(HaveOccurred())
		_, err = patchTenant(ctx, c, name, `{"spec":{"suspend":true}}`)
		g.Expect(err).To(MatchError(And(ContainSubstring("unknown field"), ContainSubstring("apply the CRDs"))))
	})
}
