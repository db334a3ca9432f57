package faults_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/landlord-dev/landlord/internal/childproc"
)

// acquiredLease is what leader election logs (in any case) when this process became the leader.
const acquiredLease = "successfully acquired lease"

// operatorProcess is one run of the landlord binary, its output in a log file of its own.
type operatorProcess struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// startOperator runs the landlord binary as the shipped ServiceAccount, electing a leader in
// landlord-system as a Deployment's replicas do; args come after the suite's own flags and win
// over them. The process is killed when the test ends, if it is still running; the tail of its
// log is printed then if the test failed.
func startOperator(t *testing.T, name string, args ...string) *operatorProcess {
	t.Helper()
	p := &operatorProcess{name: name, logPath: filepath.Join(work, name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the process has its own descriptor
	p.cmd = exec.Command(filepath.Join(work, "landlord"), append([]string{
		"--config=" + filepath.Join(work, "landlord.yaml"), "--embedded=never",
		"--leader-elect", "--leader-election-namespace=" + operatorNamespace,
		"--leader-election-lease-duration=" + leaseDuration.String(),
		"--leader-election-renew-deadline=" + renewDeadline.String(),
		"--leader-election-retry-period=" + retryPeriod.String(),
		"--metrics-bind-address=0", "--health-probe-bind-address=" + freeAddr(t),
	}, args...)...)
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(work, "operator.kubeconfig"))
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	// The operator dies with the test process, however that ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// From childproc's locked thread, so that the death signal comes when the test process ends.
	if err := childproc.Start(p.cmd); err != nil {
		t.Fatalf("starting operator %s: %v", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if p.running() {
			p.kill(t)
		}
		if t.Failed() {
			t.Logf("operator %s log (%s) ends with:\n%s", p.name, p.logPath, p.logTail(60))
		}
	})
	return p
}

func (p *operatorProcess) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the operator, as the kernel's OOM killer or a node failure would: nothing it
// holds (the lease, a half-done reconcile) is released, and waits until it is gone.
func (p *operatorProcess) kill(t *testing.T) {
	t.Helper()
	if !p.running() {
		t.Fatalf("operator %s had exited before it was killed: %v\n%s", p.name, p.waitErr, p.logTail(40))
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing operator %s: %v", p.name, err)
	}
	<-p.exited
}

// stop asks the operator to shut down (SIGTERM, as a rolling update does) and waits until it
// has: it releases its lease on the way out.
func (p *operatorProcess) stop(t *testing.T) {
	t.Helper()
	if !p.running() {
		t.Errorf("operator %s had exited before it was stopped: %v\n%s", p.name, p.waitErr, p.logTail(40))
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("operator %s did not stop within 30s of SIGTERM; killed", p.name)
		p.kill(t)
	}
}

// log is everything the operator wrote so far.
func (p *operatorProcess) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func (p *operatorProcess) logTail(lines int) string {
	all := strings.Split(strings.TrimRight(p.log(), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// isLeader is whether the process says it acquired the lease.
func (p *operatorProcess) isLeader() bool {
	return strings.Contains(strings.ToLower(p.log()), acquiredLease)
}

// lease returns the leader election lease, or nil when there is none.
func lease(g Gomega) *coordinationv1.Lease {
	l, err := env.Clientset.CoordinationV1().Leases(operatorNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return l
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitLeader waits until the process holds the lease: it is the only one running and the lease
// was deleted before it started, so a lease with a holder is its own.
func waitLeader(t *testing.T, p *operatorProcess) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(p.running()).To(BeTrue(), "operator %s exited: %v\n%s", p.name, p.waitErr, p.logTail(40))
		g.Expect(holder(lease(g))).NotTo(BeEmpty(), "no process holds the lease")
		g.Expect(p.isLeader()).To(BeTrue(), "operator %s does not say it acquired the lease", p.name)
	}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// deleteLease removes the lease a killed leader left behind, as an administrator in a hurry
// would: its successor then takes over at once instead of after the lease duration.
func deleteLease(t *testing.T) {
	t.Helper()
	err := env.Clientset.CoordinationV1().Leases(operatorNamespace).Delete(context.Background(), leaseName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting the lease: %v", err)
	}
}

// operatorErrors are the distinct error-level lines the processes logged (errors are expected
// while faults are injected; they are not failures), each with how many times it came, in
// order of first appearance. Lines are told apart by message and error, not by time or object.
func operatorErrors(procs ...*operatorProcess) (lines []string, counts map[string]int) {
	counts = map[string]int{}
	for _, p := range procs {
		for _, line := range strings.Split(p.log(), "\n") {
			key := ""
			switch {
			case strings.HasPrefix(line, "{"):
				var entry struct{ Level, Msg, Error string }
				if json.Unmarshal([]byte(line), &entry) != nil || entry.Level != "error" {
					continue
				}
				key = entry.Msg + ": " + entry.Error
			case strings.HasPrefix(line, "E1") || strings.HasPrefix(line, "panic") || strings.HasPrefix(line, "fatal"):
				// klog's error lines start with E and the date; the message follows the "] ".
				_, key, _ = strings.Cut(line, "] ")
				key = truncate(key, 300)
			default:
				continue
			}
			if counts[key] == 0 {
				lines = append(lines, key)
			}
			counts[key]++
		}
	}
	return lines, counts
}

// logOperatorErrors prints the distinct error lines the processes logged, and fails the test on
// any request the API server forbade: the processes run with exactly the shipped RBAC, and
// nothing a scenario does needs more.
func logOperatorErrors(t *testing.T, procs ...*operatorProcess) {
	t.Helper()
	lines, counts := operatorErrors(procs...)
	t.Logf("the operator processes logged %d distinct errors", len(lines))
	for _, l := range lines {
		t.Logf("%d× %s", counts[l], truncate(l, 500))
		if strings.Contains(l, "is forbidden") {
			t.Errorf("the shipped RBAC forbade a request the operator made: %s", truncate(l, 500))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
