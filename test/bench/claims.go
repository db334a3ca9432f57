package main

import (
	"context"
	"fmt"
	"os"
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
}

// measureClaims fills a pool with n spares, then claims all of them, 5 at a time, timing each
// claim from its create call until a watch sees it Bound, with beside running meanwhile.
func measureClaims(ctx context.Context, env *testenv.Env, c client.Client, benchRequests *testenv.RequestCounter, n int, beside func() error) (*claimLatency, error) {
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
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			claim, ok := ev.Object.(*tenancyv1alpha1.TenantClaim)
			if !ok || claim.Status.Phase != tenancyv1alpha1.ClaimBound {
				continue
			}
			now := time.Now()
			mu.Lock()
			if at, ok := created[claim.Name]; ok {
				if _, seen := bound[claim.Name]; !seen {
					bound[claim.Name] = now.Sub(at)
				}
			}
			finished := len(bound) == n
			mu.Unlock()
			if finished {
				return
			}
		}
	}()

	server0, err := env.APIServerRequests(ctx)
	if err != nil {
		return nil, err
	}
	bench0 := benchRequests.Snapshot()
	besideErr := make(chan error, 1)
	go func() { besideErr <- beside() }()
	sem := make(chan struct{}, 5)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			name := fmt.Sprintf("signup-%04d", i)
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			claim := &tenancyv1alpha1.TenantClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
				Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: pool.Name, Organization: "Signup " + name},
			}
			if err := c.Create(ctx, claim); err != nil {
				fmt.Fprintln(os.Stderr, "creating claim:", err)
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		return nil, fmt.Errorf("claims not all Bound after 5 minutes")
	}
	if err := <-besideErr; err != nil {
		return nil, fmt.Errorf("beside the claims: %w", err)
	}
	server1, err := env.APIServerRequests(ctx)
	if err != nil {
		return nil, err
	}
	res.OperatorRequests, _ = splitControlPlane(server1.Sub(server0).Sub(serverVerbs(benchRequests.Snapshot().Sub(bench0))))
	var ms []float64
	for _, d := range bound {
		ms = append(ms, float64(d.Microseconds())/1000)
	}
	sort.Float64s(ms)
	at := func(p int) float64 { return ms[min(len(ms)-1, len(ms)*p/100)] }
	res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs = at(50), at(90), at(99), ms[len(ms)-1]
	return res, nil
}
