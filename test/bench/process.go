package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"

	"github.com/landlord-dev/landlord/test/testenv"
)

// operatorProcess is a running operator process and what the benchmark reads off it: its
// Prometheus metrics (as a scraper would) and its peak resident memory from /proc.
type operatorProcess struct {
	flags   childFlags
	cmd     *exec.Cmd
	started time.Time
	exited  chan error
	http    *http.Client
}

func startOperator(f childFlags) (*operatorProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, f.args()...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if f.memLimit != "" {
		cmd.Env = append(os.Environ(), "GOMEMLIMIT="+f.memLimit)
	}
	// The operator dies with the benchmark, however the benchmark ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &operatorProcess{flags: f, cmd: cmd, exited: make(chan error, 1), http: &http.Client{Timeout: time.Minute}}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := p.metrics(); err == nil {
			return p, nil
		}
		select {
		case err := <-p.exited:
			return nil, fmt.Errorf("operator process exited: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.stop()
			return nil, fmt.Errorf("operator process serves no metrics after 2 minutes")
		}
	}
}

// stop sends SIGTERM, as the kubelet does, and waits for the operator to finish.
func (p *operatorProcess) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-p.exited:
		return err
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("operator did not stop within a minute of SIGTERM")
	}
}

func (p *operatorProcess) metrics() ([]*dto.MetricFamily, error) {
	resp, err := p.http.Get("http://" + p.flags.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	families := make([]*dto.MetricFamily, 0, len(parsed))
	for _, f := range parsed {
		families = append(families, f)
	}
	return families, nil
}

// sample is one scrape of the numbers the benchmark follows.
type sample struct {
	reconciles     float64
	reconcileSecs  float64 // sum of the tenant reconcile time histogram
	cpuSeconds     float64
	rssBytes       float64
	heapInuseBytes float64
	idle           bool
}

func (p *operatorProcess) sample() (sample, error) {
	families, err := p.metrics()
	if err != nil {
		return sample{}, err
	}
	tenant := map[string]string{"controller": "tenant"}
	return sample{
		reconciles:     testenv.SumMetric(families, "controller_runtime_reconcile_total", tenant),
		reconcileSecs:  testenv.SumMetric(families, "controller_runtime_reconcile_time_seconds", tenant),
		cpuSeconds:     testenv.SumMetric(families, "process_cpu_seconds_total", nil),
		rssBytes:       testenv.SumMetric(families, "process_resident_memory_bytes", nil),
		heapInuseBytes: testenv.SumMetric(families, "go_memstats_heap_inuse_bytes", nil),
		idle: testenv.SumMetric(families, "workqueue_depth", map[string]string{"name": "tenant"}) == 0 &&
			testenv.SumMetric(families, "controller_runtime_active_workers", tenant) == 0,
	}, nil
}

// waitReconciled waits until the tenant controller has finished at least n reconciles in this
// process and has stayed idle (nothing queued, nothing running) for half a second.
func (p *operatorProcess) waitReconciled(ctx context.Context, n float64, timeout time.Duration) (sample, error) {
	return p.waitFor(ctx, n, timeout, true, 100*time.Millisecond)
}

// waitFor waits for n reconciles and, with settle, for the controller to stay idle for half a
// second, scraping every interval (a scrape costs the operator CPU too).
func (p *operatorProcess) waitFor(ctx context.Context, n float64, timeout time.Duration, settle bool, interval time.Duration) (sample, error) {
	deadline := time.Now().Add(timeout)
	idleSince := time.Time{}
	for {
		s, err := p.sample()
		if err != nil {
			return s, err
		}
		switch {
		case s.reconciles < n:
			idleSince = time.Time{}
		case !settle:
			return s, nil
		case !s.idle:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) >= 500*time.Millisecond:
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("tenant controller not idle after %d reconciles within %s (%.0f done)", int(n), timeout, s.reconciles)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// peakRSS is the process's high-water mark of resident memory, from /proc.
func (p *operatorProcess) peakRSS() float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

// clientRequests is the operator's own count of the requests it sent, by method and resource.
func (p *operatorProcess) clientRequests() (testenv.Counts, error) {
	resp, err := p.http.Get("http://" + p.flags.controlAddr + "/requests")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := testenv.Counts{}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

func (p *operatorProcess) post(path string) (string, error) {
	resp, err := p.http.Post("http://"+p.flags.controlAddr+path, "", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", path, resp.Status, body)
	}
	return string(body), nil
}

// freeAddr returns a loopback address nothing listens on at the moment.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// controlPlaneCPU is the CPU time, in seconds, that this process's kube-apiserver and etcd
// children have used, from /proc: what the control plane spends serving the operator.
func controlPlaneCPU() (apiserver, etcd float64) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields after the parenthesised name.
		stat := string(data)
		end := strings.LastIndexByte(stat, ')')
		if end < 0 {
			continue
		}
		comm := stat[strings.IndexByte(stat, '(')+1 : end]
		fields := strings.Fields(stat[end+1:])
		if len(fields) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != self {
			continue
		}
		utime, _ := strconv.ParseFloat(fields[11], 64)
		stime, _ := strconv.ParseFloat(fields[12], 64)
		seconds := (utime + stime) / clockTicks
		switch comm {
		case "kube-apiserver":
			apiserver += seconds
		case "etcd":
			etcd += seconds
		}
	}
	return apiserver, etcd
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on Linux.
const clockTicks = 100

// apiServerProfileSeconds is how much of a phase the API server's CPU profile covers: its
// profile endpoint takes the duration up front, and a phase's length is not known then.
const apiServerProfileSeconds = 30

// profileAPIServer takes the API server's CPU profile of the next apiServerProfileSeconds
// (kube-apiserver serves /debug/pprof to an administrator) into file, and reports when done.
func profileAPIServer(ctx context.Context, rc rest.Interface, file string) <-chan error {
	done := make(chan error, 1)
	go func() {
		raw, err := rc.Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(apiServerProfileSeconds)).DoRaw(ctx)
		if err != nil {
			done <- fmt.Errorf("the API server's CPU profile: %w", err)
			return
		}
		done <- os.WriteFile(file, raw, 0o644)
	}()
	return done
}
