package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func newPool(name string, replicas int32) *tenancyv1alpha1.TenantPool {
	return &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.TenantPoolSpec{
			Replicas: replicas,
			Template: tenancyv1alpha1.TenantTemplate{Labels: map[string]string{"plan": "standard"}},
			Claims:   tenancyv1alpha1.TenantPoolClaims{AllowedLabels: []tenancyv1alpha1.AllowedClaimLabel{{Key: "region"}}},
		},
	}
}

// createPool creates a pool and, when the test ends, deletes it and every tenant it made.
func createPool(t *testing.T, pool *tenancyv1alpha1.TenantPool) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Expect(k8s.Create(ctx, pool)).To(Succeed())
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, pool)
		deleteTenants(t, poolTenantNames(pool.Name)...)
		NewWithT(t).Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pool), &tenancyv1alpha1.TenantPool{}))
		}).WithTimeout(timeout).Should(BeTrue())
	})
}

// poolTenantNames are the names of every tenant a pool made, spare or allocated.
func poolTenantNames(pool string) []string {
	tenants := &tenancyv1alpha1.TenantList{}
	_ = k8s.List(context.Background(), tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: pool})
	names := make([]string, 0, len(tenants.Items))
	for _, tenant := range tenants.Items {
		names = append(names, tenant.Name)
	}
	return names
}

// poolTenants returns a pool's unallocated spares and its allocated tenants.
func poolTenants(g Gomega, pool string) (spares, allocated []tenancyv1alpha1.Tenant) {
	tenants := &tenancyv1alpha1.TenantList{}
	g.Expect(k8s.List(context.Background(), tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: pool})).To(Succeed())
	for _, t := range tenants.Items {
		switch {
		case t.Labels[tenancyv1alpha1.AllocatedLabel] == "true":
			allocated = append(allocated, t)
		case t.DeletionTimestamp.IsZero() && metav1.GetControllerOf(&t) != nil:
			spares = append(spares, t)
		}
	}
	return spares, allocated
}

// waitPool waits until the pool reports exactly ready Ready spares and allocated tenants.
func waitPool(t *testing.T, name string, ready, allocated int32) *tenancyv1alpha1.TenantPool {
	t.Helper()
	pool := &tenancyv1alpha1.TenantPool{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: name}, pool)).To(Succeed())
		g.Expect(pool.Status.Ready).To(Equal(ready), "status: %+v", pool.Status)
		g.Expect(pool.Status.Provisioning).To(BeZero(), "status: %+v", pool.Status)
		g.Expect(pool.Status.Allocated).To(Equal(allocated), "status: %+v", pool.Status)
		spares, _ := poolTenants(g, name)
		g.Expect(spares).To(HaveLen(int(ready)))
	}).WithTimeout(2 * timeout).Should(Succeed())
	return pool
}

func newClaim(name, pool string) *tenancyv1alpha1.TenantClaim {
	return &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: tenancyv1alpha1.TenantClaimSpec{
			Pool: pool, Organization: "Customer " + name, Email: "ops@" + name + ".example.com",
			Labels: map[string]string{"region": "eu"},
		},
	}
}

func createClaim(t *testing.T, claim *tenancyv1alpha1.TenantClaim) {
	t.Helper()
	NewWithT(t).Expect(k8s.Create(context.Background(), claim)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), claim) })
}

func waitBound(t *testing.T, name string) *tenancyv1alpha1.TenantClaim {
	t.Helper()
	claim := &tenancyv1alpha1.TenantClaim{}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, claim)).To(Succeed())
		g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimBound), "status: %+v", claim.Status)
	}).WithTimeout(timeout).Should(Succeed())
	return claim
}

