package integration

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// The product's core performance promise: converging a tenant that has not changed reads only
// the informer cache and writes nothing, so thousands of tenants cost no API traffic at rest.
func TestUnchangedTenantReconcileMakesNoRequests(t *testing.T) {
	storeShared(t, "steady-key", "v1")
	t.Cleanup(func() { unstoreShared(t, "steady-key") })
	names := make([]string, 5)
	created := op.Requests.Snapshot()
	for i := range names {
		names[i] = fmt.Sprintf("steady-%d", i)
		createTenant(t, newTenant(names[i]))
	}
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		for _, n := range names {
			g.Expect(secretValue(g, n, "steady-key")).To(Equal("v1"))
		}
	}).WithTimeout(timeout).Should(Succeed())
	waitIdle(t)
	// The counter sees the operator's traffic: creating tenants is not free.
	g.Expect(op.Requests.Snapshot().Sub(created).Total()).To(BeNumerically(">=", len(names)))

	before := op.Requests.Snapshot()
	reconcilesBefore := op.Reconciles()
	// A sync of an unchanged store and a resync of every tenant, shared secret included.
	g.Expect(op.TemplateSync.Sync(context.Background())).To(Succeed())
	resync(t, names...)

	g.Expect(op.Reconciles() - reconcilesBefore).To(BeNumerically(">=", len(names)))
	made := tenantRequests(op.Requests.Snapshot().Sub(before))
	g.Expect(made.Total()).To(BeZero(), "requests made by a no-op resync: %s", made)
}

// expectNoRequestsOnResync resyncs settled tenants and expects the operator to send nothing.
func expectNoRequestsOnResync(t *testing.T, names ...string) {
	t.Helper()
	waitIdle(t)
	before := op.Requests.Snapshot()
	resync(t, names...)
	made := op.Requests.Snapshot().Sub(before)
	// The DatabaseServer controller writes a server's tenant count when tenants of tests running
	// alongside move on or off it; no tenant reconcile writes a server's status.
	delete(made, "PATCH databaseservers/status")
	NewWithT(t).Expect(made.Total()).To(BeZero(), "requests made by a no-op resync: %s", made)
}
