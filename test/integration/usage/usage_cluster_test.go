package usage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// TestATenantsUsageIsWhatItsServersAndQuotaReport: a tenant's status.usage holds what the quota
// controller counts in its namespace, what its pods use as the metrics API reports it, and the
// size of each database as its server reports it; a sample costs one query per server, one list
// of quotas and one of pod metrics, and, for a tenant whose usage did not change, no request of
// its own.
func TestATenantsUsageIsWhatItsServersAndQuotaReport(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	const name = "billed"
	ns := opConfig.NamespaceName(name)
	createTenant(t, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Organization: "Billed Inc.", Email: "ops@billed.example.com", CostCode: "cc-1001",
			Access: tenancyv1alpha1.Access{Admins: []tenancyv1alpha1.Subject{{Kind: "User", Name: "erin"}}},
			Databases: tenancyv1alpha1.Databases{
				Postgres: []tenancyv1alpha1.Database{{Name: "app", Server: pgServer}},
				MySQL:    []tenancyv1alpha1.Database{{Name: "legacy", Server: myServer}},
			},
		},
	})
	erin := impersonate(t, "erin")
	web := testenv.RestrictedDeployment(ns, "web", 2)
	// What each pod uses, as kwok plays it and metrics-server reports it.
	web.Spec.Template.Annotations = map[string]string{localcluster.UsageCPUAnnotation: "150m", localcluster.UsageMemoryAnnotation: "100Mi"}
	g.Expect(erin.Create(ctx, web)).To(Succeed())
	testenv.WaitPodsRunning(t, k8s, ns, 2, timeout)
	fill(t, name, "app", database.Postgres, 3000)
	fill(t, name, "legacy", database.MySQL, 3000)

	t.Run("the sample holds the quota's counts, what the pods use and each database's size as its server reports it", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			sample()
			tenant := getTenant(g, name)
			g.Expect(tenant.Status.Usage).NotTo(BeNil())
			quota := &corev1.ResourceQuota{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.QuotaName}, quota)).To(Succeed())
			g.Expect(tenant.Status.Usage.Resources).To(HaveLen(len(quota.Status.Used)))
			for res, used := range quota.Status.Used {
				got := tenant.Status.Usage.Resources[res]
				g.Expect(got.Cmp(used)).To(BeZero(), "%s: status says %s, the quota %s", res, got.String(), used.String())
			}
			g.Expect(tenant.Status.Usage.Resources.Pods().Value()).To(BeEquivalentTo(2))
			// Two pods of 100Mi; two of 150m, each a rate metrics-server takes between two
			// scrapes of kwok's counter, timed by each end: within 2%.
			g.Expect(tenant.Status.Usage.Used.Memory().String()).To(Equal("200Mi"))
			g.Expect(tenant.Status.Usage.Used.Cpu().MilliValue()).To(BeNumerically("~", 300, 6), "CPU used: %s", tenant.Status.Usage.Used.Cpu())
			g.Expect(tenant.Status.Usage.Databases).To(ConsistOf(
				tenancyv1alpha1.DatabaseUsage{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: reported(t, name, "app", database.Postgres)},
				tenancyv1alpha1.DatabaseUsage{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Bytes: reported(t, name, "legacy", database.MySQL)},
			))
			g.Expect(bytesOf(tenant.Status.Usage, "app")).To(BeNumerically(">", 1_000_000), "3,000 rows of 500 bytes")
			// metrics-server reports a pod's CPU once it has scraped it twice, 10 s apart.
		}).WithTimeout(3 * timeout).Should(Succeed())
	})

	t.Run("a sample asks each server once and writes nothing for a tenant whose usage did not change", func(t *testing.T) {
		g := NewWithT(t)
		sizes := func(server string) float64 {
			v, err := testenv.OperatorMetric("landlord_database_operations_total", map[string]string{"server": server, "operation": database.OperationSizes})
			g.Expect(err).NotTo(HaveOccurred())
			return v
		}
		samples := func() float64 {
			v, err := testenv.OperatorMetric("landlord_usage_samples_total", nil)
			g.Expect(err).NotTo(HaveOccurred())
			return v
		}
		// settled is the number of samples taken, once the sampler has been idle a moment: a
		// tick it had not taken yet (the clock was stepped while it sampled) is taken first.
		settled := func(g Gomega) float64 {
			var n float64
			g.Eventually(func(g Gomega) {
				n = samples()
				g.Consistently(samples).WithTimeout(300 * time.Millisecond).Should(Equal(n))
			}).WithTimeout(timeout).Should(Succeed())
			return n
		}
		// A database's size may still move on its own (the server's background work): the
		// sample that counts is one after which the tenant's status is as it was.
		g.Eventually(func(g Gomega) {
			n := settled(g)
			g.Eventually(op.Idle).WithTimeout(timeout).Should(BeTrue())
			before := getTenant(g, name)
			requests := op.Requests.Snapshot()
			pg, my := sizes(pgServer), sizes(myServer)
			sample()
			g.Expect(settled(g)).To(Equal(n+1), "samples taken for one step of the clock")
			g.Eventually(op.Idle).WithTimeout(timeout).Should(BeTrue())
			g.Expect(sizes(pgServer)).To(Equal(pg+1), "queries to %s in one sample", pgServer)
			g.Expect(sizes(myServer)).To(Equal(my+1), "queries to %s in one sample", myServer)
			g.Expect(getTenant(g, name).ResourceVersion).To(Equal(before.ResourceVersion), "the sample changed the tenant's usage")
			// The quotas' counts are listed (the cache does not keep them), one request per 500
			// tenants, and the pods' metrics (metrics.k8s.io's pods) once; nothing else is sent.
			made := op.Requests.Snapshot().Sub(requests)
			// (The counter names a list by its HTTP verb.)
			NewWithT(t).Expect(made).To(Equal(testenv.Counts{"GET resourcequotas": 1, "GET pods": 1}), "requests made by a sample that changed nothing")
		}).WithTimeout(2 * timeout).Should(Succeed())
	})

	t.Run("a database that grows is sampled larger, and the tenant written once", func(t *testing.T) {
		g := NewWithT(t)
		was := bytesOf(getTenant(g, name).Status.Usage, "app")
		fill(t, name, "app", database.Postgres, 3000)
		g.Eventually(func(g Gomega) {
			sample()
			now := bytesOf(getTenant(g, name).Status.Usage, "app")
			g.Expect(now).To(BeNumerically(">", was))
			g.Expect(now).To(Equal(reported(t, name, "app", database.Postgres)))
		}).WithTimeout(timeout).Should(Succeed())
	})
}