func TestTenantPool(t *testing.T) {
	ctx := context.Background()
	createPool(t, newPool("pool-a", 3))

	t.Run("the pool fills with Ready spares made from its template", func(t *testing.T) {
		pool := waitPool(t, "pool-a", 3, 0)
		g := NewWithT(t)
		g.Expect(meta.IsStatusConditionTrue(pool.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		spares, _ := poolTenants(g, "pool-a")
		for _, s := range spares {
			g.Expect(s.Labels).To(HaveKeyWithValue("plan", "standard"))
			g.Expect(metav1.IsControlledBy(&s, pool)).To(BeTrue())
		}
	})

	var bound string
	t.Run("a claim binds a Ready spare and stamps the customer on it without touching its spec", func(t *testing.T) {
		createClaim(t, newClaim("acme-signup", "pool-a"))
		claim := waitBound(t, "acme-signup")
		bound = claim.Status.Tenant
		g := NewWithT(t)
		g.Expect(claim.Status.Namespace).To(Equal(opConfig.NamespaceName(bound)))
		g.Expect(claim.Status.BoundTime).NotTo(BeNil())
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: bound}, tenant)).To(Succeed())
		g.Expect(tenant.Labels).To(HaveKeyWithValue(tenancyv1alpha1.AllocatedLabel, "true"))
		g.Expect(tenant.Labels).To(HaveKeyWithValue("region", "eu"))
		g.Expect(tenant.OrganizationName()).To(Equal("Customer acme-signup"))
		g.Expect(tenant.ContactEmail()).To(Equal("ops@acme-signup.example.com"))
		g.Expect(tenant.Spec.Organization).To(BeEmpty())
		g.Expect(tenant.OwnerReferences).To(BeEmpty())
	})

	t.Run("the pool refills what was allocated", func(t *testing.T) {
		waitPool(t, "pool-a", 3, 1)
	})

	t.Run("scaling down deletes only unallocated spares", func(t *testing.T) {
		g := NewWithT(t)
		pool := &tenancyv1alpha1.TenantPool{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "pool-a"}, pool)).To(Succeed())
		patch := client.MergeFrom(pool.DeepCopy())
		pool.Spec.Replicas = 1
		g.Expect(k8s.Patch(ctx, pool, patch)).To(Succeed())
		waitPoolTenants(t, "pool-a", 1, 1)
		waitPool(t, "pool-a", 1, 1)
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: bound}, tenant)).To(Succeed())
		g.Expect(tenant.DeletionTimestamp).To(BeNil())
	})

	t.Run("deleting the pool deletes its spares and keeps allocated tenants", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8s.Delete(ctx, &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: "pool-a"}})).To(Succeed())
		waitPoolTenants(t, "pool-a", 0, 1)
		g.Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "pool-a"}, &tenancyv1alpha1.TenantPool{}))
		}).WithTimeout(timeout).Should(BeTrue())
		spares, allocated := poolTenants(g, "pool-a")
		g.Expect(spares).To(BeEmpty())
		g.Expect(allocated).To(HaveLen(1))
	})
}

// waitPoolTenants waits until exactly spares unallocated and allocated allocated tenants carry
// the pool's label, none of them being deleted: a spare the pool deleted must be gone for good,
// not merely on its way out.
func waitPoolTenants(t *testing.T, pool string, spares, allocated int) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		tenants := &tenancyv1alpha1.TenantList{}
		g.Expect(k8s.List(context.Background(), tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: pool})).To(Succeed())
		var free, taken int
		for _, tenant := range tenants.Items {
			g.Expect(tenant.DeletionTimestamp).To(BeNil(), "tenant %s is being deleted", tenant.Name)
			if tenant.Labels[tenancyv1alpha1.AllocatedLabel] == "true" {
				taken++
			} else {
				free++
			}
		}
		g.Expect(free).To(Equal(spares), "unallocated tenants")
		g.Expect(taken).To(Equal(allocated), "allocated tenants")
	}).WithTimeout(timeout).Should(Succeed())
}

