package faults_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
	"github.com/landlord-dev/landlord/test/testenv"
)

// apiFaultShare is the share of the operator's writes the API server fails in the API scenario:
// enough that nearly every reconcile meets one, few enough that retries get through.
const apiFaultShare = 0.3

// minInjections of each kind of write fault before the API scenario stops injecting: the
// scenario proves nothing unless every kind of failure really happened to the operator.
const minInjections = 10

// The store and the API server fail and recover while the operator runs. This scenario runs the
// operator in the test process (through operator.New, as the binary does) because its faults
// sit inside it: a store that errs or hangs, and a transport that fails a share of its writes.
func TestTransientStoreAndAPIServerFaultsLoseNothing(t *testing.T) {
	const scenario = "transient"
	ctx := context.Background()
	seed := envInt(t, "LANDLORD_FAULT_SEED", defaultSeed)
	t.Logf("seed %d (LANDLORD_FAULT_SEED reproduces or changes it)", seed)
	deleteLease(t)

	flaky := secrettest.NewFlakyStore(store)
	writes := newFaultyWrites(seed)
	op, err := env.StartOperator(opConfig, flaky, writes.Wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		flaky.SetHanging(false)
		if err := op.Stop(); err != nil {
			t.Errorf("stopping the operator: %v", err)
		}
	})
	create := func(t *testing.T, name string, databases tenancyv1alpha1.Databases) {
		t.Helper()
		tenant := newTenant(scenario, name, "")
		tenant.Spec.Databases = databases
		NewWithT(t).Expect(env.AdminClient.Create(ctx, tenant)).To(Succeed())
	}
	none := tenancyv1alpha1.Databases{}
	postgres, mysql := databasesOf(tenancyv1alpha1.EnginePostgres), databasesOf(tenancyv1alpha1.EngineMySQL)

	t.Run("tenants created while everything works converge", func(t *testing.T) {
		create(t, scenario+"-steady-pg", postgres)
		create(t, scenario+"-steady-mysql", mysql)
		waitReady(t, scenario+"-steady-pg", scenario+"-steady-mysql")
	})
	if t.Failed() {
		return
	}

	// What a store outage may do to a tenant that needs the store: wait, say so, and not be
	// Ready. What it may not do: touch a tenant that does not need it.
	waitsForStore := func(name, says string) func(g Gomega) {
		return func(g Gomega) {
			tenant := getTenant(g, name)
			dbs := meta.FindStatusCondition(tenant.Status.Conditions, tenancyv1alpha1.DatabasesReadyCondition)
			g.Expect(dbs).NotTo(BeNil())
			g.Expect(dbs.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(dbs.Reason).To(Equal(tenancyv1alpha1.ReasonStoreUnavailable))
			g.Expect(dbs.Message).To(ContainSubstring(says))
			g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeFalse())
		}
	}
	steadyStaysReady := func(g Gomega) {
		for _, name := range []string{scenario + "-steady-pg", scenario + "-steady-mysql"} {
			g.Expect(isReady(g, name)).To(BeTrue(), "tenant %s", name)
		}
	}

	t.Run("the store returns errors for a while", func(t *testing.T) {
		flaky.SetDown(true)
		create(t, scenario+"-store-down", postgres)
		create(t, scenario+"-store-down-nodb", none)
		t.Run("a tenant that needs the store says it waits for it", func(t *testing.T) {
			NewWithT(t).Eventually(waitsForStore(scenario+"-store-down", secrettest.ErrStoreDown.Error())).
				WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
			NewWithT(t).Consistently(waitsForStore(scenario+"-store-down", secrettest.ErrStoreDown.Error())).
				WithTimeout(outageDuration).WithPolling(250 * time.Millisecond).Should(Succeed())
		})
		t.Run("tenants that do not need it converge and stay Ready", func(t *testing.T) {
			waitReady(t, scenario+"-store-down-nodb")
			NewWithT(t).Consistently(steadyStaysReady).WithTimeout(2 * time.Second).Should(Succeed())
		})
		t.Run("the template namespace sync reports the store down", func(t *testing.T) {
			op.TemplateSync.Trigger()
			NewWithT(t).Eventually(func() float64 { return syncUp(t) }).WithTimeout(outageTimeout).Should(Equal(0.0))
		})
		flaky.SetDown(false)
		t.Run("once it is back, the waiting tenant converges and the sync is up", func(t *testing.T) {
			waitReady(t, scenario+"-store-down")
			op.TemplateSync.Trigger()
			NewWithT(t).Eventually(func() float64 { return syncUp(t) }).WithTimeout(outageTimeout).Should(Equal(1.0))
		})
	})

	t.Run("the store hangs for a while", func(t *testing.T) {
		flaky.SetHanging(true)
		create(t, scenario+"-store-hangs", mysql)
		create(t, scenario+"-store-hangs-nodb", none)
		t.Run("a tenant that needs the store gives up each call at the store's deadline and says so", func(t *testing.T) {
			deadline := fmt.Sprintf("no answer within %s", opConfig.Secrets.Store.Timeout.Duration)
			NewWithT(t).Eventually(waitsForStore(scenario+"-store-hangs", deadline)).
				WithTimeout(outageTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
		})
		t.Run("tenants that do not need it converge and stay Ready", func(t *testing.T) {
			waitReady(t, scenario+"-store-hangs-nodb")
			NewWithT(t).Consistently(steadyStaysReady).WithTimeout(2 * time.Second).Should(Succeed())
		})
		flaky.SetHanging(false)
		t.Run("once it answers again, the waiting tenant converges", func(t *testing.T) {
			waitReady(t, scenario+"-store-hangs")
		})
	})

	t.Run(fmt.Sprintf("the API server fails %.0f%% of the operator's writes with conflicts and 5xx", apiFaultShare*100), func(t *testing.T) {
		writes.setShare(apiFaultShare)
		stopped := false
		stop := func() {
			if !stopped {
				writes.setShare(0)
				stopped = true
			}
		}
		t.Cleanup(stop)
		g := NewWithT(t)
		// New tenants, a lifecycle change of each kind and signups, all while writes fail.
		create(t, scenario+"-api-pg", postgres)
		create(t, scenario+"-api-mysql", mysql)
		create(t, scenario+"-api-nodb", none)
		g.Expect(setState(ctx, scenario+"-steady-pg", tenancyv1alpha1.StateArchived)).To(Succeed())
		g.Expect(setState(ctx, scenario+"-store-down", tenancyv1alpha1.StateFrozen)).To(Succeed())
		g.Expect(setState(ctx, scenario+"-store-hangs", tenancyv1alpha1.StatePurged)).To(Succeed())
		pool := scenario + "-pool"
		g.Expect(env.AdminClient.Create(ctx, newPool(scenario, pool, 2))).To(Succeed())
		for i := range 2 {
			g.Expect(env.AdminClient.Create(ctx, newClaim(scenario, fmt.Sprintf("%s-claim-%d", scenario, i), pool))).To(Succeed())
		}

		t.Run("every kind of fault reaches the operator", func(t *testing.T) {
			NewWithT(t).Eventually(func(g Gomega) {
				counts := writes.counts()
				for _, f := range writeFaults {
					g.Expect(counts[f.name]).To(BeNumerically(">=", minInjections), "writes failed with %s (all: %v)", f.name, counts)
				}
			}).WithTimeout(convergeTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
		})
		if t.Failed() {
			return
		}
		// Every reconcile meets failed writes, and retries get through all the same: the fleet
		// converges while the faults go on.
		checkInvariants(t, scenario)
		stop()
		t.Run(fmt.Sprintf("%.0f%% of the writes the operator sent meanwhile failed", apiFaultShare*100), func(t *testing.T) {
			expectFaultShare(t, writes.counts(), writes.writes())
		})
		t.Run("the restored tenant comes back with the same data", func(t *testing.T) {
			NewWithT(t).Expect(setState(ctx, scenario+"-steady-pg", tenancyv1alpha1.StateActive)).To(Succeed())
			checkInvariants(t, scenario)
		})
	})
	if t.Failed() {
		t.Logf("tenants:\n%s", describeTenants(scenario))
	}
}

// expectFaultShare checks that the share of the operator's writes the API scenario failed is
// apiFaultShare. Each write is failed by a draw of a seeded generator, so the number failed
// out of writes is binomial: it lies within four standard deviations of the share named in all
// but fewer than one run in ten thousand, whatever the seed. A share off by a factor (a
// percentage read as a permille) would be far outside.
func expectFaultShare(t *testing.T, failed map[string]int, writes int) {
	t.Helper()
	g := NewWithT(t)
	total := 0
	for _, n := range failed {
		total += n
	}
	g.Expect(writes).To(BeNumerically(">", 0), "the operator sent no write while faults were injected")
	share := float64(total) / float64(writes)
	tolerance := 4 * math.Sqrt(apiFaultShare*(1-apiFaultShare)/float64(writes))
	g.Expect(share).To(BeNumerically("~", apiFaultShare, tolerance), "%d of %d writes failed (%v)", total, writes, failed)
}

// waitReady waits until each named tenant is Ready for its current generation.
func waitReady(t *testing.T, names ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		for _, name := range names {
			g.Expect(isReady(g, name)).To(BeTrue(), "tenant %s is not Ready:\n%s", name, describeTenants(getTenant(g, name).Labels[scenarioLabel]))
		}
	}).WithTimeout(convergeTimeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// isReady is whether a tenant is Ready for its current generation.
func isReady(g Gomega, name string) bool {
	tenant := getTenant(g, name)
	ready := meta.FindStatusCondition(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)
	return ready != nil && ready.Status == metav1.ConditionTrue && tenant.Status.ObservedGeneration == tenant.Generation
}

// syncUp is the in-process operator's landlord_secret_store_sync_up.
func syncUp(t *testing.T) float64 {
	t.Helper()
	v, err := testenv.OperatorMetric("landlord_secret_store_sync_up", nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
