package integration

import (
	"context"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/shipped"
	"github.com/landlord-dev/landlord/test/testenv"
)

// metric adds up a metric's samples whose labels include the given ones: counter and gauge
// values, and a histogram's number of observations.
func metric(g Gomega, name string, labels map[string]string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	return testenv.CountMetric(families, name, labels)
}

// dbOps are the labels of one database operation's counter on the PostgreSQL test server.
func dbOps(operation, result string) map[string]string {
	return map[string]string{"server": pgServer, "engine": "postgres", "operation": operation, "result": result}
}

// TestOperatorMetrics drives the operator through what each of its metrics reports, and ends
// with the check that every metric the dashboard and the alerts query is one it exports: by
// then every lazily created series exists.
func TestOperatorMetrics(t *testing.T) {
	ctx := context.Background()
	// What the last subtest checks must still exist then: a pool's series go with the pool.
	outer := t

	t.Run("landlord_tenants counts tenants by state and Ready status, one more for each new tenant", func(t *testing.T) {
		g := NewWithT(t)
		active := map[string]string{"state": "Active", "ready": "True", "reason": tenancyv1alpha1.ReasonSucceeded}
		frozen := map[string]string{"state": "Frozen", "ready": "True", "reason": tenancyv1alpha1.ReasonSucceeded}
		beforeActive, beforeFrozen := metric(g, "landlord_tenants", active), metric(g, "landlord_tenants", frozen)
		createTenant(t, newTenant("metrics-active"))
		createTenant(t, newTenant("metrics-frozen", func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StateFrozen }))
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_tenants", active)).To(Equal(beforeActive + 1))
			g.Expect(metric(g, "landlord_tenants", frozen)).To(Equal(beforeFrozen + 1))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a suspended tenant is counted under suspended=true, out of what the alerts on tenants select", func(t *testing.T) {
		g := NewWithT(t)
		const name = "metrics-suspended"
		ready := func(suspended string) map[string]string {
			return map[string]string{"state": "Active", "ready": "True", "reason": tenancyv1alpha1.ReasonSucceeded, "suspended": suspended}
		}
		createTenant(t, newTenant(name))
		waitReady(t, name)
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_tenants", ready("false"))).To(BeNumerically(">=", 1))
		}).WithTimeout(timeout).Should(Succeed())
		running, suspended := metric(g, "landlord_tenants", ready("false")), metric(g, "landlord_tenants", ready("true"))
		setSuspend(g, name, true)
		waitSuspended(t, name)
		// Its Ready condition is frozen as it was: the tenant moves from one series to the other.
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_tenants", ready("true"))).To(Equal(suspended + 1))
			g.Expect(metric(g, "landlord_tenants", ready("false"))).To(Equal(running - 1))
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a tenant's PostgreSQL database is ensured, counted and timed; a resync of the Ready tenant calls no server; the purge drops it once", func(t *testing.T) {
		g := NewWithT(t)
		name := "metrics-db"
		ensured, ensureFailed := metric(g, "landlord_database_operations_total", dbOps("ensure", "success")), metric(g, "landlord_database_operations_total", dbOps("ensure", "error"))
		timed := metric(g, "landlord_database_operation_duration_seconds", map[string]string{"server": pgServer, "operation": "ensure"})
		dropped := metric(g, "landlord_database_operations_total", dbOps("drop", "success"))
		puts := metric(g, "landlord_secret_store_operations_total", map[string]string{"backend": "file", "operation": "put", "result": "success"})

		createTenant(t, newTenant(name, func(t *tenancyv1alpha1.Tenant) {
			t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
		}))
		waitIdle(t)
		ensures := metric(g, "landlord_database_operations_total", dbOps("ensure", "success")) - ensured
		g.Expect(ensures).To(BeNumerically(">=", 1))
		g.Expect(metric(g, "landlord_database_operations_total", dbOps("ensure", "error"))).To(Equal(ensureFailed))
		g.Expect(metric(g, "landlord_database_operation_duration_seconds", map[string]string{"server": pgServer, "operation": "ensure"})-timed).To(Equal(ensures),
			"every ensure is timed once")
		g.Expect(metric(g, "landlord_secret_store_operations_total", map[string]string{"backend": "file", "operation": "put", "result": "success"})).To(BeNumerically(">", puts),
			"the credentials were stored")
		provisioned := landlordLogs.find("database provisioned", map[string]any{"tenant": name, "database": "app"})
		g.Expect(provisioned).NotTo(BeEmpty())
		g.Expect(provisioned[0].values).To(HaveKeyWithValue("server", pgServer))
		g.Expect(provisioned[0].values).To(HaveKeyWithValue("engine", "postgres"))

		settled := metric(g, "landlord_database_operations_total", dbOps("ensure", "success"))
		storedPuts := metric(g, "landlord_secret_store_operations_total", map[string]string{"operation": "put"})
		resync(t, name)
		g.Expect(metric(g, "landlord_database_operations_total", dbOps("ensure", "success"))).To(Equal(settled))
		g.Expect(metric(g, "landlord_secret_store_operations_total", map[string]string{"operation": "put"})).To(Equal(storedPuts))

		setState(t, name, tenancyv1alpha1.StatePurged)
		waitReady(t, name)
		waitIdle(t)
		g.Expect(metric(g, "landlord_database_operations_total", dbOps("drop", "success")) - dropped).To(Equal(1.0))
		g.Expect(landlordLogs.find("database dropped", map[string]any{"tenant": name, "database": "app"})).To(HaveLen(1))
	})

	t.Run("a component that does not render counts one render failure per reconcile, and its stall is logged once", func(t *testing.T) {
		g := NewWithT(t)
		name, comp := "metrics-render", "metrics-broken"
		publish(t, comp, "1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.a \n", "")
		failures := map[string]string{"component": comp, "reason": tenancyv1alpha1.ReasonRenderFailed}
		g.Expect(k8s.Create(ctx, newTenant(name, pin(comp, "1.0.0", "")))).To(Succeed())
		// Kept to the end: its age is one of the series the last subtest looks for.
		outer.Cleanup(func() { deleteTenant(outer, name) })
		waitComponentsStalled(t, name, tenancyv1alpha1.ReasonRenderFailed)
		waitIdle(t)
		g.Expect(metric(g, "landlord_component_render_failures_total", failures)).To(BeNumerically(">=", 1))
		// The alert on stalled tenants selects stalled="true": this tenant is one of them, and its
		// age is reported apart from the tenants that are not stalled, which the alert on tenants
		// not Ready selects.
		g.Expect(metric(g, "landlord_tenants", map[string]string{"reason": tenancyv1alpha1.ReasonRenderFailed, "stalled": "true"})).To(BeNumerically(">=", 1))
		g.Expect(metric(g, "landlord_tenant_oldest_not_ready_seconds", map[string]string{"reason": tenancyv1alpha1.ReasonRenderFailed, "stalled": "true"})).To(BeNumerically(">=", 0))
		g.Expect(metric(g, "landlord_tenant_oldest_not_ready_seconds", map[string]string{"reason": tenancyv1alpha1.ReasonRenderFailed, "stalled": "false"})).To(BeZero())
		stalls := landlordLogs.find("tenant stalled", map[string]any{"tenant": name, "reason": tenancyv1alpha1.ReasonRenderFailed})
		g.Expect(stalls).NotTo(BeEmpty())

		before, reconciles := metric(g, "landlord_component_render_failures_total", failures), tenantReconciles.of(name)
		resync(t, name)
		g.Expect(metric(g, "landlord_component_render_failures_total", failures) - before).To(Equal(float64(tenantReconciles.of(name) - reconciles)))
		g.Expect(landlordLogs.find("tenant stalled", map[string]any{"tenant": name, "reason": tenancyv1alpha1.ReasonRenderFailed})).To(HaveLen(len(stalls)),
			"a stall that goes on is not logged again")
	})

	t.Run("an object the API server rejects counts one apply failure per reconcile, by kind and reason", func(t *testing.T) {
		g := NewWithT(t)
		name, comp := "metrics-apply", "metrics-invalid"
		// A ConfigMap key may not contain a space: the template renders, the API server refuses.
		publish(t, comp, "1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  \"not a key\": \"v\"\n", "")
		failures := map[string]string{"kind": "ConfigMap", "reason": tenancyv1alpha1.ReasonInvalidObject}
		g.Expect(k8s.Create(ctx, newTenant(name, pin(comp, "1.0.0", "")))).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, name) })
		waitComponentsStalled(t, name, tenancyv1alpha1.ReasonInvalidObject)
		waitIdle(t)
		g.Expect(metric(g, "landlord_apply_failures_total", failures)).To(BeNumerically(">=", 1))

		before, reconciles := metric(g, "landlord_apply_failures_total", failures), tenantReconciles.of(name)
		resync(t, name)
		g.Expect(metric(g, "landlord_apply_failures_total", failures) - before).To(Equal(float64(tenantReconciles.of(name) - reconciles)))
	})

	t.Run("a drift repair is counted and logged with the object's own keys, never controller-runtime's", func(t *testing.T) {
		g := NewWithT(t)
		name := "metrics-drift"
		createTenant(t, newTenant(name))
		waitIdle(t)
		ns := opConfig.NamespaceName(name)
		quotas := &corev1.ResourceQuotaList{}
		g.Expect(k8s.List(ctx, quotas, client.InNamespace(ns))).To(Succeed())
		g.Expect(quotas.Items).NotTo(BeEmpty())
		quota := &quotas.Items[0]
		before := metric(g, "landlord_drift_repairs_total", map[string]string{"kind": "ResourceQuota"})
		g.Expect(k8s.Patch(ctx, quota, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hard":{"pods":"999"}}}`)), client.FieldOwner("someone"))).To(Succeed())
		g.Eventually(func() float64 {
			return metric(g, "landlord_drift_repairs_total", map[string]string{"kind": "ResourceQuota"})
		}).WithTimeout(timeout).Should(BeNumerically(">", before))
		var repairs []logLine
		g.Eventually(func() []logLine {
			repairs = landlordLogs.find("drift repaired", map[string]any{"tenant": name, "kind": "ResourceQuota"})
			return repairs
		}).WithTimeout(timeout).ShouldNot(BeEmpty())
		line := repairs[0]
		g.Expect(line.values).To(HaveKeyWithValue("objectName", quota.Name))
		g.Expect(line.values).To(HaveKeyWithValue("objectNamespace", ns))
		// controller-runtime's keys name the reconciled tenant, and only it.
		g.Expect(line.values).To(HaveKeyWithValue("name", name))
		g.Expect(line.values).To(HaveKeyWithValue("namespace", ""))
		g.Expect(line.keys).To(HaveKeyWithValue("name", 1))
		g.Expect(line.keys).To(HaveKeyWithValue("namespace", 1))
	})

	t.Run("a pool reports its target and Ready spares, and a bound claim is timed once", func(t *testing.T) {
		g := NewWithT(t)
		pool := "metrics-pool"
		createPool(outer, newPool(pool, 1))
		waitPool(t, pool, 1, 0)
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_pool_spares_desired", map[string]string{"pool": pool})).To(Equal(1.0))
			g.Expect(metric(g, "landlord_pool_spares_ready", map[string]string{"pool": pool})).To(Equal(1.0))
		}).WithTimeout(timeout).Should(Succeed())
		createClaim(outer, newClaim("metrics-claim", pool))
		waitBound(t, "metrics-claim")
		g.Eventually(func() float64 {
			return metric(g, "landlord_claim_bind_seconds", map[string]string{"pool": pool})
		}).WithTimeout(timeout).Should(Equal(1.0))
	})

	t.Run("the operator leads its shard, the default one, and says so", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(metric(g, "landlord_shard_leader", map[string]string{"shard": ""})).To(Equal(1.0))
	})

	t.Run("a DatabaseServer reports its Ready status and its tenants, and its maxTenants only when it has one", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_database_server_status", map[string]string{"server": pgServer, "engine": "postgres", "ready": "True"})).To(Equal(1.0))
			g.Expect(metric(g, "landlord_database_server_tenants", map[string]string{"server": pgServer})).To(BeNumerically(">=", 0))
		}).WithTimeout(timeout).Should(Succeed())
		// Only a server with spec.maxTenants has a capacity series.
		servers := &tenancyv1alpha1.DatabaseServerList{}
		g.Expect(k8s.List(ctx, servers)).To(Succeed())
		for _, ds := range servers.Items {
			capacity := metric(g, "landlord_database_server_max_tenants", map[string]string{"server": ds.Name})
			if ds.Spec.MaxTenants == nil {
				g.Expect(capacity).To(BeZero(), ds.Name)
			} else {
				g.Expect(capacity).To(BeEquivalentTo(*ds.Spec.MaxTenants), ds.Name)
			}
		}
	})

	t.Run("a rollout whose template is not published reports itself stalled, with no wave and no tenant moved", func(t *testing.T) {
		g := NewWithT(t)
		ro := &tenancyv1alpha1.ComponentRollout{
			ObjectMeta: metav1.ObjectMeta{Name: "metrics-unpublished"},
			Spec:       tenancyv1alpha1.ComponentRolloutSpec{Component: "metrics-unpublished", Version: "1.0.0"},
		}
		g.Expect(k8s.Create(ctx, ro)).To(Succeed())
		outer.Cleanup(func() { _ = k8s.Delete(ctx, ro) })
		id := map[string]string{"rollout": ro.Name, "component": ro.Spec.Component, "version": ro.Spec.Version}
		g.Eventually(func(g Gomega) {
			g.Expect(metric(g, "landlord_rollout_status", map[string]string{"rollout": ro.Name, "ready": "False", "reason": tenancyv1alpha1.ReasonTemplateNotFound, "stalled": "true"})).To(Equal(1.0))
			g.Expect(metric(g, "landlord_rollout_waves", id)).To(BeZero())
			g.Expect(metric(g, "landlord_rollout_waves_released", id)).To(BeZero())
			g.Expect(metric(g, "landlord_rollout_tenants", map[string]string{"rollout": ro.Name, "progress": "done"})).To(BeZero())
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("landlord_build_info is 1 for the running build", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(metric(g, "landlord_build_info", map[string]string{"go_version": runtime.Version()})).To(Equal(1.0))
	})

	t.Run("every metric the dashboard and the alerts query is one the operator exports", func(t *testing.T) {
		g := NewWithT(t)
		families, err := ctrlmetrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		dashboard, err := shipped.DashboardExpressions()
		g.Expect(err).NotTo(HaveOccurred())
		rules, err := shipped.RuleExpressions()
		g.Expect(err).NotTo(HaveOccurred())
		exprs := map[string]string{}
		for _, e := range dashboard {
			exprs["dashboard query "+e] = e
		}
		for alert, e := range rules {
			exprs["alert "+alert] = e
		}
		// A server with spec.maxTenants takes part in the placement of every tenant created while
		// it exists, so the suite registers one only where placement is the subject.
		drivenElsewhere := map[string]string{"landlord_database_server_max_tenants": "TestDatabasePlacement",
			// Migrations run against real databases in the backup suite, which checks it.
			"landlord_migrations_total": "TestAFailedMigrationKeepsTheVersionItRanHaltsTheRolloutAndItsBackupBringsTheDataBack",
			// So do backup schedules, with a backup store this suite has not.
			"landlord_backup_schedule_overdue_tenants": "TestAScheduleSpreadsAFleetOverItsWindowAndNoServerRunsMoreBackupsThanItsLimit",
			"landlord_backup_schedule_missed_window":   "TestAScheduleSpreadsAFleetOverItsWindowAndNoServerRunsMoreBackupsThanItsLimit"}
		checked := 0
		for where, expr := range exprs {
			names, err := shipped.MetricNames(expr)
			g.Expect(err).NotTo(HaveOccurred())
			for _, n := range names {
				if drivenElsewhere[n] != "" {
					continue
				}
				g.Expect(shipped.Exported(n, families)).To(BeTrue(), "%s names %s, which the operator does not export", where, n)
				checked++
			}
		}
		g.Expect(checked).To(BeNumerically(">=", len(exprs)))
	})
}
