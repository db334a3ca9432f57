// Command bench measures Landlord against a real control plane: N tenants created until all are
// Ready (with -postgres, each with its own databases on a real PostgreSQL server), then a forced
// no-op resync of all N. Request counts come from the API server's own
// metrics (apiserver_request_total), with the benchmark's own requests counted separately and
// taken out, so what is left is the operator's.
//
//	go run ./test/bench -tenants 200
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

type phase struct {
	Name        string         `json:"name"`
	Seconds     float64        `json:"seconds"`
	Server      testenv.Counts `json:"serverRequests"`
	Bench       testenv.Counts `json:"benchRequests"`
	Operator    testenv.Counts `json:"operatorRequests"`
	OperatorAll int            `json:"operatorRequestsTotal"`
}

type report struct {
	Tenants          int     `json:"tenants"`
	ObjectsPerTenant int     `json:"objectsPerTenant"`
	QPS              float32 `json:"qps"`
	Concurrency      int     `json:"maxConcurrentReconciles"`
	Phases           []phase `json:"phases"`
	HeapAfterGCMiB   float64 `json:"heapAfterGCMiB"`
	CPUs             int     `json:"cpus"`
	// PostgresPerTenant is how many PostgreSQL databases each tenant has, on one real server.
	PostgresPerTenant int `json:"postgresPerTenant"`
	// Component is whether each tenant runs a component rendering a ConfigMap and a Service.
	Component bool `json:"component"`
	// Claims is the signup latency: claim created → Bound, with Ready spares available.
	Claims *claimLatency `json:"claims,omitempty"`
}

