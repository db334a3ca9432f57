package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/test/testenv"
)

// A restarted operator remembers nothing of what it compared. It finds its tenants' objects as
// it left them from what its cache keeps of them (their applied digests, and no other field
// manager), and writes nothing, reads nothing: at thousands of tenants, a restart that
// re-applied or re-read every object would take the API server minutes.
func TestARestartedOperatorSendsNothingForUnchangedTenants(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, store := sharedEnv(t)
	cfg := config.Default()

	first, err := env.StartOperator(cfg, store)
	g.Expect(err).NotTo(HaveOccurred())
	names := []string{"restart-0", "restart-1", "restart-2"}
	createTenants(t, env, names...)
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue(), "tenant %s: %+v", name, tenant.Status.Conditions)
		}
	}).WithTimeout(timeout).Should(Succeed())
	g.Eventually(first.Idle).WithTimeout(timeout).Should(BeTrue())
	g.Expect(first.Stop()).To(Succeed())

	reconciled := first.Reconciles()
	audits := func() float64 {
		v, err := testenv.OperatorMetric("landlord_policy_audits_total", nil)
		g.Expect(err).NotTo(HaveOccurred())
		return v
	}
	audited := audits()
	second, err := env.StartOperator(cfg, store)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = second.Stop() })
	// The new process reconciles every tenant once as it starts.
	g.Eventually(func() int { return second.Reconciles() - reconciled }).WithTimeout(timeout).Should(BeNumerically(">=", len(names)))
	g.Eventually(second.Idle).WithTimeout(timeout).Should(BeTrue())
	// Every start audits tenant namespaces for what got in while the policies may have been
	// absent (the policies were in place all along here, so once): a page of each kind, however
	// many tenants, which the checks below hold it to.
	g.Eventually(audits).WithTimeout(timeout).Should(Equal(audited + 1))

	sent := second.Requests.Snapshot()
	// Pods and the nodes they run on are read at every start too: the node pool policy may have
	// been absent while no operator ran.
	for _, key := range []string{"GET namespaces", "GET services", "GET ingresses", "GET networkpolicies", "GET pods", "GET nodes"} {
		g.Expect(sent).To(HaveKeyWithValue(key, 1), "the audit reads one page of each kind: %s", fmt.Sprint(sent))
		delete(sent, key)
	}
	// Routes too, once the API server says whether it serves the Gateway API in each version a
	// route kind has had (here it does not): discovery only, one request per kind and version at
	// most.
	g.Expect(sent).To(HaveKey("GET /apis/gateway.networking.k8s.io/v1"), "%s", fmt.Sprint(sent))
	for key, n := range sent {
		if strings.HasPrefix(key, "GET /apis/gateway.networking.k8s.io/") {
			g.Expect(n).To(BeNumerically("<=", 3), "%s", key)
			delete(sent, key)
		}
	}
	for key := range sent {
		// Asking the API server who the operator is, what it may watch, and whether its Tenant
		// CRD is current is how every start begins; none touches a tenant.
		if strings.HasSuffix(key, "selfsubjectreviews") || strings.HasSuffix(key, "selfsubjectaccessreviews") || key == "GET /api" || key == "GET /apis" ||
			strings.HasPrefix(key, "GET /openapi/v3") {
			delete(sent, key)
		}
	}
	g.Expect(sent.Total()).To(BeZero(), "requests of a restarted operator: %s", fmt.Sprint(sent))
}
