package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/tenant"
	"github.com/landlord-dev/landlord/internal/crdcheck"
	"github.com/landlord-dev/landlord/internal/policy"
	"github.com/landlord-dev/landlord/test/testenv"
)

// An operator upgraded without its CRDs (Helm never upgrades crds/) has status.lastHandledReconcileAt
// dropped by the API server. It says so at start, and a reconcile request, which would otherwise
// read as never handled, is verified once rather than on every later event of the tenant.
func TestAnOperatorOnThePreviousTenantCRDSaysSoAndVerifiesARequestOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, store := ownEnv(t)
	// As the operator runs: it needs no permission on CustomResourceDefinitions for the check.
	asOperator := env.As(testenv.OperatorUser)
	g.Expect(crdcheck.Tenant(ctx, asOperator)).To(Succeed(), "the current CRD")

	g.Expect(env.InstallPreviousTenantCRD(ctx)).To(Succeed())
	t.Run("the start-up check names the fields the installed CRD lacks", func(t *testing.T) {
		NewWithT(t).Eventually(func() error { return crdcheck.Tenant(ctx, asOperator) }).WithTimeout(timeout).Should(
			MatchError(And(ContainSubstring("older than this build"), ContainSubstring("spec.suspend"),
				ContainSubstring("status.lastHandledReconcileAt"), ContainSubstring("spec.components[].followRollouts"),
				ContainSubstring("status.components[].rollout"), ContainSubstring("crds/"))))
	})

	audits := func() float64 {
		v, err := testenv.OperatorMetric("landlord_policy_audits_total", nil)
		g.Expect(err).NotTo(HaveOccurred())
		return v
	}
	audited := audits()
	op, err := env.StartOperator(config.Default(), store)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })
	const name = "old-crd"
	createTenants(t, env, name)
	g.Eventually(func(g Gomega) {
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(op.Idle).WithTimeout(timeout).Should(BeTrue())
	// The operator created its policies in this new cluster, so it audits tenant namespaces twice
	// as it starts, the second time seconds later: done before requests are counted below.
	g.Eventually(audits).WithTimeout(timeout).Should(Equal(audited + 2))

	t.Run("a request is verified once, with one Warning event, and not again on later events", func(t *testing.T) {
		g := NewWithT(t)
		before := op.Requests.Snapshot()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"2026-11-26T09:00:00Z"}}}`, tenancyv1alpha1.ReconcileRequestAnnotation)
		g.Expect(env.AdminClient.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
			client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		g.Eventually(func() []string { return outdatedEvents(g, env, name) }).WithTimeout(timeout).Should(HaveLen(1))
		g.Eventually(op.Idle).WithTimeout(timeout).Should(BeTrue())
		verified := op.Requests.Snapshot().Sub(before)
		// A verify reads the bodyless objects from the API server: the quota is one of them.
		g.Expect(verified).To(HaveKeyWithValue("GET resourcequotas", 1), "requests of the request: %s", verified)
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		g.Expect(tenant.Status.LastHandledReconcileAt).To(BeEmpty(), "the previous CRD kept the field: the test proves nothing")

		before = op.Requests.Snapshot()
		for range 3 {
			reconciled := op.Reconciles()
			op.Resync <- event.GenericEvent{Object: &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}}
			g.Eventually(op.Reconciles).WithTimeout(timeout).Should(BeNumerically(">", reconciled))
			g.Eventually(op.Idle).WithTimeout(timeout).Should(BeTrue())
		}
		later := op.Requests.Snapshot().Sub(before)
		for key := range later {
			// The policy controller's writes as the operator starts touch no tenant.
			if strings.Contains(key, "admissionpolic") {
				delete(later, key)
			}
		}
		g.Expect(later.Total()).To(BeZero(), "requests of three later reconciles: %s", later)
		g.Expect(outdatedEvents(g, env, name)).To(HaveLen(1))
	})
}

// outdatedEvents are the notes of the tenant's events saying its CRD is outdated.
func outdatedEvents(g Gomega, env *testenv.Env, name string) []string {
	events, err := env.Clientset.EventsV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, ev := range events.Items {
		if ev.Reason == tenant.ReasonCRDOutdated && ev.Regarding.Kind == "Tenant" && ev.Regarding.Name == name {
			out = append(out, ev.Note)
		}
	}
	return out
}

// An operator upgraded before the CRDs of the kinds its release added runs without the
// controllers of those kinds, rather than not at all: tenants converge as before, and backups
// run without tenants' requests. The cases share one cluster, each removing more CRDs.
func TestAnOperatorWithoutTheCRDsOfNewerKindsRunsWithoutThem(t *testing.T) {
	env, store := ownEnv(t)
	for _, tc := range []struct {
		name, tenant string
		removed      []string
		backupsRun   bool
	}{
		{name: "without the request CRDs, tenants converge and backups run", tenant: "no-request-crds",
			removed: []string{"backuprequests", "restorerequests"}, backupsRun: true},
		{name: "without the backup CRDs too, tenants converge", tenant: "no-backup-crds",
			removed: []string{"tenantbackups", "tenantrestores", "tenantbackupschedules"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			// As an administrator removes CRDs: the operator stopped, the protection's binding
			// (which the previous case's operator made) deleted first.
			binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy.CRDProtection}}
			g.Expect(client.IgnoreNotFound(env.AdminClient.Delete(ctx, binding))).To(Succeed())
			// The API server sees the binding go a moment later.
			g.Eventually(func() error { return env.RemoveCRDs(ctx, tc.removed...) }).WithTimeout(timeout).Should(Succeed())
			op, err := env.StartOperator(config.Default(), store)
			g.Expect(err).NotTo(HaveOccurred())
			defer func() { _ = op.Stop() }()
			createTenants(t, env, tc.tenant)
			g.Eventually(func(g Gomega) {
				tenant := &tenancyv1alpha1.Tenant{}
				g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: tc.tenant}, tenant)).To(Succeed())
				g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
			}).WithTimeout(timeout).Should(Succeed())
			if !tc.backupsRun {
				return
			}
			// No store is configured: the backup controller says so, which it does only if it runs.
			b := &tenancyv1alpha1.TenantBackup{ObjectMeta: metav1.ObjectMeta{Name: tc.tenant + "-1"}, Spec: tenancyv1alpha1.TenantBackupSpec{Tenant: tc.tenant}}
			g.Expect(env.AdminClient.Create(ctx, b)).To(Succeed())
			g.Eventually(func(g Gomega) {
				g.Expect(env.AdminClient.Get(ctx, client.ObjectKeyFromObject(b), b)).To(Succeed())
				stalled := meta.FindStatusCondition(b.Status.Conditions, tenancyv1alpha1.StalledCondition)
				g.Expect(stalled).NotTo(BeNil())
				g.Expect(stalled.Reason).To(Equal(tenancyv1alpha1.ReasonBackupsNotConfigured))
			}).WithTimeout(timeout).Should(Succeed())
			// With no store there is nothing to clean: it goes at once, before the next case
			// removes its CRD.
			g.Expect(env.AdminClient.Delete(ctx, b)).To(Succeed())
			g.Eventually(func() bool {
				return apierrors.IsNotFound(env.AdminClient.Get(ctx, client.ObjectKeyFromObject(b), b))
			}).WithTimeout(timeout).Should(BeTrue())
		})
	}
}
