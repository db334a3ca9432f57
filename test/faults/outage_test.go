package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// outageTimeout bounds how long the operator takes to notice a server went away or came back:
// it logs in to each server every checkInterval (2s here).
const outageTimeout = time.Minute

// outageDuration is how long a server stays down once the outage is seen: a few server checks
// (every 2s) and tenant retries.
const outageDuration = 5 * time.Second

func TestDatabaseServerStoppedMidProvisioningAndStartedAgain(t *testing.T) {
	const scenario = "outage"
	ctx := context.Background()
	deleteLease(t)
	p := startOperator(t, scenario)
	waitLeader(t, p)

	for _, server := range []string{pgServer, mariaServer} {
		inst := servers[server]
		engine := tenancyv1alpha1.DatabaseEngine(inst.Server.Engine)
		name := func(i int) string { return fmt.Sprintf("%s-%s-%d", scenario, engine, i) }

		t.Run(fmt.Sprintf("%s stopped right after tenants asked for databases on it", server), func(t *testing.T) {
			g := NewWithT(t)
			for i := range 3 {
				g.Expect(env.AdminClient.Create(ctx, newTenant(scenario, name(i), engine))).To(Succeed())
			}
			g.Expect(inst.Stop()).To(Succeed())
			stopped := true
			t.Cleanup(func() {
				// The next scenario, and this one's invariants, need the server back.
				if stopped {
					if err := inst.Start(); err != nil {
						t.Errorf("starting %s again: %v", server, err)
					}
				}
			})
			// A tenant created while the server is down.
			g.Expect(env.AdminClient.Create(ctx, newTenant(scenario, name(3), engine))).To(Succeed())

			t.Run("the DatabaseServer reports the outage", func(t *testing.T) {
				NewWithT(t).Eventually(func(g Gomega) {
					ds := &tenancyv1alpha1.DatabaseServer{}
					g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: server}, ds)).To(Succeed())
					ready := meta.FindStatusCondition(ds.Status.Conditions, tenancyv1alpha1.ReadyCondition)
					g.Expect(ready).NotTo(BeNil())
					g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
					g.Expect(ready.Reason).To(Equal(tenancyv1alpha1.ReasonUnreachable))
				}).WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
			})
			waiting := func(g Gomega) {
				tenant := getTenant(g, name(3))
				dbs := meta.FindStatusCondition(tenant.Status.Conditions, tenancyv1alpha1.DatabasesReadyCondition)
				g.Expect(dbs).NotTo(BeNil())
				g.Expect(dbs.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(dbs.Reason).To(BeElementOf(tenancyv1alpha1.ReasonDatabaseUnavailable, tenancyv1alpha1.ReasonNoDatabaseServer))
				g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeFalse())
			}
			t.Run("a tenant created during the outage says its database is waiting for the server", func(t *testing.T) {
				NewWithT(t).Eventually(waiting).WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
				// The outage lasts a few of the operator's checks and retries, none of which may
				// report the tenant Ready.
				NewWithT(t).Consistently(waiting).WithTimeout(outageDuration).WithPolling(250 * time.Millisecond).Should(Succeed())
			})

			g.Expect(inst.Start()).To(Succeed())
			stopped = false
			t.Run("the DatabaseServer is Ready again once the server is back", func(t *testing.T) {
				NewWithT(t).Eventually(func(g Gomega) {
					ds := &tenancyv1alpha1.DatabaseServer{}
					g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: server}, ds)).To(Succeed())
					g.Expect(meta.IsStatusConditionTrue(ds.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
				}).WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
			})
		})
	}
	if !t.Failed() {
		checkInvariants(t, scenario)
	}
	logOperatorErrors(t, p)
	p.stop(t)
	deleteLease(t)
}