// TestATenantsCostCodeReachesItsNamespaceAndPods: cloud cost tools attribute spend to pods by
// label; every pod in the tenant's namespace carries the tenant's cost code, whatever the pod
// asked for, and a tenant cannot change it.
func TestATenantsCostCodeReachesItsNamespaceAndPods(t *testing.T) {
	ctx := context.Background()
	const name = "coded"
	ns := opConfig.NamespaceName(name)
	createTenant(t, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{
			Organization: "Coded Inc.", Email: "ops@coded.example.com", CostCode: "cc-2002",
			Access: tenancyv1alpha1.Access{Admins: []tenancyv1alpha1.Subject{{Kind: "User", Name: "carl"}}},
		},
	})
	carl := impersonate(t, "carl")
	costCode := func(g Gomega, obj client.Object) string {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.GetLabels()[tenancyv1alpha1.CostCodeLabel]
	}

	t.Run("the namespace carries it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(costCode(g, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Equal("cc-2002"))
	})

	t.Run("the pods of a tenant's Deployment carry it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(carl.Create(ctx, testenv.RestrictedDeployment(ns, "web", 2))).To(Succeed())
		for _, p := range testenv.WaitPodsRunning(t, k8s, ns, 2, timeout) {
			g.Expect(p.Labels).To(HaveKeyWithValue(tenancyv1alpha1.CostCodeLabel, "cc-2002"), "pod %s", p.Name)
		}
	})

	t.Run("a pod asking for another cost code gets the tenant's", func(t *testing.T) {
		g := NewWithT(t)
		pod := testenv.RestrictedPod(ns, "sneaky")
		pod.Labels = map[string]string{tenancyv1alpha1.CostCodeLabel: "someone-else", "app": "sneaky"}
		g.Expect(carl.Create(ctx, pod)).To(Succeed())
		g.Expect(costCode(g, pod)).To(Equal("cc-2002"))
		g.Expect(pod.Labels).To(HaveKeyWithValue("app", "sneaky"), "the pod's own labels stay")

		relabel := fmt.Sprintf(`{"metadata":{"labels":{%q:"someone-else"}}}`, tenancyv1alpha1.CostCodeLabel)
		g.Expect(carl.Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(relabel)))).To(Succeed())
		g.Expect(costCode(g, pod)).To(Equal("cc-2002"), "a tenant relabelling its pod keeps the tenant's code")
	})

	t.Run("a changed cost code reaches the namespace and new pods", func(t *testing.T) {
		g := NewWithT(t)
		tenant := getTenant(g, name)
		g.Expect(k8s.Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"costCode":"cc-3003"}}`)))).To(Succeed())
		g.Eventually(func(g Gomega) string {
			return costCode(g, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}).WithTimeout(timeout).Should(Equal("cc-3003"))
		pod := testenv.RestrictedPod(ns, "after")
		g.Expect(carl.Create(ctx, pod)).To(Succeed())
		g.Expect(costCode(g, pod)).To(Equal("cc-3003"))

		// A pod admitted under the old code is the tenant's to update as before (an operator
		// labelling its primary on failover): the update takes the new code.
		older := testenv.RestrictedPod(ns, "sneaky")
		g.Expect(carl.Patch(ctx, older, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"role":"primary"}}}`)))).To(Succeed())
		g.Expect(costCode(g, older)).To(Equal("cc-3003"))
		g.Expect(older.Labels).To(HaveKeyWithValue("role", "primary"))
	})

	t.Run("a workload may not carry the cost code in its pod template, so none selects its pods by it", func(t *testing.T) {
		g := NewWithT(t)
		// A selector on the code would stop matching the pods the policy relabels when the code
		// changes: a ReplicaSet would make pods without end.
		d := testenv.RestrictedDeployment(ns, "selects-by-code", 1)
		d.Spec.Selector.MatchLabels[tenancyv1alpha1.CostCodeLabel] = "cc-3003"
		d.Spec.Template.Labels[tenancyv1alpha1.CostCodeLabel] = "cc-3003"
		err := carl.Create(ctx, d)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring(tenancyv1alpha1.CostCodeLabel))
	})
}

