package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/test/testenv"
)

// childFlags are what the benchmark passes to the operator process it starts. The operator runs
// in its own process so that its memory and CPU are its own, and so that a restart is a real one:
// new caches, new queues, new metrics.
type childFlags struct {
	kubeconfig string
	storeDir   string
	// backupObjects and backupKey are the operator's backups.objects and backups.key.
	backupObjects, backupKey string
	metricsAddr              string
	controlAddr              string
	qps                      float64
	concurrency              int
	// yieldInFlight is client.yield.inFlight; the configured default when 0.
	yieldInFlight int
	// usageInterval is usage.interval; the configured default when 0.
	usageInterval time.Duration
	// profile, when set, is where the process writes a CPU profile from its start until
	// /profile/stop: how the benchmark profiles a restart.
	profile string
	// memLimit, when set, is the operator process's GOMEMLIMIT (only its own: the control
	// plane the benchmark starts inherits the benchmark's environment).
	memLimit string
	// shard, when set, is the operator shard the process is, with leader election.
	shard string
}

func (c *childFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "child-kubeconfig", "", "Operator process: kubeconfig (impersonating the operator's identity).")
	fs.StringVar(&c.storeDir, "child-store", "", "Operator process: file secret store directory.")
	fs.StringVar(&c.backupObjects, "child-backups-objects", "", "Operator process: backups.objects (backups off when empty).")
	fs.StringVar(&c.backupKey, "child-backups-key", "", "Operator process: backups.key.")
	fs.StringVar(&c.metricsAddr, "child-metrics", "", "Operator process: metrics listen address (plain HTTP).")
	fs.StringVar(&c.controlAddr, "child-control", "", "Operator process: benchmark control listen address.")
	fs.StringVar(&c.profile, "child-profile", "", "Operator process: write a CPU profile from start-up to this file.")
	fs.StringVar(&c.shard, "child-shard", "", "Operator process: the shard it is (with leader election); the default shard when empty.")
}

func (c *childFlags) args() []string {
	return []string{
		"-operator-child",
		"-child-kubeconfig", c.kubeconfig, "-child-store", c.storeDir,
		"-child-backups-objects", c.backupObjects, "-child-backups-key", c.backupKey,
		"-child-metrics", c.metricsAddr, "-child-control", c.controlAddr,
		"-qps", fmt.Sprint(c.qps), "-concurrency", fmt.Sprint(c.concurrency),
		"-yield-in-flight", fmt.Sprint(c.yieldInFlight), "-usage-interval", c.usageInterval.String(),
		"-child-profile", c.profile, "-child-shard", c.shard,
	}
}

// runChild is the operator process: the production wiring (operator.New) plus a control
// endpoint through which the benchmark forces a resync, triggers the template sync and
// profiles. Metrics, including process_cpu_seconds_total and process_resident_memory_bytes,
// are served as in production.
func runChild(c childFlags) error {
	var profile *os.File
	if c.profile != "" {
		f, err := os.Create(c.profile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		profile = f
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return err
	}
	cfg := config.Default()
	if c.qps > 0 {
		cfg.Client.QPS, cfg.Client.Burst = float32(c.qps), int(2*c.qps)
	}
	if c.concurrency > 0 {
		cfg.Controller.MaxConcurrentReconciles = c.concurrency
	}
	if c.yieldInFlight != 0 {
		cfg.Client.Yield.InFlight = c.yieldInFlight
	}
	if c.usageInterval > 0 {
		cfg.Usage.Interval.Duration = c.usageInterval
	}
	if c.backupObjects != "" {
		// The benchmark runs the Jobs itself: the image is never pulled.
		cfg.Backups.Objects, cfg.Backups.Key, cfg.Backups.Image = c.backupObjects, c.backupKey, "landlord-bench/backup:none"
	}
	store, err := secret.NewFileStore(c.storeDir, c.storeDir+"/key.json")
	if err != nil {
		return err
	}
	requests := testenv.NewRequestCounter()
	restCfg.Wrap(requests.Wrap)
	resync := make(chan event.GenericEvent, 1024)
	op, err := operator.New(restCfg, operator.Options{
		Config: cfg, MetricsAddr: c.metricsAddr, MetricsInsecure: true, ProbeAddr: "0",
		Resync: resync, Store: store,
		Shard: c.shard, LeaderElection: c.shard != "", LeaderElectionNamespace: testenv.LeaseNamespace,
	})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	ln, err := net.Listen("tcp", c.controlAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: controlHandler(ctx, op, resync, requests, profile)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	return op.Start(ctx)
}

func controlHandler(ctx context.Context, op *operator.Operator, resync chan<- event.GenericEvent, requests *testenv.RequestCounter, profile *os.File) http.Handler {
	var mu sync.Mutex
	mux := http.NewServeMux()
	// /resync enqueues every tenant in the cache without touching any: the reconciles that
	// follow find nothing to do, which is what a global event costs at steady state.
	mux.HandleFunc("POST /resync", func(w http.ResponseWriter, r *http.Request) {
		tenants := &tenancyv1alpha1.TenantList{}
		if err := op.GetCache().List(r.Context(), tenants, client.UnsafeDisableDeepCopy); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		go func() {
			for i := range tenants.Items {
				t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: tenants.Items[i].Name}}
				select {
				case resync <- event.GenericEvent{Object: t}:
				case <-ctx.Done():
					return
				}
			}
		}()
		fmt.Fprint(w, len(tenants.Items))
	})
	// /requests is the operator's own count of its requests, a cross-check of the server's.
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(requests.Snapshot())
	})
	// /live-heap collects garbage and answers the bytes still allocated: the live heap.
	mux.HandleFunc("POST /live-heap", func(w http.ResponseWriter, r *http.Request) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		fmt.Fprint(w, m.HeapAlloc)
	})
	mux.HandleFunc("POST /template-sync", func(w http.ResponseWriter, r *http.Request) {
		op.TemplateSync.Trigger()
	})
	mux.HandleFunc("POST /profile/start", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if profile != nil {
			http.Error(w, "already profiling", http.StatusConflict)
			return
		}
		f, err := os.Create(r.URL.Query().Get("file"))
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		profile = f
	})
	mux.HandleFunc("POST /profile/stop", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if profile == nil {
			return
		}
		pprof.StopCPUProfile()
		err := profile.Close()
		profile = nil
		if heap := r.URL.Query().Get("heap"); heap != "" {
			err = errors.Join(err, writeHeapProfile(heap))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}
