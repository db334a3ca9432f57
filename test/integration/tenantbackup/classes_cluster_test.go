package tenantbackup_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/databases"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/localcluster"
	"github.com/landlord-dev/landlord/internal/tenantclass"
	"github.com/landlord-dev/landlord/test/testenv"
)

// tierLabel marks the DatabaseServers the enterprise class places its tenants' databases on.
const tierLabel = "tiers.example.com/dedicated"

// newClass creates a TenantClass and deletes it when the test ends.
func newClass(t *testing.T, name string, spec tenancyv1alpha1.TenantClassSpec) {
	t.Helper()
	c := &tenancyv1alpha1.TenantClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	NewWithT(t).Expect(k8s.Create(context.Background(), c)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), c) })
}

// enterpriseServer starts a PostgreSQL server and registers it for one tenant, labelled as a
// dedicated one.
func enterpriseServer(t *testing.T) (string, *dbtest.Instance) {
	t.Helper()
	return labelledServer(t, "enterprise-pg", map[string]string{tierLabel: "true"}, ptr.To[int32](1))
}

// quotaCPU is the hard CPU of the tenant namespace's ResourceQuota.
func quotaCPU(g Gomega, tenant string) string {
	list := &corev1.ResourceQuotaList{}
	g.Expect(k8s.List(context.Background(), list, client.InNamespace(opConfig.NamespaceName(tenant)))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	q := list.Items[0].Spec.Hard[corev1.ResourceRequestsCPU]
	return q.String()
}

func TestTenantsOfAClassGetItsTierAndChangingClassMovesThemLive(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	enterpriseDB, dedicated := enterpriseServer(t)
	newClass(t, "standard", tenancyv1alpha1.TenantClassSpec{
		Quota:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		NodePool: &tenancyv1alpha1.ClassNodePool{Name: "pool-a"},
		Databases: &tenancyv1alpha1.ClassDatabases{ServerSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: tierLabel, Operator: metav1.LabelSelectorOpDoesNotExist}},
		}},
		CostCode:   "standard",
		Components: &tenancyv1alpha1.ClassComponents{Allowed: []string{"tierapp"}},
	})
	newClass(t, "enterprise", tenancyv1alpha1.TenantClassSpec{
		Quota:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12")},
		NodePool: &tenancyv1alpha1.ClassNodePool{Dedicated: true},
		Databases: &tenancyv1alpha1.ClassDatabases{Dedicated: true, ServerSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{tierLabel: "true"},
		}},
		CostCode:  "enterprise",
		Overrides: []tenancyv1alpha1.ClassField{tenancyv1alpha1.ClassFieldQuota},
	})

	t.Run("an override the class does not allow is refused at admission, naming the field", func(t *testing.T) {
		g := NewWithT(t)
		for _, tc := range []struct {
			tenant *tenancyv1alpha1.Tenant
			want   string
		}{
			{newTenant("tier-pool", func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Class, tn.Spec.NodePool = "standard", "pool-b" }),
				"spec.nodePool: TenantClass standard does not let its tenants set nodePool"},
			{newTenant("tier-quota", func(tn *tenancyv1alpha1.Tenant) {
				tn.Spec.Class, tn.Spec.Quota = "standard", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
			}), "spec.quota: TenantClass standard does not let its tenants set quota"},
			{newTenant("tier-server", func(tn *tenancyv1alpha1.Tenant) {
				tn.Spec.Class, tn.Spec.Databases.Postgres = "enterprise", []tenancyv1alpha1.Database{{Name: "app", Server: pgServer}}
			}), "spec.databases.postgres[name=app].server: TenantClass enterprise does not let its tenants choose their database servers"},
			{newTenant("tier-component", runs("tierapp", "1.0.0", false), runs("analytics", "1.0.0", false), func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Class = "standard" }),
				"spec.components[name=analytics]: TenantClass standard does not let its tenants run it (spec.components.allowed: tierapp)"},
		} {
			// The API server's policy reads classes from its own informer: the first refusal
			// may come a moment after the classes are created.
			g.Eventually(func() string {
				err := k8s.Create(ctx, tc.tenant.DeepCopy(), client.DryRunAll)
				if err == nil {
					return ""
				}
				return err.Error()
			}).WithTimeout(timeout).Should(ContainSubstring(tc.want))
		}
		allowed := newTenant("tier-quota-ok", func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Class, tn.Spec.Quota = "enterprise", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
		})
		g.Expect(k8s.Create(ctx, allowed, client.DryRunAll)).To(Succeed(), "a quota where the class lists quota in its overrides")
	})

	t.Run("a field a class stops allowing stays editable around it: the tenant can still be archived, not given a new value", func(t *testing.T) {
		g := NewWithT(t)
		newClass(t, "ratchet", tenancyv1alpha1.TenantClassSpec{Overrides: []tenancyv1alpha1.ClassField{tenancyv1alpha1.ClassFieldQuota}})
		quota := func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Class, tn.Spec.Quota = "ratchet", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}
		}
		createTenant(t, newTenant("tier-ratchet", quota))
		class := &tenancyv1alpha1.TenantClass{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "ratchet"}, class)).To(Succeed())
		g.Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"overrides":null}}`)))).To(Succeed())
		g.Eventually(func() error {
			return k8s.Create(ctx, newTenant("tier-ratchet-2", quota), client.DryRunAll)
		}).WithTimeout(timeout).Should(MatchError(ContainSubstring("spec.quota: TenantClass ratchet does not let its tenants set quota")))
		g.Expect(k8s.Patch(ctx, named("tier-ratchet"), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"quota":{"cpu":"6"}}}`)))).
			To(MatchError(ContainSubstring("spec.quota: TenantClass ratchet")))
		g.Expect(k8s.Patch(ctx, named("tier-ratchet"), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"state":"Archived"}}`)))).To(Succeed())
		g.Eventually(func(g Gomega) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "tier-ratchet"}, tenant)).To(Succeed())
			res, err := testenv.KStatus(tenant)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Status.String()).To(Equal("Current"), res.Message)
			g.Expect(tenant.Status.Namespace).To(BeEmpty())
		}).WithTimeout(2 * timeout).Should(Succeed())
	})

	name := "tier-acme"
	publishVersion(t, "tierapp", "1.0.0", nil)
	createTenant(t, newTenant(name, runs("tierapp", "1.0.0", false), func(tn *tenancyv1alpha1.Tenant) {
		tn.Spec.Class = "standard"
		tn.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
	}))
	ns := opConfig.NamespaceName(name)
	testenv.AddNode(t, k8s, localcluster.Node{Name: name + "-0", Pool: tenantclass.DedicatedPoolPrefix + name}, timeout)

	t.Run("a standard tenant gets the standard quota, pool, servers and cost code", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(quotaCPU(g, name)).To(Equal("3"))
		n := &corev1.Namespace{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
		g.Expect(n.Labels).To(HaveKeyWithValue(tenancyv1alpha1.NodePoolLabel, "pool-a"))
		g.Expect(n.Labels).To(HaveKeyWithValue(tenancyv1alpha1.CostCodeLabel, "standard"))
		tenant := testenv.WaitTenantCurrent(t, k8s, name, timeout)
		g.Expect(tenant.Status.Databases).To(ConsistOf(HaveField("Server", pgServer)))
	})

	before := testenv.AccountOf(credentials(g, name, "app"))
	old := openOn(t, servers[database.Postgres], before)
	_, err := old.ExecContext(ctx, "CREATE TABLE items (id INT PRIMARY KEY, v BIGINT NOT NULL)")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = old.ExecContext(ctx, "INSERT INTO items SELECT i, i * 7 FROM generate_series(0, $1 - 1) AS i", moveRows)
	g.Expect(err).NotTo(HaveOccurred())
	wantN, wantSum, err := countRows(ctx, old)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wantN).To(BeEquivalentTo(moveRows))
	g.Expect(old.Close()).To(Succeed())

	// The component's Deployment runs two pods.
	placed := map[types.UID]bool{}
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2))
		for _, p := range pods.Items {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(p.Spec.NodeName).To(Equal("pool-a-0"))
			placed[p.UID] = true
		}
	}).WithTimeout(timeout).Should(Succeed())

	// The upgrade: one field.
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
	patch := client.MergeFrom(tenant.DeepCopy())
	tenant.Spec.Class = "enterprise"
	g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())

	t.Run("its pods move to its own node pool and its quota is the enterprise one", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(placed).NotTo(HaveKey(p.UID), "pod %s is still there, on %s", p.Name, p.Spec.NodeName)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
				g.Expect(p.Spec.NodeName).To(Equal(name + "-0"))
			}
			g.Expect(quotaCPU(g, name)).To(Equal("12"))
		}).WithTimeout(2 * timeout).Should(Succeed())
	})

	moveName := databases.ClassMoveName(name, tenancyv1alpha1.EnginePostgres, "app", enterpriseDB)
	m := waitMove(t, moveName, tenancyv1alpha1.MoveCopying)
	g.Eventually(func(g Gomega) {
		m = waitMove(t, moveName, tenancyv1alpha1.MoveCopying)
		g.Expect(m.Status.Job).NotTo(BeEmpty())
	}).WithTimeout(timeout).Should(Succeed())
	runJob(t, m.Status.Job)
	m = waitMove(t, moveName, tenancyv1alpha1.MoveSwitched)

	t.Run("its components restart onto the new server's credentials", func(t *testing.T) {
		g := NewWithT(t)
		switched := m.Status.SwitchedAt.UTC().Format(time.RFC3339)
		g.Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(k8s.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(p.Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DatabasesSwitchedAnnotation, switched), "pod %s", p.Name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
				g.Expect(p.Spec.NodeName).To(Equal(name + "-0"))
			}
		}).WithTimeout(2 * timeout).Should(Succeed())
	})

	t.Run("its database is on its dedicated server with every row, and its credentials name it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(m.Status.From.Server).To(Equal(pgServer))
		sec := credentials(g, name, "app")
		after := testenv.AccountOf(sec)
		g.Expect(string(sec.Data[tenancyv1alpha1.CredentialsKeyPort])).To(Equal(strconv.Itoa(int(dedicated.Server.Port))))
		n, sum, err := countRows(ctx, openOn(t, dedicated, after))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect([]int64{n, sum}).To(Equal([]int64{wantN, wantSum}))
		tenant := testenv.WaitTenantCurrent(t, k8s, name, timeout)
		g.Expect(tenant.Status.Databases).To(ConsistOf(HaveField("Server", enterpriseDB)))
		g.Expect(m.Status.Downtime).NotTo(BeNil())
		t.Logf("the cut-over of a %d-row database to its dedicated server took %s (the Job held until released by the test)", moveRows, m.Status.Downtime.Duration)
	})

	t.Run("the old database is kept until the move is confirmed, then dropped", func(t *testing.T) {
		g := NewWithT(t)
		admin := adminOf(t, servers[database.Postgres])
		from := database.Account{Database: m.Status.From.Database, Username: m.Status.From.Username}
		g.Expect(admin.Holds(ctx, from)).To(BeTrue())
		g.Expect(k8s.Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"confirmed":true}}`)))).To(Succeed())
		m = waitMove(t, moveName, tenancyv1alpha1.MoveSucceeded)
		g.Expect(admin.Holds(ctx, from)).To(BeFalse())
	})

	t.Run("a change of the class for new tenants only leaves the tenant as it was, until released", func(t *testing.T) {
		g := NewWithT(t)
		class := &tenancyv1alpha1.TenantClass{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "enterprise"}, class)).To(Succeed())
		before := class.Status.Revision
		g.Expect(before).NotTo(BeEmpty())
		patch := []byte(`{"spec":{"quota":{"cpu":"16"},"updates":{"strategy":"NewTenants"}}}`)
		g.Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "enterprise"}, class)).To(Succeed())
			g.Expect(class.Status.ObservedGeneration).To(Equal(class.Generation))
			g.Expect(class.Status.Revision).NotTo(Equal(before))
		}).WithTimeout(timeout).Should(Succeed())
		// A reconcile asked for after the change has seen it: the tenant keeps its revision.
		requested := time.Now().UTC().Format(time.RFC3339Nano)
		g.Expect(k8s.Patch(ctx, named(name), client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+tenancyv1alpha1.ReconcileRequestAnnotation+`":"`+requested+`"}}}`)))).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
			g.Expect(tenant.Status.LastHandledReconcileAt).To(Equal(requested))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(tenant.Status.Class).To(Equal(&tenancyv1alpha1.TenantClassRef{Name: "enterprise", Revision: before}))
		g.Expect(quotaCPU(g, name)).To(Equal("12"))

		// The platform changes its mind: every tenant gets the change.
		patch = []byte(`{"spec":{"updates":{"strategy":"Immediate"}}}`)
		g.Expect(k8s.Patch(ctx, class, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(quotaCPU(g, name)).To(Equal("16"))
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "enterprise"}, class)).To(Succeed())
			g.Expect(class.Status.Updated).To(BeEquivalentTo(1))
			res, err := testenv.KStatus(class)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Status.String()).To(Equal("Current"), res.Message)
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a tenant of a class that does not exist stalls and changes nothing", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.Class = "platinum"
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, tenant)).To(Succeed())
			res, err := testenv.KStatus(tenant)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Status.String()).To(Equal("Failed"))
			g.Expect(res.Message).To(ContainSubstring("TenantClass platinum"))
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(quotaCPU(g, name)).To(Equal("16"), fmt.Sprintf("the quota of %s", name))
	})
}

// named is a Tenant with only its name, for a patch.
func named(name string) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
