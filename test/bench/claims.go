package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/test/testenv"
)

// claimLatency is signup as a customer sees it: claim created → Bound, with Ready spares
// available, while the pool refills what the claims take (and, with Beside, while a mass create
// runs too).
type claimLatency struct {
	N       int     `json:"n"`
	P50Ms   float64 `json:"p50Ms"`
	P90Ms   float64 `json:"p90Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	Seconds float64 `json:"fillSeconds"`
	// Beside is how many tenants a mass create made while the claims ran.
	Beside int `json:"beside,omitempty"`
	// OperatorRequests is what the operator sent while the claims ran: the binds, the claims'
	// status, and the refill (and, with Beside, the mass create's tenants).
	OperatorRequests testenv.Counts `json:"operatorRequests"`
	// Where a claim's time went, as the operator's claim controller saw it: the mean wait in
	// its queue and the mean reconcile, over every reconcile while the claims ran.
	Reconciles      int     `json:"claimReconciles"`
	MeanQueueWaitMs float64 `json:"meanQueueWaitMs"`
	MeanReconcileMs float64 `json:"meanReconcileMs"`
	// HeldWrites is how many of the operator's background writes waited for a bind while the
	// claims ran, and HeldSeconds how long in all.
	HeldWrites  int     `json:"heldWrites"`
	HeldSeconds float64 `json:"heldSeconds"`
}

// claimControllerTimes reads the claim controller's times and the writes held back for binds.
func claimControllerTimes(op *operatorProcess) (claimTimes, error) {
	families, err := op.metrics()
	if err != nil {
		return claimTimes{}, err
	}
	return claimTimes{
		wait:        testenv.SumMetric(families, "workqueue_queue_duration_seconds", map[string]string{"name": "tenantclaim"}),
		work:        testenv.SumMetric(families, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": "tenantclaim"}),
		n:           testenv.CountMetric(families, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": "tenantclaim"}),
		held:        testenv.SumMetric(families, "landlord_background_writes_held_total", nil),
		heldSeconds: testenv.SumMetric(families, "landlord_background_writes_held_seconds_total", nil),
	}, nil
}

// claimTimes is the claim controller's queue wait and reconcile time, summed, its reconcile
// count, and the background writes held back for binds.
type claimTimes struct{ wait, work, n, held, heldSeconds float64 }

func claimName(i int) string { return fmt.Sprintf("signup-%04d", i) }

// measureClaims fills a pool with n spares, then claims all of them, 5 signups at a time,
// timing each claim from its create call until a watch sees it Bound, with beside running
// meanwhile.
func measureClaims(ctx context.Context, env *testenv.Env, c client.Client, op *operatorProcess, benchRequests *testenv.RequestCounter, n int, beside func() error) (*claimLatency, error) {
	start := time.Now()
	pool := &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-pool"},
		Spec:       tenancyv1alpha1.TenantPoolSpec{Replicas: int32(n)},
	}
	if err := c.Create(ctx, pool); err != nil {
		return nil, err
	}
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return nil, err
		}
		if int(pool.Status.Ready) >= n {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return nil, fmt.Errorf("pool not filled after 10 minutes: %+v", pool.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := &claimLatency{N: n, Seconds: time.Since(start).Seconds()}

	wc, err := client.NewWithWatch(env.Admin, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return nil, err
	}
	w, err := wc.Watch(ctx, &tenancyv1alpha1.TenantClaimList{}, client.InNamespace("default"))
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var mu sync.Mutex
	created := map[string]time.Time{}
	bound := map[string]time.Duration{}
	// seen is closed for each claim once the watch sees it Bound.
	seen := map[string]chan struct{}{}
	for i := range n {
		seen[claimName(i)] = make(chan struct{})
	}
	go func() {
		for ev := range w.ResultChan() {
			claim, ok := ev.Object.(*tenancyv1alpha1.TenantClaim)
			if !ok || claim.Status.Phase != tenancyv1alpha1.ClaimBound {
				continue
			}
			now := time.Now()
			mu.Lock()
			if at, ok := created[claim.Name]; ok {
				if _, already := bound[claim.Name]; !already {
					bound[claim.Name] = now.Sub(at)
					close(seen[claim.Name])
				}
			}
			mu.Unlock()
		}
	}()

	server0, err := env.APIServerRequests(ctx)
	if err != nil {
		return nil, err
	}
	bench0 := benchRequests.Snapshot()
	times0, err := claimControllerTimes(op)
	if err != nil {
		return nil, err
	}
	besideErr := make(chan error, 1)
	go func() { besideErr <- beside() }()
	// Five customers sign up at a time: each creates a claim and waits until it is Bound
	// before the next takes its place. (Creating them all at once would measure a queue of a
	// burst, not a signup.)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range n {
			next <- i
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := claimName(i)
				mu.Lock()
				created[name] = time.Now()
				mu.Unlock()
				claim := &tenancyv1alpha1.TenantClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
					Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: pool.Name, Organization: "Signup " + name},
				}
				if err := c.Create(ctx, claim); err != nil {
					errs <- fmt.Errorf("creating claim %s: %w", name, err)
					return
				}
				select {
				case <-seen[name]:
				case <-time.After(time.Minute):
					errs <- fmt.Errorf("claim %s not Bound after a minute", name)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := <-besideErr; err != nil {
		return nil, fmt.Errorf("beside the claims: %w", err)
	}
	server1, err := env.APIServerRequests(ctx)
	if err != nil {
		return nil, err
	}
	times1, err := claimControllerTimes(op)
	if err != nil {
		return nil, err
	}
	if res.Reconciles = int(times1.n - times0.n); res.Reconciles > 0 {
		res.MeanQueueWaitMs = (times1.wait - times0.wait) / float64(res.Reconciles) * 1000
		res.MeanReconcileMs = (times1.work - times0.work) / float64(res.Reconciles) * 1000
	}
	res.HeldWrites, res.HeldSeconds = int(times1.held-times0.held), times1.heldSeconds-times0.heldSeconds
	res.OperatorRequests, _ = splitControlPlane(server1.Sub(server0).Sub(benchRequests.Snapshot().Sub(bench0)))
	var ms []float64
	for _, d := range bound {
		ms = append(ms, float64(d.Microseconds())/1000)
	}
	sort.Float64s(ms)
	at := func(p int) float64 { return ms[min(len(ms)-1, len(ms)*p/100)] }
	res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs = at(50), at(90), at(99), ms[len(ms)-1]
	return res, nil
}