// TestADatabaseServerThatCannotBeAskedLeavesItsTenantsFiguresAsTheyWere: a sample during an
// outage counts an error and writes nothing; the figures stand until the server answers again.
func TestADatabaseServerThatCannotBeAskedLeavesItsTenantsFiguresAsTheyWere(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	// A server of this test's own, so that stopping it stops no other test's.
	inst, err := dbtest.StartPostgres()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = inst.Close() })
	g.Expect(env.RegisterDatabaseServer(ctx, opConfig.Databases.CredentialsNamespace, "pg-outage", inst)).To(Succeed())
	const name = "outage"
	createTenant(t, &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantSpec{Organization: "Outage Inc.", Email: "ops@outage.example.com",
			Databases: tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "app", Server: "pg-outage"}}}},
	})
	// The size the server reports before it stops: an empty database holds still, so every
	// sample taken before the outage, written whenever, records this figure.
	var measured int64
	g.Eventually(func(g Gomega) {
		sample()
		measured = reportedOn(t, inst.Server, name, "app")
		g.Expect(getTenant(g, name).Status.Usage).NotTo(BeNil())
		g.Expect(bytesOf(getTenant(g, name).Status.Usage, "app")).To(Equal(measured))
	}).WithTimeout(timeout).Should(Succeed())

	g.Expect(inst.Stop()).To(Succeed())
	defer func() { g.Expect(inst.Start()).To(Succeed()) }()
	errors := func() float64 {
		v, err := testenv.OperatorMetric("landlord_usage_samples_total", map[string]string{"result": "error"})
		g.Expect(err).NotTo(HaveOccurred())
		return v
	}
	failed := errors()
	sample()
	g.Eventually(errors).WithTimeout(timeout).Should(BeNumerically(">", failed), "a sample with a server down is counted as an error")
	g.Eventually(op.Idle).WithTimeout(timeout).Should(BeTrue())
	// (The quota's counts may still change the usage meanwhile: only the database's figure is
	// looked at.)
	g.Expect(bytesOf(getTenant(g, name).Status.Usage, "app")).To(Equal(measured), "the database's figure changed during the outage")
}

