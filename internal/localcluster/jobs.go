package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// jobRunner runs the container of each Job's pod whose image the cluster knows (Options.Images)
// as a process of this machine, once kwok has made the pod Running, and ends the pod as the
// process ends, as a kubelet would. It also ends the deletion of every pod of a known image,
// once its process is gone: kwok's pod-delete stage leaves those pods to it.
type jobRunner struct {
	cs     kubernetes.Interface
	images map[string]Program
	// podsDir holds each running pod's volumes (<podsDir>/<pod UID>), removed as it ends;
	// logDir each pod's output (<logDir>/<namespace>_<pod>.log).
	podsDir, logDir string
	log             *log.Logger
	logFile         *os.File

	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the goroutines that run processes or write pods.
	wg sync.WaitGroup

	mu sync.Mutex
	// runs are the pods taken, by UID: each runs once.
	runs map[types.UID]*podRun
}

// podRun is one pod's process, from its start to its end.
type podRun struct {
	// Under the runner's mu:
	exited      bool          // the process has ended, or never started
	terminating bool          // the pod is being deleted: the process is told to end
	grace       time.Duration // how long it has to end before it is killed
	terminate   chan struct{} // closed when terminating is set
}

const (
	// maxGrace caps a pod's termination grace period: a deleted pod's process is killed at
	// most this long after it was told to end.
	maxGrace = 30 * time.Second
	// restartedMessage is the end of a pod whose process the local cluster lost.
	restartedMessage = "the local cluster restarted while this pod's container ran: its process was lost, as a node's pods are when the node is"
)

// startJobRunner starts the runner and returns once it has seen every pod.
func startJobRunner(ctx context.Context, cs kubernetes.Interface, images map[string]Program, dataDir, logDir string) (*jobRunner, error) {
	r := &jobRunner{
		cs: cs, images: images,
		podsDir: filepath.Join(dataDir, "pods"), logDir: filepath.Join(logDir, "pods"),
		runs: map[types.UID]*podRun{},
	}
	for _, dir := range []string{r.podsDir, r.logDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(filepath.Join(logDir, "job-runner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	r.logFile, r.log = f, log.New(f, "", log.LstdFlags|log.Lmicroseconds)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods().Informer()
	reg, err := pods.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { r.observe(obj.(*corev1.Pod), initial) },
		UpdateFunc: func(_, obj any) {
			r.observe(obj.(*corev1.Pod), false)
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				r.forget(pod)
			}
		},
	})
	if err != nil {
		return nil, errors.Join(err, r.stop())
	}
	factory.Start(r.ctx.Done())
	r.wg.Go(func() {
		<-r.ctx.Done()
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil, errors.Join(errors.New("the job runner did not see the cluster's pods"), r.stop())
	}
	return r, nil
}

// stop kills every process (the node goes, and its containers with it) and waits for the
// runner's goroutines. A pod whose process it killed is ended by the next start.
func (r *jobRunner) stop() error {
	r.cancel()
	r.wg.Wait()
	return r.logFile.Close()
}

// observe takes a pod as the informer sees it: a pod of a known image being deleted has its
// process told to end, or its deletion ended; a Job's pod of a known image that kwok made
// Running is run, once, when it is not held. One seen Running in the runner's first look at
// the cluster ran under an earlier runner, whose process is gone: it fails.
func (r *jobRunner) observe(pod *corev1.Pod, initial bool) {
	if len(pod.Spec.Containers) == 0 {
		return
	}
	if _, known := r.images[pod.Spec.Containers[0].Image]; !known {
		return
	}
	for _, c := range pod.Spec.InitContainers {
		if _, known := r.images[c.Image]; !known {
			// kwok plays it, as a pod whose containers run no image the cluster knows.
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.runs[pod.UID]
	if pod.DeletionTimestamp != nil {
		if run != nil && !run.exited {
			run.askToEnd(grace(pod))
			return
		}
		r.wg.Go(func() { r.finishDeletion(pod) })
		return
	}
	if run != nil || !ownedByJob(pod) || !startedByKwok(pod) {
		return
	}
	if _, held := pod.Annotations[HoldAnnotation]; held {
		return
	}
	run = &podRun{terminate: make(chan struct{})}
	r.runs[pod.UID] = run
	if initial {
		run.exited = true
		r.wg.Go(func() { r.fail(pod, 137, "Error", restartedMessage) })
		return
	}
	if why := unsupported(pod); why != "" {
		run.exited = true
		r.wg.Go(func() { r.fail(pod, 128, "StartError", why) })
		return
	}
	r.wg.Go(func() { r.run(pod, run) })
}

// forget drops a deleted pod, and kills its process should it still run (a pod deleted at
// once, without its grace period).
func (r *jobRunner) forget(pod *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if run := r.runs[pod.UID]; run != nil && !run.exited {
		run.askToEnd(0)
	}
	delete(r.runs, pod.UID)
}

// askToEnd tells the process to end within grace; under the runner's mu.
func (run *podRun) askToEnd(grace time.Duration) {
	if run.terminating {
		return
	}
	run.terminating, run.grace = true, grace
	close(run.terminate)
}

// ownedByJob reports whether the pod says a Job owns it: the runner's cue to look at it, not
// proof (checkJob).
func ownedByJob(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Job" })
}

// checkJob is nil when the pod is controlled by a Job that exists: its controller reference
// names a batch/v1 Job of its namespace, and that Job has the reference's UID. An
// ownerReference is whatever its pod's author wrote; only a pod the Job controller made for a
// Job runs here.
func checkJob(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) error {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return errors.New("the local cluster runs only a Job's pod, and this pod's controller is not a Job")
	}
	job, err := cs.BatchV1().Jobs(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && job.UID != ref.UID {
		return fmt.Errorf("the local cluster runs only a Job's pod, and this pod's controller, Job %s (UID %s), does not exist", ref.Name, ref.UID)
	}
	if err != nil {
		return fmt.Errorf("reading the pod's Job %s: %w", ref.Name, err)
	}
	return nil
}

// startedByKwok reports whether kwok has made the pod Running, its container started.
func startedByKwok(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && len(pod.Status.ContainerStatuses) > 0 &&
		pod.Status.ContainerStatuses[0].State.Running != nil
}

// unsupported says why a Job's pod of a known image cannot run here, or "".
func unsupported(pod *corev1.Pod) string {
	switch {
	case len(pod.Spec.Containers) > 1:
		return fmt.Sprintf("the local cluster runs a Job's pod of one container (after its init containers), not %d", len(pod.Spec.Containers))
	case slices.ContainsFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.RestartPolicy != nil }):
		return "the local cluster runs no sidecar (an init container with a restartPolicy)"
	}
	return ""
}

// grace is how long a deleted pod's process has to end, capped at maxGrace.
func grace(pod *corev1.Pod) time.Duration {
	seconds := ptr.Deref(pod.DeletionGracePeriodSeconds, ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 30))
	return min(time.Duration(seconds)*time.Second, maxGrace)
}

