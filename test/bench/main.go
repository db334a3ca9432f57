// Command bench measures Landlord at scale against a real control plane, with the operator in
// its own process as it runs in a cluster:
//
//  1. N tenants created until all are Ready (with -postgres, each with databases on a real
//     PostgreSQL server; with -component, each running a component);
//  2. a forced resync of all N unchanged tenants, then enough further rounds to measure the CPU
//     cost of one no-op reconcile;
//  3. an operator restart with N tenants, until the new process is idle;
//  4. one shared secret changed in the store, until all N namespaces hold the new value;
//  5. optionally (-rollout-migrations), a rollout of the component to a version without
//     migrations, then one to a version with a pre migration, the tenants' databases on two
//     servers (migrations.go);
//  6. optionally (-backups), one TenantBackupSchedule over every tenant, the databases on two
//     servers, each Job's two steps run by the benchmark (backups.go);
//  7. optionally, signup latency through a pool of spares;
//  8. optionally, a soak: the fleet churned at a steady rate while the operator's memory is
//     sampled (soak.go).
//
// Request counts come from the API server's own metrics (apiserver_request_total), minus the
// benchmark's own requests, counted by its client; what is left is the operator's. CPU and memory
// come from the operator process's own metrics and /proc.
//
//	go run ./test/bench -tenants 1000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

type params struct {
	tenants int
	shared  int
	qps     float64
	// yieldInFlight is client.yield.inFlight; the configured default when 0.
	yieldInFlight int
	// usageInterval is usage.interval; the configured default when 0.
	usageInterval time.Duration
	// settle is how long the operator is left alone after the phases, for its steady state.
	settle      time.Duration
	concurrency int
	postgres    int
	component   bool
	claims      int
	// claimsBeside is how many tenants a mass create makes while the claims run.
	claimsBeside int
	noopRounds   int
	jsonOut      string
	profileDir   string
	memLimit     string
	shards       int
	soak         soakParams
	// baseline is the raw-write baseline's concurrencies, one run each; none when empty.
	baseline []int
	// baselineFresh runs the baseline on a control plane of its own.
	baselineFresh bool
	// rolloutMigrations runs the two rollouts of migrations.go after the shared-secret change.
	rolloutMigrations bool
	// migrationJobTime is how long each migration Job runs before the benchmark completes it.
	migrationJobTime time.Duration
	// backups runs backups.go's schedule over every tenant, over backupWindow.
	backups      bool
	backupWindow time.Duration
}

