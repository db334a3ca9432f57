package operator_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/test/testenv"
)

// writesByClient counts the operator's writes by the client that sent them (its user agent),
// verb, resource and namespace.
type writesByClient struct {
	mu     sync.Mutex
	counts map[string]int
}

func (w *writesByClient) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			agent, _, _ := strings.Cut(req.Header.Get("User-Agent"), "/")
			key := fmt.Sprintf("%s %s %s %s", agent, req.Method, testenv.ResourceOf(req.URL.Path), namespaceOf(req.URL.Path))
			w.mu.Lock()
			w.counts[key]++
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// since is what was counted after before was taken.
func (w *writesByClient) since(before map[string]int) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, n := range w.counts {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (w *writesByClient) snapshot() map[string]int { return w.since(nil) }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// namespaceOf is the namespace in an API path, or "-" for a cluster-scoped one.
func namespaceOf(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			return parts[i+1]
		}
	}
	return "-"
}

// The writes a change or a customer waits on go through the operator's urgent client, whose
// rate limits are not the ones creating tenants or refilling a pool use up; everything else
// stays on the main client.
func TestUrgentWritesGoThroughTheirOwnClient(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env, store := sharedEnv(t)
	writes := &writesByClient{counts: map[string]int{}}
	cfg := config.Default()
	// A background write waits for a bind as long as it may: the subtests look at what waited.
	cfg.Client.Yield.MaxWait.Duration = config.MaxYieldWait
	op, err := env.StartOperator(cfg, store, writes.Wrap)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = op.Stop() })

	tenants := []string{"urgent-0", "urgent-1", "urgent-2"}
	createTenants(t, env, tenants...)
	share := func(g Gomega, value string) {
		g.Expect(store.Put(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Secrets.TemplateNamespace, Name: "api-key",
				Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"token": []byte(value)},
		})).To(Succeed())
		op.TemplateSync.Trigger()
		g.Eventually(func(g Gomega) {
			for _, name := range tenants {
				s := &corev1.Secret{}
				g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Namespace: cfg.NamespaceName(name), Name: "api-key"}, s)).To(Succeed())
				g.Expect(string(s.Data["token"])).To(Equal(value))
			}
		}).WithTimeout(time.Minute).Should(Succeed())
		g.Eventually(op.Idle).WithTimeout(time.Minute).Should(BeTrue())
	}
	share(g, "v1")

	t.Run("a shared-secret change writes each tenant's copy through the urgent client, N+1 secrets in all", func(t *testing.T) {
		g := NewWithT(t)
		before := writes.snapshot()
		share(g, "v2")
		secrets := map[string]int{}
		for k, n := range writes.since(before) {
			if strings.Contains(k, " secrets ") {
				secrets[k] = n
			}
		}
		want := map[string]int{
			// The template namespace's own copy is the store's mirror, written by the sync.
			operator.UserAgent + " PATCH secrets " + cfg.Secrets.TemplateNamespace: 1,
		}
		for _, name := range tenants {
			want[operator.UrgentUserAgent+" PATCH secrets "+cfg.NamespaceName(name)] = 1
		}
		g.Expect(secrets).To(Equal(want))
	})

	t.Run("a claim is bound through the urgent client", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.AdminClient.Create(ctx, &tenancyv1alpha1.TenantPool{
			ObjectMeta: metav1.ObjectMeta{Name: "urgent"},
			Spec:       tenancyv1alpha1.TenantPoolSpec{Replicas: 1},
		})).To(Succeed())
		g.Eventually(func(g Gomega) {
			pool := &tenancyv1alpha1.TenantPool{}
			g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: "urgent"}, pool)).To(Succeed())
			g.Expect(pool.Status.Ready).To(BeEquivalentTo(1))
		}).WithTimeout(time.Minute).Should(Succeed())
		g.Eventually(op.Idle).WithTimeout(time.Minute).Should(BeTrue())
		before := writes.snapshot()
		claim := &tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "signup"},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "urgent", Organization: "Globex", Email: "ops@globex.example.com"},
		}
		g.Expect(env.AdminClient.Create(ctx, claim)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(env.AdminClient.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
			g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimBound))
		}).WithTimeout(time.Minute).Should(Succeed())
		urgent := map[string]int{}
		for k, n := range writes.since(before) {
			if strings.HasPrefix(k, operator.UrgentUserAgent+" ") {
				urgent[k] = n
			}
		}
		// The bind is the patch of the spare, then the claim's status; the refill is the main
		// client's.
		g.Expect(urgent).To(Equal(map[string]int{
			operator.UrgentUserAgent + " PATCH tenants -":                   1,
			operator.UrgentUserAgent + " PATCH tenantclaims/status default": 1,
		}))
	})

	t.Run("while a claim binds, the main client's writes wait and the bind does not", func(t *testing.T) {
		g := NewWithT(t)
		// The spare the last claim took is replaced; this claim takes the new one. The pool's
		// status is not the proof: until the pool sees the last bind, it still counts the spare
		// that bind took, and a refill started once the gate is held waits on every write.
		g.Eventually(func(g Gomega) {
			spares := &tenancyv1alpha1.TenantList{}
			g.Expect(env.AdminClient.List(ctx, spares, client.MatchingLabels{tenancyv1alpha1.PoolLabel: "urgent"})).To(Succeed())
			ready := 0
			for i := range spares.Items {
				if t := &spares.Items[i]; t.IsUnallocatedSpare() && t.IsReadySpare() {
					ready++
				}
			}
			g.Expect(ready).To(Equal(1))
		}).WithTimeout(time.Minute).Should(Succeed())
		g.Eventually(op.Idle).WithTimeout(time.Minute).Should(BeTrue())
		held0 := metric(g, "landlord_background_writes_held_total")

		// A bind under way, with as many background writes in flight as the gate lets through
		// beside one (the default, 4): every further background write waits. A write that was
		// in flight before has ended, and been counted, once the last of these is taken.
		release := op.Gate.Urgent()
		defer release()
		var inFlight []func()
		for range cfg.Client.Yield.InFlight {
			inFlight = append(inFlight, op.Gate.Background(ctx))
		}
		defer func() {
			for _, done := range inFlight {
				done()
			}
		}()
		before := writes.snapshot()
		createTenants(t, env, "created-during-a-bind")
		// The new tenant's first write (its status) waits.
		g.Eventually(func() float64 { return metric(g, "landlord_background_writes_waiting") }).
			WithTimeout(time.Minute).Should(BeNumerically(">=", 1))
		claim := &tenancyv1alpha1.TenantClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "signup-beside"},
			Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "urgent"},
		}
		g.Expect(env.AdminClient.Create(ctx, claim)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(env.AdminClient.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
			g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimBound))
		}).WithTimeout(time.Minute).Should(Succeed())
		for k := range writes.since(before) {
			g.Expect(k).To(HavePrefix(operator.UrgentUserAgent+" "), "a background write went ahead of a bind under way")
		}

		// The tenant created meanwhile waited (its first write is its status), and goes on once
		// the bind is done.
		tenant := &tenancyv1alpha1.Tenant{}
		g.Expect(env.AdminClient.Get(ctx, client.ObjectKey{Name: "created-during-a-bind"}, tenant)).To(Succeed())
		g.Expect(tenant.Status.Conditions).To(BeEmpty())
		release()
		g.Eventually(func(g Gomega) {
			g.Expect(env.AdminClient.Get(ctx, client.ObjectKeyFromObject(tenant), tenant)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(tenant.Status.Conditions, tenancyv1alpha1.ReadyCondition)).To(BeTrue())
		}).WithTimeout(time.Minute).Should(Succeed())
		g.Expect(metric(g, "landlord_background_writes_held_total")).To(BeNumerically(">", held0))
	})
}

// metric is a metric of the process's registry, summed over its series.
func metric(g Gomega, name string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	return testenv.SumMetric(families, name, nil)
}