// run runs the pod's container to its end and writes how it ended.
func (r *jobRunner) run(pod *corev1.Pod, run *podRun) {
	dir := filepath.Join(r.podsDir, string(pod.UID))
	// The volumes hold the pod's secrets: they go with the process.
	defer func() { _ = os.RemoveAll(dir) }()
	// The init containers run one after the other, then the container, each only once the one
	// before it exited 0, as a kubelet runs them; they share the pod's volumes.
	ends := map[string]*corev1.ContainerStateTerminated{}
	var ended *corev1.ContainerStateTerminated
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers[0]) {
		var ok bool
		ended, ok = r.execute(pod, c, run, dir)
		if !ok {
			r.mu.Lock()
			run.exited = true
			r.mu.Unlock()
			return
		}
		ends[c.Name] = ended
		if ended.ExitCode != 0 {
			break
		}
	}
	r.mu.Lock()
	run.exited = true
	deleting := run.terminating
	r.mu.Unlock()
	phase := corev1.PodSucceeded
	if ended.ExitCode != 0 {
		phase = corev1.PodFailed
	}
	r.log.Printf("pod %s/%s (%s) exited %d", pod.Namespace, pod.Name, pod.UID, ended.ExitCode)
	if err := r.end(pod, phase, ends, deleting); err != nil {
		r.log.Printf("pod %s/%s (%s): writing its end: %v", pod.Namespace, pod.Name, pod.UID, err)
	}
}