func main() {
	var p params
	var child childFlags
	isChild := flag.Bool("operator-child", false, "Run as the benchmark's operator process (started by the benchmark itself).")
	flag.IntVar(&p.tenants, "tenants", 1000, "Tenants to create.")
	flag.IntVar(&p.shared, "shared", 1, "Shared secrets in the store, each copied into every tenant namespace.")
	flag.Float64Var(&p.qps, "qps", 0, "Operator client QPS (burst is twice this); the configured default when 0.")
	flag.IntVar(&p.concurrency, "concurrency", 0, "MaxConcurrentReconciles; the configured default when 0.")
	flag.IntVar(&p.yieldInFlight, "yield-in-flight", 0, "client.yield.inFlight: background writes in flight while a claim binds (-1: no yielding); the configured default when 0.")
	flag.DurationVar(&p.usageInterval, "usage-interval", 0, "usage.interval of the operator (at least 1m): tenants' status.usage is sampled, and kept in the operator's cache, that often; the configured default (15m) when 0.")
	flag.IntVar(&p.postgres, "postgres", 0, "PostgreSQL databases per tenant, on a real server the benchmark starts.")
	flag.BoolVar(&p.component, "component", false, "Give each tenant a component rendering a ConfigMap and a Service.")
	flag.IntVar(&p.claims, "claims", 0, "Fill a pool with this many spares, then claim them all and report claim → Bound latency.")
	flag.IntVar(&p.claimsBeside, "claims-beside", 0, "Tenants created (as a mass create) while the claims run.")
	flag.IntVar(&p.noopRounds, "noop-reconciles", 20000, "No-op reconciles (whole resync rounds, at least one) over which CPU per reconcile is measured.")
	flag.StringVar(&p.jsonOut, "json", "", "Also write the report as JSON to this file.")
	flag.BoolVar(&p.baselineFresh, "baseline-fresh", false, "Run the raw-write baseline on a fresh control plane (with only the admission policies the operator installs), not on the one holding the other phases' tenants.")
	flag.DurationVar(&p.settle, "settle", 0, "After the shared-secret change (before the claims), leave the operator alone this long, sampling its RSS, for its memory at steady state with N tenants.")
	flag.StringVar(&p.profileDir, "profile", "", "Write the operator's CPU profile of each phase and its heap at the end of each, and the API server's CPU profile of the first 30 seconds of each phase and of each raw-write baseline, to this directory.")
	flag.StringVar(&p.memLimit, "operator-gomemlimit", "", "GOMEMLIMIT of the operator process (e.g. 900MiB), as the shipped Deployment sets it.")
	flag.IntVar(&p.shards, "shards", 1, "Operator shards, each its own process: the default shard and shards s1, s2…, every tenant labelled for one in turn. With more than one, only the create and resync phases run, and each shard's figures are reported.")
	flag.Func("baseline", "Comma-separated concurrencies of the raw-write baseline, one run each (e.g. 16,64), after the other phases, with the operator stopped; none when empty.", func(v string) error {
		if v == "" {
			return nil
		}
		for _, f := range strings.Split(v, ",") {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
				return fmt.Errorf("%q is not a concurrency", f)
			}
			p.baseline = append(p.baseline, n)
		}
		return nil
	})
	flag.BoolVar(&p.rolloutMigrations, "rollout-migrations", false, "After the shared-secret change, roll the component (-component, which then follows rollouts) out to a version without migrations, then to one with a pre migration naming each tenant's first database (-postgres), the databases spread over two PostgreSQL servers; report each rollout, and the most migration Jobs each server had running at once.")
	flag.DurationVar(&p.migrationJobTime, "migration-job-time", 0, "With -rollout-migrations: how long each migration Job runs before the benchmark completes it, as the Job controller would once its pod ended; at once when 0.")
	flag.BoolVar(&p.backups, "backups", false, "After the shared-secret change (and the rollouts), back every tenant up with one TenantBackupSchedule over -backup-window, the databases (-postgres) spread over two PostgreSQL servers, the store an S3 server and an AWS KMS emulator in this process, each Job's two steps run by the benchmark; report the time to the last success, the most backup Jobs each server had running at once, and the operator's writes per backup.")
	flag.DurationVar(&p.backupWindow, "backup-window", 5*time.Minute, "With -backups: the schedule's window.")
	child.bind(flag.CommandLine)
	p.soak.bind(flag.CommandLine)
	flag.Parse()
	if p.backups && (p.postgres < 1 || p.shards > 1) {
		fmt.Fprintln(os.Stderr, "bench: -backups needs -postgres 1 or more, with one shard")
		os.Exit(2)
	}
	if p.rolloutMigrations && (!p.component || p.postgres < 1 || p.shards > 1) {
		fmt.Fprintln(os.Stderr, "bench: -rollout-migrations needs -component and -postgres 1 or more, with one shard")
		os.Exit(2)
	}
	child.qps, child.concurrency, child.yieldInFlight, child.usageInterval = p.qps, p.concurrency, p.yieldInFlight, p.usageInterval
	// As cmd/landlord logs: a stop does not log what it cuts short as errors.
	ctrl.SetLogger(shutdown.QuietLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel))))
	var err error
	if *isChild {
		err = runChild(child)
	} else {
		err = run(p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Operator is the API server's count of requests by "VERB resource", minus the benchmark's.
	Operator testenv.Counts `json:"operatorRequests"`
	Bench    testenv.Counts `json:"benchRequests"`
	// ControlPlane is what the API server counted of its own doing (leases, endpoints, the
	// IPAddress objects that back Service IPs), left out of Operator.
	ControlPlane testenv.Counts `json:"controlPlaneRequests"`
	// OperatorClient is the operator's own count of its requests, by method and resource.
	OperatorClient testenv.Counts `json:"operatorClientRequests"`
	Writes         int            `json:"operatorWrites"`
	Reads          int            `json:"operatorReads"`
	Watches        int            `json:"operatorWatches"`
	Reconciles     int            `json:"reconciles"`
	CPUSeconds     float64        `json:"operatorCPUSeconds"`
	RSSMiB         float64        `json:"operatorRSSMiB"`
	PeakRSSMiB     float64        `json:"operatorPeakRSSMiB"`
	HeapInuseMiB   float64        `json:"operatorHeapInuseMiB"`
	// LiveHeapMiB is the operator's heap right after a collection at the end of the phase: what
	// it holds, as opposed to what it has not collected yet.
	LiveHeapMiB float64 `json:"operatorLiveHeapMiB"`
	// APIServerCPUSeconds and EtcdCPUSeconds are what the control plane spent in the phase.
	APIServerCPUSeconds float64 `json:"apiserverCPUSeconds"`
	EtcdCPUSeconds      float64 `json:"etcdCPUSeconds"`
	WritesPerTenant     float64 `json:"writesPerTenant"`
	// Shards are each operator process's own figures, when the benchmark runs shards.
	Shards []shardFigures `json:"shards,omitempty"`
}

// shardFigures are one operator shard's figures in a phase.
type shardFigures struct {
	Shard       string  `json:"shard"`
	Reconciles  int     `json:"reconciles"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	RSSMiB      float64 `json:"rssMiB"`
	PeakRSSMiB  float64 `json:"peakRSSMiB"`
	LiveHeapMiB float64 `json:"liveHeapMiB"`
}

type noop struct {
	Reconciles        int     `json:"reconciles"`
	CPUSeconds        float64 `json:"cpuSeconds"`
	CPUPerReconcileUs float64 `json:"cpuPerReconcileMicroseconds"`
	MeanReconcileUs   float64 `json:"meanReconcileMicroseconds"`
	Writes            int     `json:"writes"`
	Reads             int     `json:"reads"`
}

type machine struct {
	CPU        string `json:"cpu"`
	CPUs       int    `json:"cpus"`
	MemoryGiB  int    `json:"memoryGiB"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	Kubernetes string `json:"kubernetes"`
	Date       string `json:"date"`
}

type report struct {
	Machine          machine `json:"machine"`
	Tenants          int     `json:"tenants"`
	ObjectsPerTenant int     `json:"objectsPerTenant"`
	SharedSecrets    int     `json:"sharedSecrets"`
	QPS              float32 `json:"qps"`
	Burst            int     `json:"burst"`
	Concurrency      int     `json:"maxConcurrentReconciles"`
	// YieldInFlight is client.yield.inFlight: the background writes in flight while a claim
	// binds (-1: none held back).
	YieldInFlight int `json:"yieldInFlight"`
	// GOMEMLIMIT is the operator process's soft memory limit, when one was set.
	GOMEMLIMIT string `json:"gomemlimit,omitempty"`
	// PostgresPerTenant is how many PostgreSQL databases each tenant has, on one real server.
	PostgresPerTenant int `json:"postgresPerTenant"`
	// Component is whether each tenant runs a component rendering a ConfigMap and a Service.
	Component bool    `json:"component"`
	Phases    []phase `json:"phases"`
	NoOp      noop    `json:"noopReconcile"`
	// Claims is the signup latency: claim created → Bound, with Ready spares available.
	Claims *claimLatency `json:"claims,omitempty"`
	// Shards is how many operator processes shared the tenants.
	Shards int `json:"shards"`
	// Baselines are the raw-write baseline's runs, one per concurrency.
	Baselines []baseline `json:"baselines,omitempty"`
	// BaselineFresh is whether the baseline ran on a control plane of its own, started for it.
	BaselineFresh bool `json:"baselineFresh,omitempty"`
	// CreateRatio and FanOutRatio are Landlord's times over the fastest baseline run's.
	CreateRatio float64 `json:"createRatio,omitempty"`
	FanOutRatio float64 `json:"fanOutRatio,omitempty"`
	// Soak is the operator's memory over a time of steady churn, when -soak asked for one.
	Soak *soakReport `json:"soak,omitempty"`
	// Settle is the operator's memory left alone after the phases.
	Settle *settleReport `json:"settle,omitempty"`
	// Migrations is what the rollout with a pre migration ran on each database server.
	Migrations *migrationsReport `json:"migrations,omitempty"`
	Backups    *backupsReport    `json:"backups,omitempty"`
}

// Phase names, also the keys of the goals in the summary.
const (
	phaseCreate  = "create N tenants until all Ready"
	phaseResync  = "forced resync of N unchanged tenants"
	phaseRestart = "operator restart until idle"
	phaseShared  = "one shared secret change until in all N namespaces"
)

func run(p params) error {
	// The operator's own cost is measured: a controller-manager, scheduler and kwok would share
	// the machine's cores and the API server's counts with it.
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	if err != nil {
		return err
	}
	// Stopped once, at the end or before a fresh control plane replaces it.
	stopEnv := sync.OnceValue(env.Stop)
	defer func() { _ = stopEnv() }()
	// Cancelled before the control plane stops: the benchmark's watches would hold up its
	// shutdown.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	cfg := config.Default()
	if p.qps > 0 {
		cfg.Client.QPS, cfg.Client.Burst = float32(p.qps), int(2*p.qps)
	}
	if p.concurrency > 0 {
		cfg.Controller.MaxConcurrentReconciles = p.concurrency
	}
	if p.yieldInFlight != 0 {
		cfg.Client.Yield.InFlight = p.yieldInFlight
	}
	work, err := os.MkdirTemp("", "landlord-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	storeDir := filepath.Join(work, "store")
	if err := os.Mkdir(storeDir, 0o700); err != nil {
		return err
	}
	store, err := secret.NewFileStore(storeDir, storeDir+"/key.json")
	if err != nil {
		return err
	}
	if p.postgres > 0 {
		// With -rollout-migrations, two servers: the tenants' databases are spread over them,
		// and each holds its own limit of migration Jobs.
		for i := range serverCount(p) {
			pg, err := dbtest.StartPostgres()
			if err != nil {
				return err
			}
			defer pg.Close()
			if err := registerServer(ctx, env.AdminClient, cfg, serverName(i), pg); err != nil {
				return err
			}
		}
	}

	var backupObjects, backupKey string
	if p.backups {
		var stopStore func()
		if backupObjects, backupKey, stopStore, err = startBackupStore(ctx, work); err != nil {
			return err
		}
		defer stopStore()
	}
	child := childFlags{storeDir: storeDir, backupObjects: backupObjects, backupKey: backupKey, qps: p.qps, concurrency: p.concurrency, yieldInFlight: p.yieldInFlight, usageInterval: p.usageInterval, kubeconfig: filepath.Join(work, "operator.kubeconfig"), memLimit: p.memLimit}
	if err := writeOperatorKubeconfig(env, child.kubeconfig); err != nil {
		return err
	}
	if child.metricsAddr, err = freeAddr(); err != nil {
		return err
	}
	if child.controlAddr, err = freeAddr(); err != nil {
		return err
	}

	benchRequests := testenv.NewRequestCounter()
	benchCfg := *env.Admin
	benchCfg.QPS, benchCfg.Burst = 1000, 2000
	// Counted as the API server counts them (a GET of a collection is a LIST), so that they
	// can be taken out of its counts; watches apart, below.
	benchCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Query().Get("watch") != "true" {
				benchRequests.Add(testenv.ServerKey(req.Method, req.URL.Path))
			}
			return rt.RoundTrip(req)
		})
	})
	// The request counter leaves watches out; the server counts them, so the benchmark's own
	// (its cache's, re-opened from time to time) are counted here to be taken out.
	benchWatches := testenv.NewRequestCounter()
	benchCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Query().Get("watch") == "true" {
				benchWatches.Add("WATCH " + testenv.ResourceOf(req.URL.Path))
			}
			return rt.RoundTrip(req)
		})
	})
	c, err := client.New(&benchCfg, client.Options{Scheme: tenancyv1alpha1.Scheme()})
	if err != nil {
		return err
	}
	// The benchmark follows tenants and shared-secret copies through its own informers, so that
	// waiting costs one watch rather than a LIST of everything every second.
	// Its own context, cancelled before its control plane stops: its watches would hold up the
	// shutdown.
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	watched, err := startBenchCache(watchCtx, &benchCfg)
	if err != nil {
		return err
	}

	rep := report{
		Machine: readMachine(), Tenants: p.tenants, SharedSecrets: p.shared, QPS: cfg.Client.QPS, Burst: cfg.Client.Burst,
		Concurrency: cfg.Controller.MaxConcurrentReconciles, YieldInFlight: cfg.Client.Yield.InFlight, PostgresPerTenant: p.postgres, Component: p.component,
		GOMEMLIMIT: p.memLimit, Shards: p.shards,
	}
	sampleTenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	// Besides what resources.Build returns, every tenant holds a copy of each shared secret, one
	// credentials Secret per database, and the NetworkPolicy to its database servers.
	rep.ObjectsPerTenant = len(resources.Build(sampleTenant, &cfg)) + 1 + p.shared + p.postgres
	if p.component {
		rep.ObjectsPerTenant += 2
		if err := c.Create(ctx, benchComponent()); err != nil {
			return err
		}
	}
	for i := range p.shared {
		if err := putShared(ctx, store, cfg, sharedName(i), "v1"); err != nil {
			return err
		}
	}

	op, err := startOperator(child)
	if err != nil {
		return err
	}
	defer func() { _ = op.stop() }()
	// The other shards, each a process of its own with leader election, as deployed.
	var shards []*operatorProcess
	if p.shards > 1 {
		if err := env.InstallLeaderElectionRBAC(ctx); err != nil {
			return err
		}
	}
	for i := 1; i < p.shards; i++ {
		f := child
		f.shard = fmt.Sprintf("s%d", i)
		if f.metricsAddr, err = freeAddr(); err != nil {
			return err
		}
		if f.controlAddr, err = freeAddr(); err != nil {
			return err
		}
		sp, err := startOperator(f)
		if err != nil {
			return err
		}
		defer func() { _ = sp.stop() }()
		shards = append(shards, sp)
	}

	profileFile := func(name string) string {
		return filepath.Join(p.profileDir, strings.ReplaceAll(name, " ", "-")+".cpu.pprof")
	}
	// profile starts a CPU profile of the phase; a restarted process profiles itself from its
	// start (child.profile), and stop ends whichever profile runs at the end of the phase. What
	// stop returns waits for the API server's profile, which may outlast a short phase: called
	// once the phase's readings are taken, so that they cover the phase alone.
	profile := func(name string) func() func() {
		if p.profileDir == "" {
			return func() func() { return func() {} }
		}
		file := profileFile(name)
		if name != phaseRestart {
			if _, err := op.post("/profile/start?file=" + file); err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
		}
		apiserver := profileAPIServer(ctx, env.Clientset.RESTClient(), strings.TrimSuffix(file, ".cpu.pprof")+".apiserver.cpu.pprof")
		return func() func() {
			if _, err := op.post("/profile/stop?heap=" + strings.TrimSuffix(file, ".cpu.pprof") + ".heap.pprof"); err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
			return func() {
				if err := <-apiserver; err != nil {
					fmt.Fprintln(os.Stderr, "profile:", err)
				}
			}
		}
	}
	if p.profileDir != "" {
		if err := os.MkdirAll(p.profileDir, 0o755); err != nil {
			return err
		}
		if p.profileDir, err = filepath.Abs(p.profileDir); err != nil {
			return err
		}
	}

	timeout := max(10*time.Minute, time.Duration(p.tenants)*500*time.Millisecond)
	// measure times work, which returns when the phase's outcome is observed, then waits for
	// the operator to settle before taking the counts, so that they cover all the phase caused.
	measure := func(name string, work func() error) (*phase, error) {
		server0, err := env.APIServerRequests(ctx)
		if err != nil {
			return nil, err
		}
		bench0, watches0 := benchRequests.Snapshot(), benchWatches.Snapshot()
		proc0 := op
		client0, err := op.clientRequests()
		if err != nil {
			return nil, err
		}
		s0, err := op.sample()
		if err != nil {
			return nil, err
		}
		shard0 := make([]sample, len(shards))
		for i, sp := range shards {
			if shard0[i], err = sp.sample(); err != nil {
				return nil, err
			}
		}
		stopProfile := profile(name)
		apiserver0, etcd0 := controlPlaneCPU()
		start := time.Now()
		if err := work(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		elapsed := time.Since(start)
		for _, proc := range append([]*operatorProcess{op}, shards...) {
			if _, err := proc.waitReconciled(ctx, 0, timeout); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		profiled := stopProfile()
		apiserver1, etcd1 := controlPlaneCPU()
		server1, err := env.APIServerRequests(ctx)
		if err != nil {
			return nil, err
		}
		s1, err := op.sample()
		if err != nil {
			return nil, err
		}
		if op != proc0 {
			// A new process: its counters started from zero.
			s0 = sample{}
		}
		bench := benchRequests.Snapshot().Sub(bench0)
		for k, v := range benchWatches.Snapshot().Sub(watches0) {
			bench[k] += v
		}
		opCounts, controlPlane := splitControlPlane(server1.Sub(server0).Sub(bench))
		opClient, err := op.clientRequests()
		if err != nil {
			return nil, err
		}
		if op == proc0 {
			opClient = opClient.Sub(client0)
		}
		profiled()
		ph := phase{
			Name: name, Seconds: elapsed.Seconds(), Operator: opCounts, Bench: bench, ControlPlane: controlPlane, OperatorClient: opClient,
			Reconciles: int(s1.reconciles - s0.reconciles), CPUSeconds: s1.cpuSeconds - s0.cpuSeconds,
			RSSMiB: s1.rssBytes / (1 << 20), PeakRSSMiB: op.peakRSS() / (1 << 20), HeapInuseMiB: s1.heapInuseBytes / (1 << 20),
			APIServerCPUSeconds: apiserver1 - apiserver0, EtcdCPUSeconds: etcd1 - etcd0,
		}
		// After the counts: the collection's CPU is not the phase's.
		if live, err := op.post("/live-heap"); err == nil {
			_, _ = fmt.Sscan(live, &ph.LiveHeapMiB)
			ph.LiveHeapMiB /= 1 << 20
		}
		if len(shards) > 0 {
			ph.Shards = append(ph.Shards, shardFigures{Shard: "(default)", Reconciles: ph.Reconciles, CPUSeconds: ph.CPUSeconds,
				RSSMiB: ph.RSSMiB, PeakRSSMiB: ph.PeakRSSMiB, LiveHeapMiB: ph.LiveHeapMiB})
		}
		for i, sp := range shards {
			s, err := sp.sample()
			if err != nil {
				return nil, err
			}
			f := shardFigures{Shard: sp.flags.shard, Reconciles: int(s.reconciles - shard0[i].reconciles), CPUSeconds: s.cpuSeconds - shard0[i].cpuSeconds,
				RSSMiB: s.rssBytes / (1 << 20), PeakRSSMiB: sp.peakRSS() / (1 << 20)}
			if live, err := sp.post("/live-heap"); err == nil {
				_, _ = fmt.Sscan(live, &f.LiveHeapMiB)
				f.LiveHeapMiB /= 1 << 20
			}
			ph.Shards = append(ph.Shards, f)
			// The phase's CPU and reconciles are the shards' together.
			ph.CPUSeconds += f.CPUSeconds
			ph.Reconciles += f.Reconciles
		}
		for _, f := range ph.Shards {
			fmt.Fprintf(os.Stderr, "  shard %s: reconciles %d, CPU %.2fs, RSS %.0f MiB (peak %.0f), live heap %.0f MiB\n", f.Shard, f.Reconciles, f.CPUSeconds, f.RSSMiB, f.PeakRSSMiB, f.LiveHeapMiB)
		}
		ph.Writes, ph.Reads, ph.Watches = writesAndReads(opCounts)
		ph.WritesPerTenant = float64(ph.Writes) / float64(p.tenants)
		fmt.Fprintf(os.Stderr, "  %.2fs, operator writes %d, reads %d, reconciles %d, CPU %.2fs (apiserver %.1fs, etcd %.1fs), RSS %.0f MiB (peak %.0f), live heap %.0f MiB\n",
			ph.Seconds, ph.Writes, ph.Reads, ph.Reconciles, ph.CPUSeconds, ph.APIServerCPUSeconds, ph.EtcdCPUSeconds, ph.RSSMiB, ph.PeakRSSMiB, ph.LiveHeapMiB)
		return &ph, nil
	}
	// record measures one phase of the report.
	record := func(name string, work func() error) error {
		ph, err := measure(name, work)
		if err == nil {
			rep.Phases = append(rep.Phases, *ph)
		}
		return err
	}

	names := make([]string, p.tenants)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%05d", i)
	}

	// As in an install, where config/policies is applied with the CRDs: the operator applies
	// its admission policies as it starts, and the API server enforces them a moment later.
	if err := waitPoliciesEnforced(ctx, c, timeout); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "creating %d tenants...\n", p.tenants)
	if err := record(phaseCreate, func() error {
		if err := createAll(ctx, c, names, p.postgres, p.component, p.rolloutMigrations, p.shards); err != nil {
			return err
		}
		if err := watched.waitAllReady(ctx, p.tenants, timeout); err != nil {
			return err
		}
		return watched.waitAllCopies(ctx, p.tenants*p.shared, "v1", timeout)
	}); err != nil {
		return err
	}

	fmt.Fprintf(os.Stderr, "forcing a resync of %d unchanged tenants...\n", p.tenants)
	if err := record(phaseResync, func() error {
		// Every shard caches every tenant, and passes over the others' at the cost of a cache read.
		for _, proc := range append([]*operatorProcess{op}, shards...) {
			if err := resyncAll(ctx, proc, p.tenants, timeout, false, 50*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if p.shards > 1 {
		return writeReport(rep, p.jsonOut)
	}

	rounds := max(1, (p.noopRounds+p.tenants-1)/p.tenants)
	fmt.Fprintf(os.Stderr, "measuring no-op reconcile CPU over %d rounds of %d...\n", rounds, p.tenants)
	ph, err := measure("no-op reconcile CPU", func() error {
		// Rounds follow each other without waiting for the controller to settle, so that the
		// operator's idle time stays out of the figure.
		for range rounds {
			if err := resyncAll(ctx, op, p.tenants, timeout, false, 500*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rep.NoOp = noop{Reconciles: ph.Reconciles, CPUSeconds: ph.CPUSeconds, Writes: ph.Writes, Reads: ph.Reads}
	if ph.Reconciles > 0 {
		rep.NoOp.CPUPerReconcileUs = ph.CPUSeconds / float64(ph.Reconciles) * 1e6
	}

	fmt.Fprintf(os.Stderr, "restarting the operator with %d tenants...\n", p.tenants)
	if err := record(phaseRestart, func() error {
		if err := op.stop(); err != nil {
			return fmt.Errorf("stopping: %w", err)
		}
		restarted := child
		if p.profileDir != "" {
			restarted.profile = profileFile(phaseRestart)
		}
		if op, err = startOperator(restarted); err != nil {
			return err
		}
		_, err := op.waitFor(ctx, float64(p.tenants), timeout, false, 50*time.Millisecond)
		return err
	}); err != nil {
		return err
	}
	// The mean reconcile time is measured in the new process, which has only done start-up work.
	before, err := op.sample()
	if err != nil {
		return err
	}
	if err := resyncAll(ctx, op, p.tenants, timeout, true, 100*time.Millisecond); err != nil {
		return err
	}
	after, err := op.sample()
	if err != nil {
		return err
	}
	if n := after.reconciles - before.reconciles; n > 0 {
		rep.NoOp.MeanReconcileUs = (after.reconcileSecs - before.reconcileSecs) / n * 1e6
	}

	fmt.Fprintf(os.Stderr, "changing one shared secret...\n")
	if err := record(phaseShared, func() error {
		if err := putShared(ctx, store, cfg, sharedName(0), "v2"); err != nil {
			return err
		}
		if _, err := op.post("/template-sync"); err != nil {
			return err
		}
		return watched.waitAllCopies(ctx, p.tenants, "v2", timeout)
	}); err != nil {
		return err
	}

	if p.rolloutMigrations {
		if rep.Migrations, err = runRollouts(ctx, c, &benchCfg, watched, record, p, timeout); err != nil {
			return err
		}
	}
	if p.backups {
		if rep.Backups, err = runBackups(ctx, c, &benchCfg, watched, cfg.Backups.Namespace, record, p, timeout); err != nil {
			return err
		}
		last := rep.Phases[len(rep.Phases)-1]
		if rep.Backups.Backups > 0 {
			rep.Backups.WritesPerBackup = float64(last.Writes) / float64(rep.Backups.Backups)
		}
	}

	// Steady state at N: before the claims add a pool and a mass create.
	if p.settle > 0 {
		fmt.Fprintf(os.Stderr, "leaving the operator alone for %s...\n", p.settle)
		if rep.Settle, err = settle(ctx, op, p.settle, 15*time.Second); err != nil {
			return err
		}
	}

	if p.claims > 0 {
		fmt.Fprintf(os.Stderr, "filling a pool with %d spares and claiming them...\n", p.claims)
		beside := func() error { return nil }
		if p.claimsBeside > 0 {
			mass := make([]string, p.claimsBeside)
			for i := range mass {
				mass[i] = fmt.Sprintf("mass-%05d", i)
			}
			beside = func() error { return createAll(ctx, c, mass, p.postgres, p.component, p.rolloutMigrations, 1) }
		}
		if rep.Claims, err = measureClaims(ctx, env, c, op, benchRequests, p.claims, beside); err != nil {
			return err
		}
	}

	// The baseline copies a tenant as Landlord made it, before the soak archives it.
	var tpl *tenantTemplate
	if len(p.baseline) > 0 {
		if tpl, err = captureTenant(ctx, c, cfg.NamespaceName(names[0]), names[0]); err != nil {
			return err
		}
	}
	if rep.Soak, err = runSoak(ctx, p.soak, soakEnv{c: c, watched: watched, store: store, cfg: cfg, op: op, tenants: names, postgres: p.postgres, component: p.component}); err != nil {
		return err
	}
	if len(p.baseline) > 0 {
		// The baseline is what the control plane does with no operator at all.
		if err := op.stop(); err != nil {
			return err
		}
		baseEnv := env
		if p.baselineFresh {
			want, err := countPolicies(ctx, env)
			if err != nil {
				return err
			}
			// Stopped first: its processes would otherwise share the cores, and the control
			// plane's CPU the report counts, with the fresh one's.
			stopWatching()
			if err := stopEnv(); err != nil {
				// The report is still worth writing: the fresh control plane is another one.
				fmt.Fprintf(os.Stderr, "stopping the first control plane: %v\n", err)
			}
			fmt.Fprintf(os.Stderr, "starting a fresh control plane for the raw-write baseline...\n")
			if baseEnv, err = freshControlPlane(ctx, work, child, want); err != nil {
				return fmt.Errorf("raw-write baseline: %w", err)
			}
			defer func() { _ = baseEnv.Stop() }()
			rep.BaselineFresh = true
		}
		for i, concurrency := range p.baseline {
			var apiserver <-chan error
			if p.profileDir != "" {
				// The same window of the API server as Landlord's create: what a create costs
				// it beside an apply.
				apiserver = profileAPIServer(ctx, baseEnv.Clientset.RESTClient(), filepath.Join(p.profileDir, fmt.Sprintf("baseline-%d.apiserver.cpu.pprof", concurrency)))
			}
			b, err := runBaseline(ctx, baseEnv, tpl, fmt.Sprintf("raw%d-", i), p.tenants, concurrency)
			if err != nil {
				return fmt.Errorf("raw-write baseline: %w", err)
			}
			if apiserver != nil {
				if err := <-apiserver; err != nil {
					fmt.Fprintln(os.Stderr, "profile:", err)
				}
			}
			rep.Baselines = append(rep.Baselines, *b)
		}
		rep.CreateRatio, rep.FanOutRatio = ratios(rep)
	}
	return writeReport(rep, p.jsonOut)
}

// ratios are Landlord's create and fan-out times over the fastest baseline run's.
func ratios(r report) (create, fanOut float64) {
	phaseSeconds := func(name string) float64 {
		for _, ph := range r.Phases {
			if ph.Name == name {
				return ph.Seconds
			}
		}
		return 0
	}
	fastest := func(of func(baseline) float64) float64 {
		best := 0.0
		for _, b := range r.Baselines {
			if s := of(b); s > 0 && (best == 0 || s < best) {
				best = s
			}
		}
		return best
	}
	if b := fastest(func(b baseline) float64 { return b.Create.Seconds }); b > 0 {
		create = phaseSeconds(phaseCreate) / b
	}
	if b := fastest(func(b baseline) float64 { return b.FanOut.Seconds }); b > 0 {
		fanOut = phaseSeconds(phaseShared) / b
	}
	return create, fanOut
}

// writeReport prints the report as Markdown and, when jsonOut is set, writes it as JSON.
func writeReport(rep report, jsonOut string) error {
	printMarkdown(os.Stdout, rep)
	if jsonOut == "" {
		return nil
	}
	data, _ := json.MarshalIndent(rep, "", "  ")
	return os.WriteFile(jsonOut, append(data, '\n'), 0o644)
}

// resyncAll enqueues every tenant in the operator and waits until it has reconciled them all
// and, with settle, is idle again.
func resyncAll(ctx context.Context, op *operatorProcess, n int, timeout time.Duration, settle bool, interval time.Duration) error {
	s, err := op.sample()
	if err != nil {
		return err
	}
	if _, err := op.post("/resync"); err != nil {
		return err
	}
	_, err = op.waitFor(ctx, s.reconciles+float64(n), timeout, settle, interval)
	return err
}

// writeOperatorKubeconfig writes a kubeconfig for the control plane that impersonates the
// operator's identity, so the operator process runs under its generated RBAC.
func writeOperatorKubeconfig(env *testenv.Env, path string) error {
	a := env.Admin
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: a.Host, CertificateAuthorityData: a.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: a.CertData, ClientKeyData: a.KeyData, Token: a.BearerToken,
		Impersonate: testenv.OperatorUser,
	}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "operator"}
	kc.CurrentContext = "bench"
	return clientcmd.WriteToFile(*kc, path)
}

// benchCache is the benchmark's view of tenants and shared-secret copies.
type benchCache struct{ cache.Cache }

func startBenchCache(ctx context.Context, cfg *rest.Config) (*benchCache, error) {
	c, err := cache.New(cfg, cache.Options{
		Scheme:           tenancyv1alpha1.Scheme(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{tenancyv1alpha1.SharedCopyLabel: "true"})},
		},
	})
	if err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{&tenancyv1alpha1.Tenant{}, &corev1.Secret{}} {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("benchmark cache did not sync")
	}
	return &benchCache{c}, nil
}

// waitAllReady waits until n tenants are Ready for their current generation.
func (b *benchCache) waitAllReady(ctx context.Context, n int, timeout time.Duration) error {
	return b.poll(ctx, timeout, func() (bool, error) {
		list := &tenancyv1alpha1.TenantList{}
		if err := b.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			t := &list.Items[i]
			if t.Status.ObservedGeneration == t.Generation && meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
				ready++
			}
		}
		return ready >= n, nil
	}, "tenants Ready")
}

// waitAllCopies waits until n shared-secret copies hold value.
func (b *benchCache) waitAllCopies(ctx context.Context, n int, value string, timeout time.Duration) error {
	return b.poll(ctx, timeout, func() (bool, error) {
		list := &corev1.SecretList{}
		if err := b.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return false, err
		}
		current := 0
		for i := range list.Items {
			if string(list.Items[i].Data["token"]) == value {
				current++
			}
		}
		return current >= n, nil
	}, "shared secret copies holding "+value)
}

