package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/policy"
)

// A backup tool restores a tenant namespace as it was, Landlord's labels included, and a policy
// engine copies labels onto what it generates. The principals the configuration trusts
// (isolation.trustedPrincipals: the suite trusts the ServiceAccount velero/velero) are let past
// Landlord's guards over its labels, annotations and tenants' guarded labels; a ServiceAccount
// with the very same rights that is not listed is refused by each, as a tenant would be.
func TestTrustedPrincipalsArePastLandlordsGuardsAndNoOneElse(t *testing.T) {
	createTenant(t, newTenant("iso-restore"))
	const ns = "tenant-iso-restore"
	ctx := context.Background()
	// Both run with cluster-admin's rights, as a backup tool does: only the trust differs.
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "iso-restore-tools"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: "velero", Name: "velero"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "other-tools", Name: "restorer"},
		},
	}
	NewWithT(t).Expect(k8s.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding) })
	serviceAccount := func(namespace, name string) client.Client {
		return impersonate(t, fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
			"system:serviceaccounts", "system:serviceaccounts:"+namespace, "system:authenticated")
	}
	trusted, untrusted := serviceAccount("velero", "velero"), serviceAccount("other-tools", "restorer")
	managed := map[string]string{tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.TenantLabel: "iso-restore"}
	waitForRefusal(t, untrusted, policy.ManagedLabels, labeled(&corev1.ConfigMap{}, ns, "probe", managed))

	// Each write is a dry run: admission decides it as it would the real one, and nothing a
	// case writes is left for the operator to find.
	cases := []struct {
		name   string
		policy string
		write  func(c client.Client) error
	}{
		{"restoring an object labelled as Landlord's into the tenant namespace", policy.ManagedLabels, func(c client.Client) error {
			return c.Create(ctx, labeled(&corev1.ConfigMap{}, ns, "restored", managed), client.DryRunAll)
		}},
		{"restoring a Deployment whose pods carry Landlord's tenant label", policy.ManagedLabels, func(c client.Client) error {
			d := deployment(ns)
			d.Name = "restored-web"
			d.Spec.Template.Labels = map[string]string{"app": "web", tenancyv1alpha1.TenantLabel: "iso-restore"}
			return c.Create(ctx, d, client.DryRunAll)
		}},
		{"copying a Landlord label onto the tenant namespace", policy.NamespaceLabels, func(c client.Client) error {
			return c.Patch(ctx, named(&corev1.Namespace{}, "", ns), client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"tenancy.landlord.dev/restored":"true"}}}`)), client.DryRunAll)
		}},
		{"restoring a Tenant with the labels a pool gave it", policy.TenantLabels, func(c client.Client) error {
			return c.Patch(ctx, named(&tenancyv1alpha1.Tenant{}, "", "iso-restore"), client.RawPatch(types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"`+tenancyv1alpha1.PoolLabel+`":"signup"}}}`)), client.DryRunAll)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is admitted for the trusted principal", func(t *testing.T) {
			NewWithT(t).Expect(tc.write(trusted)).To(Succeed())
		})
		t.Run(tc.name+" is refused by "+tc.policy+" for a principal with the same rights that is not trusted", func(t *testing.T) {
			err := tc.write(untrusted)
			NewWithT(t).Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "expected a refusal, got %v", err)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy '" + tc.policy + "'")))
		})
	}

	t.Run("the trusted principal is held to the rules over what a tenant's own objects may do", func(t *testing.T) {
		err := trusted.Create(ctx, externalName(ns, "restored-external", "web.tenant-other.svc.cluster.local"), client.DryRunAll)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring("ValidatingAdmissionPolicy '" + policy.ServiceExposure + "'")))
	})
}

// A principal is trusted only while the configuration lists it. Taking one off (its token
// leaked) takes its condition off the policies when the operator restarts with the new list,
// even after someone rewrote a policy and the operator put it back: Landlord's own repair does
// not keep the condition it no longer sets.
func TestAPrincipalTakenOffTheTrustedListIsHeldAgain(t *testing.T) {
	ctx := context.Background()
	managed := named(&admissionregistrationv1.ValidatingAdmissionPolicy{}, "", policy.ManagedLabels)
	trustsVelero := func(g Gomega) bool {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(managed), managed)).To(Succeed())
		for _, c := range managed.Spec.MatchConditions {
			if c.Name == "not-a-trusted-principal" {
				return strings.Contains(c.Expression, "system:serviceaccount:velero:velero")
			}
		}
		return false
	}
	g := NewWithT(t)
	g.Eventually(trustsVelero).WithTimeout(timeout).Should(BeTrue())
	// Rewritten whole, as kubectl replace of an older copy does: the trust gone, and the policy
	// told to let requests through when it fails.
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(managed), managed)).To(Succeed())
	rewritten := managed.DeepCopy()
	rewritten.Spec.MatchConditions = rewritten.Spec.MatchConditions[:1]
	rewritten.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	g.Expect(k8s.Update(ctx, rewritten, client.FieldOwner("kubectl-replace"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(trustsVelero(g)).To(BeTrue())
		g.Expect(*managed.Spec.FailurePolicy).To(Equal(admissionregistrationv1.Fail))
	}).WithTimeout(timeout).Should(Succeed(), "the rewrite was not repaired")

	cfg := opConfig
	cfg.Isolation.TrustedPrincipals = nil
	restartOperator(t, cfg)
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(managed), managed)).To(Succeed())
		for _, c := range managed.Spec.MatchConditions {
			g.Expect(c.Name).NotTo(Equal("not-a-trusted-principal"))
		}
	}).WithTimeout(timeout).Should(Succeed(), "the trust outlived the configuration")
}