// Fifty signups at once against twenty Ready spares: exactly twenty bind, to twenty different
// tenants, and the rest wait until the pool has refilled.
func TestConcurrentClaimsNeverShareASpare(t *testing.T) {
	// Its claims are told from others in default by their pool.
	t.Parallel()
	ctx := context.Background()
	const spares, claims = 20, 50
	pool := newPool("pool-rush", spares)
	createPool(t, pool)
	waitPool(t, "pool-rush", spares, 0)

	// New spares are made to wait: they pin a component version not yet published.
	g := NewWithT(t)
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
	patch := client.MergeFrom(pool.DeepCopy())
	pool.Spec.Template.Spec.Components = []tenancyv1alpha1.Component{{Name: "rush", Version: "1.0.0"}}
	g.Expect(k8s.Patch(ctx, pool, patch)).To(Succeed())

	var wg sync.WaitGroup
	for i := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claim := newClaim(fmt.Sprintf("rush-%02d", i), "pool-rush")
			if err := k8s.Create(ctx, claim); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for i := range claims {
			_ = k8s.Delete(ctx, newClaim(fmt.Sprintf("rush-%02d", i), "pool-rush"))
		}
	})

	phases := func(g Gomega) (bound map[string]string, pending int) {
		list := &tenancyv1alpha1.TenantClaimList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace("default"))).To(Succeed())
		bound = map[string]string{}
		for _, c := range list.Items {
			if c.Spec.Pool != pool.Name {
				continue
			}
			switch c.Status.Phase {
			case tenancyv1alpha1.ClaimBound:
				g.Expect(bound).NotTo(HaveKey(c.Status.Tenant), "tenant %s bound twice", c.Status.Tenant)
				bound[c.Status.Tenant] = c.Name
			case tenancyv1alpha1.ClaimPending:
				if c.Status.Reason != "" {
					pending++
				}
			}
		}
		return bound, pending
	}

	t.Run("twenty claims bind twenty distinct spares and thirty wait", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			bound, pending := phases(g)
			g.Expect(bound).To(HaveLen(spares))
			g.Expect(pending).To(Equal(claims - spares))
		}).WithTimeout(2 * timeout).Should(Succeed())
		// And it stays that way while no new spare is Ready.
		NewWithT(t).Consistently(func(g Gomega) {
			bound, _ := phases(g)
			g.Expect(bound).To(HaveLen(spares))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	t.Run("the waiting claims bind as soon as the pool has refilled", func(t *testing.T) {
		publish(t, "rush", "1.0.0", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rush\n", "")
		NewWithT(t).Eventually(func(g Gomega) {
			bound, pending := phases(g)
			g.Expect(bound).To(HaveLen(claims))
			g.Expect(pending).To(BeZero())
		}).WithTimeout(4 * timeout).Should(Succeed())
	})
}

// The shipped pool sample fills, and its claim binds.
func TestPoolSampleBindsItsClaim(t *testing.T) {
	t.Cleanup(func() {
		deleteTenants(t, poolTenantNames("standard")...)
	})
	applySamples(t, "pool", "pool.yaml", "claim.yaml")
	claim := waitBound(t, "initrode-signup")
	waitPool(t, "standard", 3, 1)
	got := waitReady(t, claim.Status.Tenant)
	NewWithT(t).Expect(got.OrganizationName()).To(Equal("Initrode"))
}

// Claims racing a scale-down or a pool deletion: a claim that binds a spare keeps it, whatever
// the pool does at the same moment, and one that finds no spare waits and says why.
func TestABoundTenantSurvivesAPoolShrinkingAtTheSameMoment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, shrink := range []string{"scale-to-zero", "delete"} {
		t.Run("claims racing a pool "+shrink+" keep the tenants they bound", func(t *testing.T) {
			name := "race-" + shrink[:5]
			createPool(t, newPool(name, 6))
			waitPool(t, name, 6, 0)

			// One claim binds before the race, and the pool refills: whichever of the shrink and
			// the racing claims comes first, there is a bound tenant for the shrink to spare.
			first := newClaim(name+"-first", name)
			createClaim(t, first)
			firstTenant := waitBound(t, first.Name).Status.Tenant
			waitPool(t, name, 6, 1)

			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				pool := &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
				var err error
				if shrink == "delete" {
					err = k8s.Delete(ctx, pool)
				} else {
					err = k8s.Patch(ctx, pool, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`)))
				}
				if err != nil {
					t.Errorf("shrinking the pool: %v", err)
				}
			}()
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := k8s.Create(ctx, newClaim(fmt.Sprintf("%s-%d", name, i), name)); err != nil {
						t.Errorf("creating a claim: %v", err)
					}
				}()
			}
			wg.Wait()
			t.Cleanup(func() {
				for i := range 6 {
					_ = k8s.Delete(ctx, newClaim(fmt.Sprintf("%s-%d", name, i), name))
				}
			})

			// Every claim settles, Bound or Pending with a reason, and then stays as it is. Settled
			// means the shrink is over too: while a spare is left, a Pending claim may yet bind it.
			g := NewWithT(t)
			var settled map[string]string
			g.Eventually(func(g Gomega) {
				tenants := &tenancyv1alpha1.TenantList{}
				g.Expect(k8s.List(ctx, tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: name})).To(Succeed())
				for _, tn := range tenants.Items {
					g.Expect(tn.Labels[tenancyv1alpha1.AllocatedLabel] == "true" || tn.DeletionTimestamp != nil).To(BeTrue(), "spare %s is still offered", tn.Name)
				}
				settled = claimOutcomes(g, name, 7)
			}).WithTimeout(timeout).Should(Succeed())
			g.Expect(settled).To(HaveKeyWithValue(first.Name, firstTenant), "the claim bound before the race lost its tenant")
			racersBound := 0
			for claim, tenant := range settled {
				if claim != first.Name && tenant != "" {
					racersBound++
				}
			}
			t.Logf("%d of 6 racing claims bound before the pool shrank", racersBound)
			g.Consistently(func(g Gomega) {
				g.Expect(claimOutcomes(g, name, 7)).To(Equal(settled))
			}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		})
	}
}

// claimOutcomes expects the given number of claims on the pool, every one settled: Bound to a
// live tenant allocated to it and to no other claim, or Pending with the reason it found no
// spare. It returns each claim's tenant, empty for a Pending claim.
func claimOutcomes(g Gomega, pool string, claims int) map[string]string {
	ctx := context.Background()
	list := &tenancyv1alpha1.TenantClaimList{}
	g.Expect(k8s.List(ctx, list, client.InNamespace("default"))).To(Succeed())
	outcomes := map[string]string{}
	boundTo := map[string]string{}
	for _, c := range list.Items {
		if c.Spec.Pool != pool {
			continue
		}
		switch c.Status.Phase {
		case tenancyv1alpha1.ClaimBound:
			g.Expect(c.Status.Tenant).NotTo(BeEmpty(), "claim %s is Bound to no tenant", c.Name)
			g.Expect(boundTo).NotTo(HaveKey(c.Status.Tenant), "tenant %s is bound to two claims", c.Status.Tenant)
			boundTo[c.Status.Tenant] = c.Name
			tenant := &tenancyv1alpha1.Tenant{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Name: c.Status.Tenant}, tenant)).To(Succeed(), "claim %s is bound to a deleted tenant", c.Name)
			g.Expect(tenant.DeletionTimestamp).To(BeNil(), "claim %s is bound to a tenant being deleted", c.Name)
			g.Expect(tenant.Labels).To(HaveKeyWithValue(tenancyv1alpha1.AllocatedLabel, "true"), "tenant %s of claim %s", tenant.Name, c.Name)
			g.Expect(tenant.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ClaimUIDLabel, string(c.UID)), "tenant %s is not allocated to claim %s", tenant.Name, c.Name)
		case tenancyv1alpha1.ClaimPending:
			g.Expect(c.Status.Tenant).To(BeEmpty(), "claim %s is Pending with a tenant", c.Name)
			g.Expect(c.Status.Reason).To(BeElementOf(tenancyv1alpha1.ReasonNoReadySpare, tenancyv1alpha1.ReasonPoolNotFound), "claim %s", c.Name)
		default:
			g.Expect(c.Status.Phase).To(BeElementOf(tenancyv1alpha1.ClaimBound, tenancyv1alpha1.ClaimPending), "claim %s has not settled", c.Name)
		}
		outcomes[c.Name] = c.Status.Tenant
	}
	g.Expect(outcomes).To(HaveLen(claims), "claims on pool %s", pool)
	return outcomes
}

// A tenant labeled with a pool's name that the pool did not create is not the pool's: it is
// neither counted as a spare nor deleted when the pool shrinks. Landlord's label policy keeps
// anyone but the operator from setting the label; this is the second line, for a label set
// before the policy was installed.
func TestAPoolLabelSetByHandDoesNotMakeASpare(t *testing.T) {
	ctx := context.Background()
	labeled := newTenant("hand-labeled", func(t *tenancyv1alpha1.Tenant) {
		t.Labels = map[string]string{tenancyv1alpha1.PoolLabel: "pool-hand"}
	})
	NewWithT(t).Expect(operatorClient(t).Create(ctx, labeled)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, labeled.Name) })
	waitReady(t, labeled.Name)
	createPool(t, newPool("pool-hand", 1))
	waitPool(t, "pool-hand", 1, 0)

	g := NewWithT(t)
	pool := &tenancyv1alpha1.TenantPool{ObjectMeta: metav1.ObjectMeta{Name: "pool-hand"}}
	g.Expect(k8s.Patch(ctx, pool, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pool), pool)).To(Succeed())
		g.Expect(pool.Status.Ready).To(BeZero())
	}).WithTimeout(timeout).Should(Succeed())
	got := &tenancyv1alpha1.Tenant{}
	g.Consistently(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "hand-labeled"}, got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).To(BeNil())
	}).WithTimeout(2 * time.Second).Should(Succeed())
}