func (b *benchCache) poll(ctx context.Context, timeout time.Duration, done func() (bool, error), what string) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not all %s after %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func readMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Kubernetes: testenv.KubeVersion, Date: time.Now().UTC().Format("2006-01-02")}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			m.MemoryGiB = (kb + (1 << 19)) >> 20
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(data))
	}
	return m
}

func sharedName(i int) string {
	if i == 0 {
		return "bench-shared"
	}
	return fmt.Sprintf("bench-shared-%d", i)
}

// benchComponent renders objects that are Ready as soon as they exist, so the benchmark measures
// Landlord rather than a workload controller (its control plane runs none).
func benchComponent() *tenancyv1alpha1.ComponentTemplate {
	return benchComponentAt("1.0.0")
}

// benchComponentAt is benchComponent at version.
func benchComponentAt(version string) *tenancyv1alpha1.ComponentTemplate {
	return &tenancyv1alpha1.ComponentTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-web-" + version},
		Spec: tenancyv1alpha1.ComponentTemplateSpec{
			Component: "bench-web", Version: version,
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

// registerServer makes a started PostgreSQL server the DatabaseServer name, Ready before the
// operator starts placing tenants on it.
func registerServer(ctx context.Context, c client.Client, cfg config.Config, name string, pg *dbtest.Instance) error {
	ns := cfg.Databases.CredentialsNamespace
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-admin"},
		StringData: map[string]string{"username": pg.Server.AdminUser, "password": pg.Server.AdminPassword},
	}); err != nil {
		return err
	}
	return c.Create(ctx, &tenancyv1alpha1.DatabaseServer{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.DatabaseServerSpec{
			Engine: tenancyv1alpha1.EnginePostgres, Host: pg.Server.Host, Port: pg.Server.Port,
			TLS: tenancyv1alpha1.DatabaseTLSMode(pg.Server.TLS), AdminCredentials: tenancyv1alpha1.SecretReference{Name: name + "-admin"},
		},
	})
}