// execute runs one container's process; ok is false when the runner stopped it, which writes
// nothing. A pod asked to end stops the process it runs, and runs no other.
func (r *jobRunner) execute(pod *corev1.Pod, c corev1.Container, run *podRun, dir string) (ended *corev1.ContainerStateTerminated, ok bool) {
	started := metav1.Now()
	select {
	case <-run.terminate:
		return &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", Message: "the pod was deleted before this container started", StartedAt: started, FinishedAt: started}, r.ctx.Err() == nil
	default:
	}
	startFailed := func(err error) (*corev1.ContainerStateTerminated, bool) {
		r.log.Printf("pod %s/%s (%s) did not start: %v", pod.Namespace, pod.Name, pod.UID, err)
		return &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: started, FinishedAt: metav1.Now()}, r.ctx.Err() == nil
	}
	if err := checkJob(r.ctx, r.cs, pod); err != nil {
		return startFailed(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return startFailed(err)
	}
	p, err := prepareContainer(r.ctx, r.cs, pod, c, r.images[c.Image], dir)
	if err != nil {
		return startFailed(err)
	}
	logPath := filepath.Join(r.logDir, pod.Namespace+"_"+pod.Name+".log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return startFailed(err)
	}
	defer func() { _ = out.Close() }()
	offset, _ := out.Seek(0, io.SeekEnd)
	cmd := exec.Command(p.path, p.args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = p.env, p.dir, out, out
	// Its own process group, which ends as a whole as a container's processes do; and should
	// this process die without stopping it, the kernel ends it too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started = metav1.Now()
	if err := cmd.Start(); err != nil {
		return startFailed(err)
	}
	r.log.Printf("pod %s/%s (%s) runs %s (pid %d)", pod.Namespace, pod.Name, pod.UID, p.path, cmd.Process.Pid)
	exited := make(chan struct{})
	go func() {
		// How it ended is the process's state, which Wait sets whatever it returns.
		_ = cmd.Wait()
		close(exited)
	}()
	pgid := cmd.Process.Pid
	kill := func(sig syscall.Signal) { _ = syscall.Kill(-pgid, sig) }
	select {
	case <-exited:
	case <-r.ctx.Done():
		// The runner stops: the process goes with it, and its end is written by the next start.
		kill(syscall.SIGKILL)
		<-exited
		return nil, false
	case <-run.terminate:
		r.mu.Lock()
		g := run.grace
		r.mu.Unlock()
		kill(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(g):
			kill(syscall.SIGKILL)
			<-exited
		case <-r.ctx.Done():
			kill(syscall.SIGKILL)
			<-exited
			return nil, false
		}
	}
	// What the process left running ends with it, as a container's processes do.
	kill(syscall.SIGKILL)
	ended = &corev1.ContainerStateTerminated{ExitCode: exitCode(cmd.ProcessState), Reason: "Completed", StartedAt: started, FinishedAt: metav1.Now()}
	if ended.ExitCode != 0 {
		ended.Reason = "Error"
	}
	ended.Message = terminationMessage(p.terminationFile, logPath, offset, c.TerminationMessagePolicy, ended.ExitCode)
	return ended, true
}

// exitCode is the process's exit code; one killed by a signal ends with 128 plus the signal,
// as a container does.
func exitCode(state *os.ProcessState) int32 {
	if state == nil {
		return 128
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	if code := state.ExitCode(); code >= 0 {
		return int32(code)
	}
	return 128
}

// terminationMessage is what the container wrote to its termination message file, or, under
// FallbackToLogsOnError when it failed and wrote nothing, the end of its output: its last 80
// lines, at most 2,048 bytes of them, as the kubelet reads them.
func terminationMessage(file, logPath string, offset int64, policy corev1.TerminationMessagePolicy, code int32) string {
	msg, _ := readAt(file, 0, maxTerminationMessage)
	if len(msg) > 0 || policy != corev1.TerminationMessageFallbackToLogsOnError || code == 0 {
		return string(msg)
	}
	out, _ := readAt(logPath, offset, -1)
	lines := strings.SplitAfter(string(out), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	tail := strings.Join(lines[max(0, len(lines)-fallbackLines):], "")
	if len(tail) > fallbackBytes {
		tail = tail[len(tail)-fallbackBytes:]
	}
	return tail
}

// readAt reads a file from offset, at most limit bytes (all with -1).
func readAt(path string, offset int64, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var rd io.Reader = f
	if limit >= 0 {
		rd = io.LimitReader(f, limit)
	}
	return io.ReadAll(rd)
}

// fail ends a pod that cannot run, or whose process was lost, with the code and message.
func (r *jobRunner) fail(pod *corev1.Pod, code int32, reason, message string) {
	now := metav1.Now()
	r.log.Printf("pod %s/%s (%s) fails: %s", pod.Namespace, pod.Name, pod.UID, message)
	ended := &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: message, StartedAt: now, FinishedAt: now}
	if err := r.end(pod, corev1.PodFailed, map[string]*corev1.ContainerStateTerminated{pod.Spec.Containers[0].Name: ended}, false); err != nil {
		r.log.Printf("pod %s/%s (%s): writing its end: %v", pod.Namespace, pod.Name, pod.UID, err)
	}
}

// end writes the pod's end (its phase, each container that ran terminated as ends says), as a
// kubelet does, and ends the deletion of a pod being deleted.
func (r *jobRunner) end(pod *corev1.Pod, phase corev1.PodPhase, ends map[string]*corev1.ContainerStateTerminated, deleting bool) error {
	pods := r.cs.CoreV1().Pods(pod.Namespace)
	var latest *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if latest, err = pods.Get(r.ctx, pod.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		if latest.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		endStatus(&latest.Status, latest.Spec, phase, ends)
		latest, err = pods.UpdateStatus(r.ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if deleting || latest.DeletionTimestamp != nil {
		r.finishDeletion(latest)
	}
	return nil
}

// endStatus sets a pod's status to its containers' ends: a container that never ran (after an
// init container that failed) waits, as a kubelet leaves it.
func endStatus(status *corev1.PodStatus, spec corev1.PodSpec, phase corev1.PodPhase, ends map[string]*corev1.ContainerStateTerminated) {
	status.Phase = phase
	statusesOf := func(containers []corev1.Container, old []corev1.ContainerStatus) []corev1.ContainerStatus {
		statuses := make([]corev1.ContainerStatus, len(containers))
		for i, c := range containers {
			statuses[i] = corev1.ContainerStatus{Name: c.Name, Image: c.Image}
			if j := slices.IndexFunc(old, func(s corev1.ContainerStatus) bool { return s.Name == c.Name }); j >= 0 {
				statuses[i] = old[j]
			}
			statuses[i].Ready, statuses[i].Started = false, ptr.To(false)
			if ended := ends[c.Name]; ended != nil {
				statuses[i].State = corev1.ContainerState{Terminated: ended.DeepCopy()}
			} else {
				statuses[i].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			}
		}
		return statuses
	}
	status.ContainerStatuses = statusesOf(spec.Containers, status.ContainerStatuses)
	if len(spec.InitContainers) > 0 {
		status.InitContainerStatuses = statusesOf(spec.InitContainers, status.InitContainerStatuses)
	}
	now := metav1.Now()
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		cond := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now}
		if i := slices.IndexFunc(status.Conditions, func(c corev1.PodCondition) bool { return c.Type == t }); i >= 0 {
			status.Conditions[i] = cond
		} else {
			status.Conditions = append(status.Conditions, cond)
		}
	}
}

// finishDeletion removes a pod being deleted whose process has ended, as a kubelet does once
// its containers have stopped.
func (r *jobRunner) finishDeletion(pod *corev1.Pod) {
	err := r.cs.CoreV1().Pods(pod.Namespace).Delete(r.ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && r.ctx.Err() == nil {
		r.log.Printf("pod %s/%s (%s): ending its deletion: %v", pod.Namespace, pod.Name, pod.UID, err)
	}
}

// stagesFor is kwok's stages with the known images' pods left to the runner: kwok neither
// completes nor fails a Job's pod of a known image, and does not end a known image's pod's
// deletion. It still makes them Running.
func stagesFor(stages []byte, images map[string]Program) ([]byte, error) {
	if len(images) == 0 {
		return stages, nil
	}
	known := make([]any, 0, len(images))
	for image := range images {
		known = append(known, image)
	}
	slices.SortFunc(known, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	docs := bytes.Split(stages, []byte("\n---\n"))
	for i, doc := range docs {
		var stage map[string]any
		if err := yaml.Unmarshal(doc, &stage); err != nil {
			return nil, fmt.Errorf("reading kwok's stages: %w", err)
		}
		name, _, _ := unstructured.NestedString(stage, "metadata", "name")
		if !slices.Contains([]string{"pod-complete", "pod-fail", "pod-delete"}, name) {
			continue
		}
		exprs, _, err := unstructured.NestedSlice(stage, "spec", "selector", "matchExpressions")
		if err != nil {
			return nil, fmt.Errorf("kwok's stage %s: %w", name, err)
		}
		exprs = append(exprs, map[string]any{"key": ".spec.containers.[0].image", "operator": "NotIn", "values": known})
		if err := unstructured.SetNestedSlice(stage, exprs, "spec", "selector", "matchExpressions"); err != nil {
			return nil, err
		}
		out, err := yaml.Marshal(stage)
		if err != nil {
			return nil, err
		}
		docs[i] = out
	}
	return bytes.Join(docs, []byte("\n---\n")), nil
}
