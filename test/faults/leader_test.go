package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// leaseTakeoverTimeout bounds a follower's takeover: the killed leader's lease expires after
// the lease duration, and the follower tries every retry period; the rest is slack for a loaded
// two-core machine.
func leaseTakeoverTimeout() time.Duration { return leaseDuration + retryPeriod + 45*time.Second }

func TestTwoReplicasTheFollowerTakesOverWhenTheLeaderIsKilled(t *testing.T) {
	const scenario = "leader"
	ctx := context.Background()
	deleteLease(t)
	engines := []tenancyv1alpha1.DatabaseEngine{tenancyv1alpha1.EnginePostgres, tenancyv1alpha1.EngineMySQL}
	createTenants := func(t *testing.T, prefix string) {
		t.Helper()
		for i, engine := range engines {
			NewWithT(t).Expect(env.AdminClient.Create(ctx, newTenant(scenario, fmt.Sprintf("%s-%s-%d", scenario, prefix, i), engine))).To(Succeed())
		}
	}

	replicas := []*operatorProcess{startOperator(t, scenario+"-a"), startOperator(t, scenario+"-b")}
	var leader, follower *operatorProcess
	t.Run("exactly one of two replicas is elected", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			var elected []string
			for _, p := range replicas {
				g.Expect(p.running()).To(BeTrue(), "operator %s exited: %v\n%s", p.name, p.waitErr, p.logTail(40))
				if p.isLeader() {
					elected = append(elected, p.name)
					leader = p
				} else {
					follower = p
				}
			}
			g.Expect(elected).To(HaveLen(1), "replicas that say they acquired the lease")
			g.Expect(holder(lease(g))).NotTo(BeEmpty())
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	})
	if t.Failed() {
		return
	}
	t.Logf("%s leads, %s follows", leader.name, follower.name)

	t.Run("tenants created under the leader converge", func(t *testing.T) {
		createTenants(t, "before")
		checkInvariants(t, scenario)
	})
	t.Run("the follower has started no controller while it was not elected", func(t *testing.T) {
		NewWithT(t).Expect(follower.isLeader()).To(BeFalse())
		NewWithT(t).Expect(follower.log()).NotTo(ContainSubstring(`"Starting workers"`))
	})

	killed := lease(NewWithT(t))
	killedHolder := holder(killed)
	// Tenants created just before the kill are mid-reconcile when it lands.
	createTenants(t, "during")
	leader.kill(t)

	t.Run("the follower takes over the lease once the killed leader's expires", func(t *testing.T) {
		g := NewWithT(t)
		var taken *coordinationv1.Lease
		g.Eventually(func(g Gomega) {
			g.Expect(follower.running()).To(BeTrue(), "operator %s exited: %v\n%s", follower.name, follower.waitErr, follower.logTail(40))
			g.Expect(follower.isLeader()).To(BeTrue(), "operator %s does not say it acquired the lease", follower.name)
			taken = lease(g)
			g.Expect(holder(taken)).NotTo(Or(BeEmpty(), Equal(killedHolder)))
		}).WithTimeout(leaseTakeoverTimeout()).WithPolling(250 * time.Millisecond).Should(Succeed())
		// The lease says how long it holds, as configured, and the follower took it no sooner
		// than that after the killed leader last renewed it (as read before the kill: a later
		// renewal only moves the expiry further out). Both times are the lease's own, written by
		// the replicas, not measured by the test.
		g.Expect(killed.Spec.LeaseDurationSeconds).To(HaveValue(Equal(int32(leaseDuration / time.Second))))
		g.Expect(killed.Spec.RenewTime).NotTo(BeNil())
		g.Expect(taken.Spec.AcquireTime).NotTo(BeNil())
		expired := killed.Spec.RenewTime.Add(leaseDuration)
		g.Expect(taken.Spec.AcquireTime.Time).NotTo(BeTemporally("<", expired), "the follower took the lease before the killed leader's had expired")
		// Its controllers start only once it is elected (and their caches have synced, which may
		// be a moment after the lease is taken).
		var log string
		g.Eventually(func() string {
			log = strings.ToLower(follower.log())
			return log
		}).WithTimeout(leaseTakeoverTimeout()).Should(ContainSubstring(`"starting workers"`))
		NewWithT(t).Expect(strings.Index(log, `"starting workers"`)).To(BeNumerically(">", strings.Index(log, acquiredLease)))
	})
	if t.Failed() {
		return
	}

	t.Run("tenants created before, during and after the takeover converge with their data", func(t *testing.T) {
		createTenants(t, "after")
		checkInvariants(t, scenario)
	})
	logOperatorErrors(t, replicas...)
	follower.stop(t)
	deleteLease(t)
}