func putShared(ctx context.Context, store secret.Store, cfg config.Config, name, value string) error {
	return store.Put(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Secrets.TemplateNamespace, Name: name,
			Labels: map[string]string{tenancyv1alpha1.SharedLabel: "true"}},
		Data: map[string][]byte{"token": []byte(value)},
	})
}

// waitPoliciesEnforced waits until a Tenant created (as a dry run) gets its finalizer from
// admission, the sign that the operator's policies are in force.
func waitPoliciesEnforced(ctx context.Context, c client.Client, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		probe := &tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: "bench-policy-probe"},
			Spec:       tenancyv1alpha1.TenantSpec{Organization: "Bench", Email: "ops@bench.example.com"},
		}
		if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		return slices.Contains(probe.Finalizers, tenancyv1alpha1.Finalizer), nil
	})
}

// createAll creates the tenants, eight at a time, their component following rollouts with
// followRollouts; with shards, tenant i is labelled for shard
// s<i mod shards>, or for the default shard when that is 0.
func createAll(ctx context.Context, c client.Client, names []string, postgres int, withComponent, followRollouts bool, shards int) error {
	type job struct {
		i    int
		name string
	}
	work := make(chan job)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				name := j.name
				t := &tenancyv1alpha1.Tenant{
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       tenancyv1alpha1.TenantSpec{Organization: "Bench " + name, Email: "ops@" + name + ".example.com"},
				}
				if shards > 1 && j.i%shards != 0 {
					t.Labels = map[string]string{tenancyv1alpha1.ShardLabel: fmt.Sprintf("s%d", j.i%shards)}
				}
				if withComponent {
					t.Spec.Components = []tenancyv1alpha1.Component{{Name: "bench-web", Version: "1.0.0", FollowRollouts: followRollouts}}
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
	for i, n := range names {
		work <- job{i, n}
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func printMarkdown(w *os.File, r report) {
	m := r.Machine
	fmt.Fprintf(w, "## %d tenants\n\n", r.Tenants)
	fmt.Fprintf(w, "%s, %d CPUs, %d GiB, %s; %s; kube-apiserver and etcd %s (envtest) on the same machine; %s.\n\n",
		m.CPU, m.CPUs, m.MemoryGiB, m.Kernel, m.Go, m.Kubernetes, m.Date)
	fmt.Fprintf(w, "Each tenant: %d owned objects (%d shared secrets, %d PostgreSQL databases, component: %v). Operator: QPS %.0f, burst %d, %d concurrent reconciles, %d background writes in flight while a claim binds.\n\n",
		r.ObjectsPerTenant, r.SharedSecrets, r.PostgresPerTenant, r.Component, r.QPS, r.Burst, r.Concurrency, r.YieldInFlight)
	fmt.Fprintln(w, "| phase | wall time | operator requests (API server count) | writes per tenant | reconciles | CPU: operator / apiserver / etcd | operator RSS at end (peak) | live heap |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "| %s | %.2f s | %s | %.2f | %d | %.1f / %.1f / %.1f s | %.0f MiB (%.0f MiB) | %.0f MiB |\n", p.Name, p.Seconds, byVerb(p.Operator),
			p.WritesPerTenant, p.Reconciles, p.CPUSeconds, p.APIServerCPUSeconds, p.EtcdCPUSeconds, p.RSSMiB, p.PeakRSSMiB, p.LiveHeapMiB)
	}
	if r.NoOp.Reconciles > 0 {
		fmt.Fprintf(w, "\nNo-op reconcile: %d reconciles of unchanged tenants cost %.2f s of operator CPU, %.1f µs each (mean reconcile time %.1f µs), with %d writes and %d reads.\n",
			r.NoOp.Reconciles, r.NoOp.CPUSeconds, r.NoOp.CPUPerReconcileUs, r.NoOp.MeanReconcileUs, r.NoOp.Writes, r.NoOp.Reads)
	}
	if c := r.Claims; c != nil {
		fmt.Fprintf(w, "\nSignup: a pool filled with %d Ready spares in %.1f s; %d claims, 5 signups at a time, each waiting for its bind", c.N, c.Seconds, c.N)
		if c.Beside > 0 {
			fmt.Fprintf(w, ", while %d tenants were created beside them", c.Beside)
		}
		fmt.Fprintf(w, ", claim created → Bound (n = %d): p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms. The claim controller: %d reconciles, each %.1f ms queued and %.1f ms reconciling on average; %d background writes held back for binds, %.1f s in all. Operator requests meanwhile (the refill): %s.\n",
			c.N, c.P50Ms, c.P90Ms, c.P99Ms, c.MaxMs, c.Reconciles, c.MeanQueueWaitMs, c.MeanReconcileMs, c.HeldWrites, c.HeldSeconds, c.OperatorRequests)
	}
	if len(r.Baselines) > 0 {
		where := "on the same control plane, after the other phases"
		if r.BaselineFresh {
			where = "on a fresh control plane holding only the admission policies"
		}
		fmt.Fprintf(w, "\nRaw-write baseline (a plain client, no operator, no client rate limit; the Tenant and what Landlord wrote for it, copied and renamed; %s):\n", where)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| requests in flight | objects per tenant | create: time | requests | CPU apiserver / etcd | shared-secret change: time | requests |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
		for _, b := range r.Baselines {
			fmt.Fprintf(w, "| %d | %d | %.2f s | %s | %.1f / %.1f s | %.2f s | %s |\n", b.Concurrency, b.ObjectsPerTenant,
				b.Create.Seconds, byVerb(b.Create.Requests), b.Create.APIServerCPUSeconds, b.Create.EtcdCPUSeconds, b.FanOut.Seconds, byVerb(b.FanOut.Requests))
		}
		fmt.Fprintf(w, "\nLandlord ÷ fastest baseline: create → all Ready %.2f, shared-secret change %.2f.\n", r.CreateRatio, r.FanOutRatio)
	}
	if len(r.Phases) > 0 && len(r.Phases[0].Shards) > 0 {
		fmt.Fprintf(w, "\n%d shards, each its own process:\n\n", r.Shards)
		fmt.Fprintln(w, "| phase | shard | reconciles | CPU | RSS at end (peak) | live heap |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
		for _, p := range r.Phases {
			for _, f := range p.Shards {
				fmt.Fprintf(w, "| %s | %s | %d | %.1f s | %.0f MiB (%.0f MiB) | %.0f MiB |\n", p.Name, f.Shard, f.Reconciles, f.CPUSeconds, f.RSSMiB, f.PeakRSSMiB, f.LiveHeapMiB)
			}
		}
	}
	printMigrations(w, r.Migrations)
	if r.Backups != nil {
		printBackups(w, r.Backups)
	}
	printSettle(w, r.Settle)
	printSoak(w, r.Soak)
	fmt.Fprintln(w, "\nOperator requests by verb and resource:")
	fmt.Fprintln(w)
	for _, p := range r.Phases {
		fmt.Fprintf(w, "- %s: %s\n", p.Name, p.Operator)
	}
}

// controlPlaneResources are written by the API server itself: its identity leases, the
// endpoints of the kubernetes Service, and the IPAddress objects that back Service IPs. The
// benchmark's operator runs without leader election, so it writes no lease.
var controlPlaneResources = map[string]bool{"leases": true, "endpoints": true, "endpointslices": true, "ipaddresses": true, "servicecidrs": true}

func splitControlPlane(c testenv.Counts) (operator, controlPlane testenv.Counts) {
	operator, controlPlane = testenv.Counts{}, testenv.Counts{}
	for k, v := range c {
		_, resource, _ := strings.Cut(k, " ")
		if controlPlaneResources[strings.SplitN(resource, "/", 2)[0]] {
			controlPlane[k] = v
		} else {
			operator[k] = v
		}
	}
	return operator, controlPlane
}

// writesAndReads splits server counts by verb into writes, reads (GET and LIST) and watches.
func writesAndReads(c testenv.Counts) (writes, reads, watches int) {
	for k, v := range c {
		switch strings.SplitN(k, " ", 2)[0] {
		case "GET", "LIST":
			reads += v
		case "WATCH":
			watches += v
		default:
			writes += v
		}
	}
	return writes, reads, watches
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func byVerb(c testenv.Counts) string {
	verbs := map[string]int{}
	for k, v := range c {
		verbs[strings.SplitN(k, " ", 2)[0]] += v
	}
	parts := make([]string, 0, len(verbs))
	for _, k := range slices.Sorted(maps.Keys(verbs)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, verbs[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