type claimLatency struct {
	N       int     `json:"n"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	Seconds float64 `json:"fillSeconds"`
}

func main() {
	tenants := flag.Int("tenants", 200, "Tenants to create.")
	qps := flag.Float64("qps", 0, "Operator client QPS (burst is twice this); the configured default when 0.")
	concurrency := flag.Int("concurrency", 0, "MaxConcurrentReconciles; the configured default when 0.")
	jsonOut := flag.String("json", "", "Also write the report as JSON to this file.")
	postgres := flag.Int("postgres", 0, "PostgreSQL databases per tenant, on a real server the benchmark starts.")
	withComponent := flag.Bool("component", false, "Give each tenant a component rendering a ConfigMap and a Service.")
	claims := flag.Int("claims", 0, "Fill a pool with this many spares, then claim them all and report claim → Bound latency.")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	if err := run(*tenants, float32(*qps), *concurrency, *postgres, *withComponent, *claims, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(n int, qps float32, concurrency, postgres int, withComponent bool, claims int, jsonOut string) error {
	ctx := context.Background()
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()

	cfg := config.Default()
	if qps > 0 {
		cfg.Client.QPS, cfg.Client.Burst = qps, int(2*qps)
	}
	if concurrency > 0 {
		cfg.Controller.MaxConcurrentReconciles = concurrency
	}
	storeDir, err := os.MkdirTemp("", "landlord-bench-store-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(storeDir)
	store, err := secret.NewFileStore(storeDir, storeDir+"/key.json")
	if err != nil {
		return err
	}
	if postgres > 0 {
		pg, err := dbtest.StartPostgres()
		if err != nil {
			return err
		}
		defer pg.Close()
		if err := registerServer(ctx, env.AdminClient, cfg, pg); err != nil {
			return err
		}
	}
	op, err := env.StartOperator(cfg, store)
	if err != nil {
		return err
	}
	defer func() { _ = op.Stop() }()

	benchRequests := testenv.NewRequestCounter()
	benchCfg := *env.Admin
	benchCfg.QPS, benchCfg.Burst = 1000, 2000
	benchCfg.Wrap(benchRequests.Wrap)
	c, err := client.New(&benchCfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		return err
	}

	rep := report{Tenants: n, QPS: cfg.Client.QPS, Concurrency: cfg.Controller.MaxConcurrentReconciles, CPUs: runtime.NumCPU(), PostgresPerTenant: postgres}
	sample := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	// Every tenant also gets one shared secret copied from the template namespace, and one
	// credentials Secret per database.
	rep.ObjectsPerTenant = len(resources.Build(sample, &cfg)) + 1 + postgres
	rep.Component = withComponent
	if withComponent {
		rep.ObjectsPerTenant += 2
		if err := c.Create(ctx, benchComponent()); err != nil {
			return err
		}
	}
	if err := putShared(ctx, store, cfg, "v1"); err != nil {
		return err
	}
	op.TemplateSync.Trigger()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%05d", i)
	}

	measure := func(name string, work func() error) error {
		server0, err := env.APIServerRequests(ctx)
		if err != nil {
			return err
		}
		bench0, op0 := benchRequests.Snapshot(), op.Requests.Snapshot()
		start := time.Now()
		if err := work(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		elapsed := time.Since(start)
		server1, err := env.APIServerRequests(ctx)
		if err != nil {
			return err
		}
		server := server1.Sub(server0)
		bench := benchRequests.Snapshot().Sub(bench0)
		opCounts := op.Requests.Snapshot().Sub(op0)
		rep.Phases = append(rep.Phases, phase{
			Name: name, Seconds: elapsed.Seconds(), Server: server, Bench: bench,
			Operator: opCounts, OperatorAll: opCounts.Total(),
		})
		return nil
	}

	fmt.Fprintf(os.Stderr, "creating %d tenants...\n", n)
	if err := measure("create N tenants until all Ready", func() error {
		if err := createAll(ctx, c, names, postgres, withComponent); err != nil {
			return err
		}
		if err := waitAllReady(ctx, c, n); err != nil {
			return err
		}
		return waitAllCopies(ctx, c, n, "v1")
	}); err != nil {
		return err
	}
	waitIdle(op)

	fmt.Fprintf(os.Stderr, "forcing a resync of %d unchanged tenants...\n", n)
	if err := measure("forced resync of N unchanged tenants", func() error {
		before := op.Reconciles()
		for _, name := range names {
			op.Resync <- event.GenericEvent{Object: &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}}
		}
		for op.Reconciles()-before < n {
			time.Sleep(10 * time.Millisecond)
		}
		waitIdle(op)
		return nil
	}); err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "changing one shared secret...\n")
	if err := measure("one shared secret change until present in all N namespaces", func() error {
		if err := putShared(ctx, store, cfg, "v2"); err != nil {
			return err
		}
		op.TemplateSync.Trigger()
		if err := waitAllCopies(ctx, c, n, "v2"); err != nil {
			return err
		}
		waitIdle(op)
		return nil
	}); err != nil {
		return err
	}

	if claims > 0 {
		fmt.Fprintf(os.Stderr, "filling a pool with %d spares and claiming them...\n", claims)
		if rep.Claims, err = measureClaims(ctx, env, c, claims); err != nil {
			return err
		}
	}

	runtime.GC()
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	rep.HeapAfterGCMiB = float64(mem.HeapAlloc) / (1 << 20)

	printMarkdown(os.Stdout, rep)
	if jsonOut != "" {
		data, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(jsonOut, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

const sharedName = "bench-shared"

// measureClaims fills a pool with n spares, then claims all of them, 5 at a time, timing each
// claim from its create call until a watch sees it Bound.
func measureClaims(ctx context.Context, env *testenv.Env, c client.Client, n int) (*claimLatency, error) {
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

	wc, err := client.NewWithWatch(env.Admin, client.Options{Scheme: operator.Scheme()})
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
	var ms []float64
	for _, d := range bound {
		ms = append(ms, float64(d.Microseconds())/1000)
	}
	sort.Float64s(ms)
	res.P50Ms = ms[len(ms)/2]
	res.P99Ms = ms[min(len(ms)-1, (len(ms)*99)/100)]
	res.MaxMs = ms[len(ms)-1]
	return res, nil
}

// benchComponent renders objects that are Ready as soon as they exist, so the benchmark measures
// Landlord rather than a workload controller the test control plane does not run.
func benchComponent() *tenancyv1alpha1.ComponentTemplate {
	return &tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-web-1.0.0"},
		Spec: tenancyv1alpha1.ComponentTemplateSpec{
			Component: "bench-web", Version: "1.0.0",
			Manifests: `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  tenant: {{ .Tenant.Name | quote }}
  version: {{ .Component.Version | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
    - port: 80
      targetPort: 8080
`,
		},
	}
}

// registerServer makes a started PostgreSQL server a DatabaseServer, Ready before the operator
// starts placing tenants on it.
func registerServer(ctx context.Context, c client.Client, cfg config.Config, pg *dbtest.Instance) error {
	ns := cfg.Databases.CredentialsNamespace
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench-pg-admin"},
		StringData: map[string]string{"username": pg.Server.AdminUser, "password": pg.Server.AdminPassword},
	}); err != nil {
		return err
	}
	return c.Create(ctx, &tenancyv1alpha1.DatabaseServer{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-pg"},
		Spec: tenancyv1alpha1.DatabaseServerSpec{
			Engine: tenancyv1alpha1.EnginePostgres, Host: pg.Server.Host, Port: pg.Server.Port,
			TLS: tenancyv1alpha1.DatabaseTLSMode(pg.Server.TLS), AdminCredentials: tenancyv1alpha1.SecretReference{Name: "bench-pg-admin"},
		},
	})
}

func putShared(ctx context.Context, store secret.Store, cfg config.Config, value string) error {
	return store.Put(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Secrets.TemplateNamespace, Name: sharedName,
			Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
		Data: map[string][]byte{"token": []byte(value)},
	})
}

// waitAllCopies lists tenant copies of the shared secret every 100ms until n hold value.
func waitAllCopies(ctx context.Context, c client.Client, n int, value string) error {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		list := &corev1.SecretList{}
		if err := c.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.SharedCopyLabel: "true"}); err != nil {
			return err
		}
		current := 0
		for _, s := range list.Items {
			if s.Name == sharedName && string(s.Data["token"]) == value {
				current++
			}
		}
		if current >= n {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("shared secret not in all namespaces after 10 minutes")
}

func createAll(ctx context.Context, c client.Client, names []string, postgres int, withComponent bool) error {
	work := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				t := &tenancyv1alpha1.Tenant{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       tenancyv1alpha1.TenantSpec{Organization: "Bench " + name, Email: "ops@" + name + ".example.com"},
				}
				if withComponent {
					t.Spec.Components = []tenancyv1alpha1.Component{{Name: "bench-web", Version: "1.0.0"}}
				}
				for i := range postgres {
					t.Spec.Databases.Postgres = append(t.Spec.Databases.Postgres, tenancyv1alpha1.Database{Name: fmt.Sprintf("db%d", i)})
				}
				if err := c.Create(ctx, t); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

// waitAllReady lists tenants once a second until n are Ready for their current generation.
func waitAllReady(ctx context.Context, c client.Client, n int) error {
	deadline := time.Now().Add(30 * time.Minute)
	for time.Now().Before(deadline) {
		list := &tenancyv1alpha1.TenantList{}
		if err := c.List(ctx, list); err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			t := &list.Items[i]
			if t.Status.ObservedGeneration == t.Generation && meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
				ready++
			}
		}
		if ready >= n {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("tenants not Ready after 30 minutes")
}

func waitIdle(op *testenv.Operator) {
	for idle := 0; idle < 5; {
		if op.Idle() {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func printMarkdown(w *os.File, r report) {
	fmt.Fprintf(w, "## Landlord benchmark: %d tenants (%d objects and %d PostgreSQL databases each, component: %v), QPS %.0f, %d concurrent reconciles, %d CPUs\n\n",
		r.Tenants, r.ObjectsPerTenant, r.PostgresPerTenant, r.Component, r.QPS, r.Concurrency, r.CPUs)
	fmt.Fprintln(w, "| phase | wall time | operator requests (API server count minus the benchmark's own) | operator requests per tenant | operator writes per tenant |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, p := range r.Phases {
		// The benchmark counts HTTP methods, the server counts verbs; map the benchmark's
		// methods onto the server's verbs before subtracting.
		opServer := p.Server.Sub(serverVerbs(p.Bench))
		writes := 0
		for k, v := range opServer {
			verb := strings.SplitN(k, " ", 2)[0]
			if verb != "GET" && verb != "LIST" {
				writes += v
			}
		}
		fmt.Fprintf(w, "| %s | %.2fs | %s | %.2f | %.2f |\n", p.Name, p.Seconds, byVerb(opServer),
			float64(opServer.Total())/float64(r.Tenants), float64(writes)/float64(r.Tenants))
	}
	if c := r.Claims; c != nil {
		fmt.Fprintf(w, "\nSignup: a pool filled with %d Ready spares in %.1fs; %d claims, 5 at a time, claim created → Bound: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n",
			c.N, c.Seconds, c.N, c.P50Ms, c.P99Ms, c.MaxMs)
	}
	fmt.Fprintf(w, "\nProcess heap after GC (operator plus benchmark client): %.1f MiB\n", r.HeapAfterGCMiB)
	fmt.Fprintln(w, "\nOperator requests as its own client counted them, by method and resource:")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "- %s: %d %s\n", p.Name, p.OperatorAll, p.Operator)
	}
}

// serverVerbs maps "METHOD resource" counts (as a client sees them) to the API server's verbs.
func serverVerbs(c testenv.Counts) testenv.Counts {
	out := testenv.Counts{}
	for k, v := range c {
		method, resource, _ := strings.Cut(k, " ")
		verb := method
		if method == "GET" && (resource == "tenants" || resource == "secrets") {
			// A GET of a collection is a LIST; the benchmark only lists these.
			verb = "LIST"
		}
		out[verb+" "+resource] += v
	}
	return out
}

func byVerb(c testenv.Counts) string {
	verbs := map[string]int{}
	for k, v := range c {
		verbs[strings.SplitN(k, " ", 2)[0]] += v
	}
	keys := make([]string, 0, len(verbs))
	for k := range verbs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, verbs[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