// bytesOf is the size usage records for the database of that name, -1 for none.
func bytesOf(u *tenancyv1alpha1.TenantUsage, name string) int64 {
	for _, d := range u.Databases {
		if d.Name == name {
			return d.Bytes
		}
	}
	return -1
}

// fill writes rows of about 500 bytes into a tenant's database, as the tenant's login, and has
// the server's statistics (which MariaDB's sizes come from) and free-space maps brought up to
// date, so that the database's size holds still afterwards.
func fill(t *testing.T, tenant, db string, engine database.Engine, rows int) {
	t.Helper()
	s := servers[engine].Server
	acct := account(t, tenant, db)
	conn, err := dbtest.OpenDB(s, acct.Username, acct.Password, acct.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stmts := map[database.Engine][]string{
		database.Postgres: {
			"CREATE TABLE IF NOT EXISTS filler (id serial PRIMARY KEY, body text)",
			fmt.Sprintf("INSERT INTO filler (body) SELECT repeat('x', 500) || n FROM generate_series(1, %d) AS n", rows),
			"VACUUM ANALYZE filler",
		},
		database.MySQL: {
			"CREATE TABLE IF NOT EXISTS filler (id INT AUTO_INCREMENT PRIMARY KEY, body TEXT)",
			fmt.Sprintf("INSERT INTO filler (body) SELECT CONCAT(REPEAT('x', 500), seq) FROM seq_1_to_%d", rows),
			"ANALYZE TABLE filler",
		},
	}[engine]
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// reported is a tenant database's size as its server's administrator reads it.
func reported(t *testing.T, tenant, db string, engine database.Engine) int64 {
	t.Helper()
	return reportedOn(t, servers[engine].Server, tenant, db)
}

// reportedOn is reported, of a database on server s.
func reportedOn(t *testing.T, s database.Server, tenant, db string) int64 {
	t.Helper()
	engine := s.Engine
	name := account(t, tenant, db).Database
	conn, err := dbtest.OpenDB(s, s.AdminUser, s.AdminPassword, map[database.Engine]string{database.Postgres: "postgres"}[engine])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := map[database.Engine]string{
		database.Postgres: "SELECT pg_database_size($1)",
		database.MySQL:    "SELECT CAST(COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) AS SIGNED) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
	}[engine]
	var n int64
	if err := conn.QueryRowContext(context.Background(), q, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// account is a tenant database's login, from its credentials Secret.
func account(t *testing.T, tenant, db string) database.Account {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: opConfig.NamespaceName(tenant), Name: tenancyv1alpha1.DatabaseSecretName(db)}, s); err != nil {
		t.Fatal(err)
	}
	return testenv.AccountOf(s)
}

func impersonate(t *testing.T, user string) client.Client {
	t.Helper()
	return env.Impersonate(t, user)
}
