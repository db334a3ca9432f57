package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// A DatabaseServer the operator cannot log in to as it stands stalls, with a reason that says
// what a person has to fix: its admin credentials (CredentialsMissing), or its spec
// (ServerMisconfigured). An alert or a script matching the reason sends the page to whoever
// holds that, so a server whose credentials are all there is never reported as missing them.
func TestAnUnusableDatabaseServerSaysWhatToFix(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		server string
		// secret is the admin credentials Secret's data; nil creates none.
		secret  map[string]string
		spec    func(*tenancyv1alpha1.DatabaseServerSpec)
		reason  string
		message string
	}{
		"admin credentials Secret does not exist": {
			server: "unusable-absent",
			reason: tenancyv1alpha1.ReasonCredentialsMissing, message: "admin credentials Secret " + opConfig.Databases.CredentialsNamespace + "/unusable-absent-admin not found",
		},
		"admin credentials Secret has no password": {
			server: "unusable-no-password",
			secret: map[string]string{"username": "admin"},
			reason: tenancyv1alpha1.ReasonCredentialsMissing, message: "needs the keys username and password",
		},
		"CA bundle holds no certificate (its credentials are all there)": {
			server: "unusable-ca-bundle",
			secret: map[string]string{"username": "admin", "password": "secret"},
			spec: func(s *tenancyv1alpha1.DatabaseServerSpec) {
				s.TLS, s.CABundle = tenancyv1alpha1.DatabaseTLSMode("verify-full"), "not a certificate"
			},
			reason: tenancyv1alpha1.ReasonServerMisconfigured, message: "the CA bundle holds no PEM certificate",
		},
	}
	for what, tc := range cases {
		name := tc.server
		t.Run("a server whose "+what+" stalls with "+tc.reason, func(t *testing.T) {
			g := NewWithT(t)
			if tc.secret != nil {
				creds := &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: opConfig.Databases.CredentialsNamespace, Name: name + "-admin"},
					StringData: tc.secret,
				}
				g.Expect(k8s.Create(ctx, creds)).To(Succeed())
				t.Cleanup(func() { _ = k8s.Delete(ctx, creds) })
			}
			ds := &tenancyv1alpha1.DatabaseServer{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: tenancyv1alpha1.DatabaseServerSpec{
					Engine: tenancyv1alpha1.DatabaseEngine(pg.Server.Engine), Host: pg.Server.Host, Port: pg.Server.Port,
					TLS:              tenancyv1alpha1.DatabaseTLSMode(pg.Server.TLS),
					AdminCredentials: tenancyv1alpha1.SecretReference{Name: name + "-admin"},
				},
			}
			if tc.spec != nil {
				tc.spec(&ds.Spec)
			}
			g.Expect(k8s.Create(ctx, ds)).To(Succeed())
			t.Cleanup(func() { _ = k8s.Delete(ctx, ds) })
			g.Eventually(func(g Gomega) {
				got := &tenancyv1alpha1.DatabaseServer{}
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ds), got)).To(Succeed())
				stalled := meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.StalledCondition)
				g.Expect(stalled).NotTo(BeNil(), "conditions: %+v", got.Status.Conditions)
				g.Expect(stalled.Reason).To(Equal(tc.reason), "conditions: %+v", got.Status.Conditions)
				g.Expect(stalled.Message).To(ContainSubstring(tc.message))
				g.Expect(got.Status.Reachable).To(BeFalse())
			}).WithTimeout(timeout).Should(Succeed())
		})
	}
}

// A server named by a DNS name, with no spec.network, used to report Ready while its tenants'
// NetworkPolicy (landlord-allow-database-egress) opened no path to it: the operator reaches it,
// its tenants' pods do not, unless network.egressCIDRs happens to cover its addresses. Its
// status now says so, as long as that lasts.
func TestADatabaseServerNamedByDNSWithoutItsNetworkSaysItsTenantsHaveNoPath(t *testing.T) {
	ctx := context.Background()
	const name = "pg-by-name"
	g := NewWithT(t)
	g.Expect(env.RegisterDatabaseServer(ctx, opConfig.Databases.CredentialsNamespace, name, pg, func(spec *tenancyv1alpha1.DatabaseServerSpec) {
		spec.Host = "localhost"
	})).To(Succeed())
	ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ds) })
	undeclared := func(g Gomega) *metav1.Condition {
		got := &tenancyv1alpha1.DatabaseServer{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ds), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		return meta.FindStatusCondition(got.Status.Conditions, tenancyv1alpha1.NetworkUndeclaredCondition)
	}
	g.Eventually(func(g Gomega) {
		c := undeclared(g)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(tenancyv1alpha1.ReasonNoTenantPath))
		g.Expect(c.Message).To(ContainSubstring("spec.host localhost is a DNS name"))
	}).WithTimeout(timeout).Should(Succeed())

	g.Expect(k8s.Patch(ctx, ds, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"network":{"cidrs":["127.0.0.1/32"]}}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(undeclared(g)).To(BeNil())
	}).WithTimeout(timeout).Should(Succeed())
}
