package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/shard"
	"github.com/landlord-dev/landlord/test/testenv"
)

// tenantKinds are the kinds of the objects Landlord writes for a tenant with a database and the
// shard test's component (a ConfigMap), by their resource names.
var tenantKinds = map[string]schema.GroupVersionKind{
	"namespaces":      {Version: "v1", Kind: "Namespace"},
	"secrets":         {Version: "v1", Kind: "Secret"},
	"resourcequotas":  {Version: "v1", Kind: "ResourceQuota"},
	"limitranges":     {Version: "v1", Kind: "LimitRange"},
	"configmaps":      {Version: "v1", Kind: "ConfigMap"},
	"rolebindings":    {Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	"networkpolicies": {Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
}

// shardsOfObjects maps each object Landlord wrote for the tenant ("resource name") to its shard
// label, read from the API server.
func shardsOfObjects(g Gomega, tenant string) map[string]string {
	out := map[string]string{}
	for resource, gvk := range tenantKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		g.Expect(k8s.List(context.Background(), list, client.MatchingLabels{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue, tenancyv1alpha1.TenantLabel: tenant,
		})).To(Succeed())
		for _, o := range list.Items {
			out[resource+" "+o.Name] = o.Labels[tenancyv1alpha1.ShardLabel]
		}
	}
	return out
}

// expectAllInShard checks that the tenant has its count objects, each labelled for shard ("" for
// the default shard: no label).
func expectAllInShard(g Gomega, tenant, shard string, count int) {
	objs := shardsOfObjects(g, tenant)
	g.Expect(objs).To(HaveLen(count))
	for obj, got := range objs {
		g.Expect(got).To(Equal(shard), "%s", obj)
	}
}

// writesOf keeps the writes among counts, by resource, less the leader election lease's renewals
// and the access reviews a shard makes once per component kind (questions, not writes).
func writesOf(counts testenv.Counts) testenv.Counts {
	out := testenv.Counts{}
	for k, v := range tenantRequests(counts) {
		verb, resource, _ := strings.Cut(k, " ")
		if resource != "leases" && resource != "selfsubjectaccessreviews" && (verb == "PATCH" || verb == "POST" || verb == "PUT" || verb == "DELETE") {
			out[k] = v
		}
	}
	return out
}

// cachedNamespace says whether an operator's cache holds the tenant's namespace.
func cachedNamespace(g Gomega, o *testenv.Operator, tenant string) bool {
	err := o.GetCache().Get(context.Background(), client.ObjectKey{Name: opConfig.NamespaceName(tenant)}, &corev1.Namespace{})
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	return err == nil
}

// relabel sets (or, with "", removes) a tenant's shard label.
func relabel(t *testing.T, name, shard string) {
	t.Helper()
	value := "null"
	if shard != "" {
		value = fmt.Sprintf("%q", shard)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, tenancyv1alpha1.ShardLabel, value)
	NewWithT(t).Expect(k8s.Patch(context.Background(), &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// waitShard waits until the tenant is Ready (kstatus Current, as waitReady) and reconciled by
// shard, with no handover pending: all three at once, within one timeout.
func waitShard(t *testing.T, name, shard string) *tenancyv1alpha1.Tenant {
	t.Helper()
	tenant := &tenancyv1alpha1.Tenant{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
		g.Expect(kstatus(g, tenant).Status).To(Equal(status.CurrentStatus), "conditions: %+v", tenant.Status.Conditions)
		g.Expect(tenant.Status.Shard).To(Equal(shard))
		g.Expect(tenant.Status.HandoverTo).To(BeNil())
	}).WithTimeout(timeout).Should(Succeed())
	return tenant
}

func TestTenantsMoveBetweenShardsByTheirLabel(t *testing.T) {
	ctx := context.Background()
	publish(t, "shardwave", "1.0.0", waveManifests("1.0.0"), "")
	parent := t
	// objectCount is how many objects Landlord writes for each tenant of this test.
	objectCount := 0
	shards := map[string]*testenv.Operator{}
	for _, name := range []string{"a", "b"} {
		o, err := env.StartShard(opConfig, store, name)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		shards[name] = o
		// Registered before any tenant: cleanups run last first, so the tenants are deleted
		// while the shards that reconcile them still run.
		t.Cleanup(func() { _ = o.Stop() })
	}
	// Tenants outlive the subtest that creates them, and are deleted before the shards stop.
	create := func(t *testing.T, tn *tenancyv1alpha1.Tenant) {
		NewWithT(t).Expect(k8s.Create(ctx, tn)).To(Succeed())
		parent.Cleanup(func() { deleteTenant(parent, tn.Name) })
	}
	sharded := func(shard string) func(*tenancyv1alpha1.Tenant) {
		return func(tn *tenancyv1alpha1.Tenant) {
			tn.Labels = map[string]string{tenancyv1alpha1.ShardLabel: shard}
			tn.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
			pin("shardwave", "1.0.0", "")(tn)
		}
	}

	t.Run("a tenant labelled for a shard is converged by that shard alone, and only its cache holds the tenant's objects", func(t *testing.T) {
		g := NewWithT(t)
		before := op.Requests.Snapshot()
		create(t, newTenant("shard-one", sharded("a")))
		tenant := waitShard(t, "shard-one", "a")
		g.Expect(tenant.Status.Databases).To(HaveLen(1))
		objs := shardsOfObjects(g, "shard-one")
		g.Expect(objs).To(HaveKey("namespaces " + opConfig.NamespaceName("shard-one")))
		g.Expect(objs).To(HaveKey("configmaps wave"))
		g.Expect(objs).To(HaveKey("secrets " + tenancyv1alpha1.DatabaseSecretName("app")))
		for obj, shard := range objs {
			g.Expect(shard).To(Equal("a"), "%s", obj)
		}
		objectCount = len(objs)
		g.Expect(cachedNamespace(g, shards["a"], "shard-one")).To(BeTrue())
		g.Expect(cachedNamespace(g, shards["b"], "shard-one")).To(BeFalse())
		g.Expect(cachedNamespace(g, op, "shard-one")).To(BeFalse())
		// The default shard wrote nothing of a tenant's, neither objects nor status.
		for k := range writesOf(op.Requests.Snapshot().Sub(before)) {
			_, resource, _ := strings.Cut(k, " ")
			g.Expect(tenantKinds).NotTo(HaveKey(resource), "the default shard wrote %s", k)
			g.Expect(resource).NotTo(HavePrefix("tenants"), "the default shard wrote %s", k)
		}
	})

	t.Run("relabelling hands the tenant over: the new shard writes each object once, with its label, and the old one writes none", func(t *testing.T) {
		g := NewWithT(t)
		objs := shardsOfObjects(g, "shard-one")
		// Shard a may still be writing what it converged (a status once the component is
		// healthy): counted from here, that write would be taken for a second handover write.
		for _, name := range []string{"a", "b"} {
			g.Eventually(shards[name].Idle).WithTimeout(timeout).Should(BeTrue(), "shard %s", name)
		}
		beforeA, beforeB := shards["a"].Requests.Snapshot(), shards["b"].Requests.Snapshot()
		relabel(t, "shard-one", "b")
		waitShard(t, "shard-one", "b")
		g.Eventually(func(g Gomega) {
			expectAllInShard(g, "shard-one", "b", len(objs))
			g.Expect(cachedNamespace(g, shards["b"], "shard-one")).To(BeTrue())
			g.Expect(cachedNamespace(g, shards["a"], "shard-one")).To(BeFalse())
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(slices.Sorted(maps.Keys(shardsOfObjects(g, "shard-one")))).To(Equal(slices.Sorted(maps.Keys(objs))), "no object was added or lost")
		// Shard a's one write is the handover; shard b wrote every object once and the status.
		g.Expect(writesOf(shards["a"].Requests.Snapshot().Sub(beforeA))).To(Equal(testenv.Counts{"PATCH tenants/status": 1, "POST events": 1}))
		wantB := testenv.Counts{}
		for obj := range objs {
			resource, _, _ := strings.Cut(obj, " ")
			wantB["PATCH "+resource]++
		}
		gotB := writesOf(shards["b"].Requests.Snapshot().Sub(beforeB))
		g.Expect(gotB["PATCH tenants/status"]).To(BeNumerically(">=", 1))
		delete(gotB, "PATCH tenants/status")
		delete(gotB, "POST events")
		g.Expect(gotB).To(Equal(wantB))
	})

	t.Run("a domain a tenant of another shard serves is not taken by an older tenant listing it later", func(t *testing.T) {
		g := NewWithT(t)
		create(t, newTenant("shard-older", sharded("b")))
		waitShard(t, "shard-older", "b")
		create(t, newTenant("shard-server", sharded("a"), func(tn *tenancyv1alpha1.Tenant) {
			tn.Spec.Domains = []tenancyv1alpha1.Domain{"shop.shards.example.org"}
		}))
		waitShard(t, "shard-server", "a")
		g.Expect(namespace(t, "shard-server").Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "shop.shards.example.org"))
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "shard-older"}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"domains":["shop.shards.example.org"]}}`)))).To(Succeed())
		g.Expect(waitStalled(t, "shard-older", tenancyv1alpha1.ReasonDomainConflict)).To(ContainSubstring("held by tenant shard-server"))
		g.Expect(namespace(t, "shard-older").Annotations).NotTo(HaveKey(tenancyv1alpha1.DomainsAnnotation))
		// The tenant serving it goes: the other shard hears of it from its cache of every tenant.
		deleteTenant(t, "shard-server")
		waitShard(t, "shard-older", "b")
		g.Expect(namespace(t, "shard-older").Annotations).To(HaveKeyWithValue(tenancyv1alpha1.DomainsAnnotation, "shop.shards.example.org"))
	})

	t.Run("a shard that stops is taken over from once its lease is released", func(t *testing.T) {
		g := NewWithT(t)
		create(t, newTenant("shard-two", sharded("a")))
		create(t, newTenant("shard-four", sharded("a")))
		waitShard(t, "shard-two", "a")
		waitShard(t, "shard-four", "a")
		g.Expect(shards["a"].Stop()).To(Succeed())
		relabel(t, "shard-two", "b")
		tenant := waitShard(t, "shard-two", "b")
		g.Expect(tenant.Status.Databases).To(HaveLen(1))
		g.Eventually(func(g Gomega) {
			expectAllInShard(g, "shard-two", "b", objectCount)
		}).WithTimeout(timeout).Should(Succeed())
	})

	t.Run("a tenant archived as it is taken over loses its namespace, which the new shard's cache never held, and keeps its database", func(t *testing.T) {
		g := NewWithT(t)
		ns := opConfig.NamespaceName("shard-four")
		app := testenv.AccountOf(credentials(g, "shard-four", "app"))
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"b"}},"spec":{"state":"Archived"}}`, tenancyv1alpha1.ShardLabel)
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "shard-four"}},
			client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		waitNamespaceGone(t, ns)
		tenant := waitShard(t, "shard-four", "b")
		g.Expect(condition(tenant, tenancyv1alpha1.NamespaceReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonNamespaceRemoved))
		g.Expect(condition(tenant, tenancyv1alpha1.DatabasesReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonDatabasesKept))
		g.Expect(tenant.Status.Databases).To(HaveLen(1))
		g.Expect(dbtest.CanUse(ctx, pg.Server, app)).To(Succeed(), "the archived tenant's database is kept, and its login")
	})

	t.Run("a shard waits, writing nothing, for a running shard to hand its tenant over", func(t *testing.T) {
		g := NewWithT(t)
		// Shard c is running (its lease is held) but does not answer: it reconciled the tenant
		// and has not handed it over.
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: testenv.LeaseNamespace, Name: shard.LeaseName("c")},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("shard-c-pod"), LeaseDurationSeconds: ptr.To[int32](3600),
				RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		g.Expect(k8s.Create(ctx, lease)).To(Succeed())
		t.Cleanup(func() { _ = k8s.Delete(ctx, lease) })
		create(t, newTenant("shard-three", sharded("b")))
		waitShard(t, "shard-three", "b")
		relabel(t, "shard-three", "c")
		g.Eventually(func(g Gomega) {
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "shard-three"}, tenant)).To(Succeed())
			g.Expect(tenant.Status.HandoverTo).To(Equal(ptr.To("c")))
			g.Expect(condition(tenant, tenancyv1alpha1.ReconcilingCondition)).To(HaveField("Reason", tenancyv1alpha1.ReasonShardHandover))
		}).WithTimeout(timeout).Should(Succeed())
		// Shard c "took it over" and then hung: its record says so, and it still runs.
		g.Expect(k8s.Status().Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "shard-three"}},
			client.RawPatch(types.MergePatchType, []byte(`{"status":{"shard":"c","handoverTo":null}}`)))).To(Succeed())
		beforeB := shards["b"].Requests.Snapshot()
		relabel(t, "shard-three", "b")
		g.Consistently(func(g Gomega) {
			g.Expect(writesOf(shards["b"].Requests.Snapshot().Sub(beforeB))).To(BeEmpty())
		}).WithTimeout(3 * time.Second).Should(Succeed())
		// It did look: it read shard c's lease.
		g.Expect(shards["b"].Requests.Snapshot().Sub(beforeB)["GET leases"]).To(BeNumerically(">=", 1))
		// Once shard c is gone, a look at the tenant (here a reconcile request) takes it over.
		g.Expect(k8s.Delete(ctx, lease)).To(Succeed())
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"shard-c-gone"}}}`, tenancyv1alpha1.ReconcileRequestAnnotation)
		g.Expect(k8s.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "shard-three"}},
			client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		waitShard(t, "shard-three", "b")
	})

	t.Run("a tenant relabelled as it is created is one shard's, with one password that logs in", func(t *testing.T) {
		g := NewWithT(t)
		tn := newTenant("shard-five", sharded("b"))
		delete(tn.Labels, tenancyv1alpha1.ShardLabel)
		create(t, tn)
		relabel(t, "shard-five", "b")
		waitShard(t, "shard-five", "b")
		g.Eventually(func(g Gomega) {
			expectAllInShard(g, "shard-five", "b", objectCount)
		}).WithTimeout(timeout).Should(Succeed())
		g.Expect(dbtest.CanUse(ctx, pg.Server, testenv.AccountOf(credentials(g, "shard-five", "app")))).To(Succeed())
	})

	t.Run("a tenant goes back to the default shard by losing its label", func(t *testing.T) {
		g := NewWithT(t)
		relabel(t, "shard-one", "")
		tenant := waitShard(t, "shard-one", "")
		g.Expect(tenant.Status.Databases).To(HaveLen(1))
		g.Eventually(func(g Gomega) {
			expectAllInShard(g, "shard-one", "", objectCount)
			g.Expect(cachedNamespace(g, op, "shard-one")).To(BeTrue())
		}).WithTimeout(timeout).Should(Succeed())
	})
}
