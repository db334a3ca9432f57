package controller_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

// The product's core performance promise: converging a tenant that has not changed reads only
// the informer cache and writes nothing, so thousands of tenants cost no API traffic at rest.
func TestUnchangedTenantReconcileMakesNoRequests(t *testing.T) {
	names := make([]string, 5)
	created := op.Requests.Snapshot()
	for i := range names {
		names[i] = fmt.Sprintf("steady-%d", i)
		createTenant(t, newTenant(names[i]))
	}
	waitIdle(t)
	// The counter sees the operator's traffic: creating tenants is not free.
	NewWithT(t).Expect(op.Requests.Snapshot().Sub(created).Total()).To(BeNumerically(">=", len(names)))

	before := op.Requests.Snapshot()
	reconcilesBefore := op.Reconciles()
	resync(t, names...)

	g := NewWithT(t)
	g.Expect(op.Reconciles() - reconcilesBefore).To(BeNumerically(">=", len(names)))
	made := op.Requests.Snapshot().Sub(before)
	g.Expect(made.Total()).To(BeZero(), "requests made by a no-op resync: %s", made)
}
