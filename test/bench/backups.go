package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/controller/backupjobs"
	"github.com/landlord-dev/landlord/internal/jobs"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// The -backups phase: one TenantBackupSchedule over every tenant, its window spreading them,
// their databases on two PostgreSQL servers, each server's limit of Jobs at once (4 by default)
// holding. The control plane has no Job controller and no nodes: the benchmark runs each backup
// Job's two steps itself, in this process, with the same code as the Job's containers (`landlord
// job`: real pg_dump against the real servers, real uploads to an S3 server, sealed under keys
// wrapped by an AWS KMS emulator), then writes the Job's end as the Job controller would.

const phaseBackups = "backup schedule over all N tenants until the last backup succeeded"

// backupsReport is what the phase measured.
type backupsReport struct {
	Window     string `json:"window"`
	Backups    int    `json:"backups"`
	Succeeded  int    `json:"succeeded"`
	Failed     int    `json:"failed"`
	ScheduleAt string `json:"scheduleTime"`
	// FirstSuccessSeconds and LastSuccessSeconds are from the run's schedule time, the window's
	// start.
	FirstSuccessSeconds float64      `json:"firstSuccessSeconds"`
	LastSuccessSeconds  float64      `json:"lastSuccessSeconds"`
	WindowEndSeconds    float64      `json:"windowEndSeconds"`
	Servers             []serverJobs `json:"servers"`
	OverLimit           []string     `json:"overLimit,omitempty"`
	WritesPerBackup     float64      `json:"writesPerBackup"`
	JobSeconds          []float64    `json:"-"`
	JobP50              float64      `json:"jobP50Seconds,omitempty"`
	JobP99              float64      `json:"jobP99Seconds,omitempty"`
	StoredBytes         int64        `json:"storedBytes"`
}

// startBackupStore starts an S3 server and an AWS KMS emulator in this process, and sets the
// AWS environment the operator's process inherits; it returns the store's and the key's URLs.
func startBackupStore(ctx context.Context, dir string) (objects, key string, stop func(), err error) {
	for k, v := range secrettest.AWSEnvironment {
		if err := os.Setenv(k, v); err != nil {
			return "", "", nil, err
		}
	}
	s3, err := secrettest.StartS3("backups")
	if err != nil {
		return "", "", nil, err
	}
	kms := secrettest.StartAWSKMS(filepath.Join(dir, "kms"))
	stop = func() { kms.Close(); s3.Close() }
	if key, err = kms.CreateKey(ctx); err != nil {
		stop()
		return "", "", nil, err
	}
	return s3.URL("backups", "landlord/"), key, stop, nil
}

// runBackups runs the phase.
func runBackups(ctx context.Context, c client.Client, cfg *rest.Config, watched *benchCache, namespace string, record func(string, func() error) error, p params, timeout time.Duration) (*backupsReport, error) {
	limits, err := serverLimits(ctx, c)
	if err != nil {
		return nil, err
	}
	tracker := newJobTracker(limits)
	runner := &backupJobRunner{c: c, namespace: namespace, tracker: tracker}
	jobsCtx, stopJobs := context.WithCancel(ctx)
	defer stopJobs()
	if err := runner.start(jobsCtx, cfg, limits); err != nil {
		return nil, err
	}

	// The run starts at the next whole minute at least 20 seconds away: a daily schedule at that
	// minute, so that no second run follows.
	at := time.Now().UTC().Add(20 * time.Second).Truncate(time.Minute).Add(time.Minute)
	rep := &backupsReport{Window: p.backupWindow.String(), ScheduleAt: at.Format(time.RFC3339)}
	schedule := &tenancyv1alpha1.TenantBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-nightly"},
		Spec: tenancyv1alpha1.TenantBackupScheduleSpec{
			Schedule: fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour()),
			Window:   &metav1.Duration{Duration: p.backupWindow},
			Keep:     1,
		},
	}
	fmt.Fprintf(os.Stderr, "backing up %d tenants from %s over %s...\n", p.tenants, at.Format(time.TimeOnly), p.backupWindow)
	var backups []tenancyv1alpha1.TenantBackup
	ph := func() error {
		if err := c.Create(ctx, schedule); err != nil {
			return err
		}
		deadline := at.Add(p.backupWindow).Add(timeout)
		for {
			list := &tenancyv1alpha1.TenantBackupList{}
			if err := c.List(ctx, list, client.MatchingLabels{tenancyv1alpha1.BackupScheduleLabel: schedule.Name}); err != nil {
				return err
			}
			ended := 0
			for _, b := range list.Items {
				if b.Status.Phase == tenancyv1alpha1.BackupSucceeded || b.Status.Phase == tenancyv1alpha1.BackupFailed {
					ended++
				}
			}
			if ended >= p.tenants {
				backups = list.Items
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d of %d backups ended by %s", ended, p.tenants, deadline.Format(time.TimeOnly))
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Second):
			}
		}
	}
	if err := record(phaseBackups, ph); err != nil {
		return nil, err
	}
	rep.Backups = len(backups)
	first, last := time.Duration(-1), time.Duration(0)
	for _, b := range backups {
		if b.Status.Phase != tenancyv1alpha1.BackupSucceeded {
			rep.Failed++
			continue
		}
		rep.Succeeded++
		rep.StoredBytes += b.Status.Size
		if b.Status.CompletionTime != nil {
			d := b.Status.CompletionTime.Sub(at)
			if first < 0 || d < first {
				first = d
			}
			last = max(last, d)
		}
	}
	rep.FirstSuccessSeconds, rep.LastSuccessSeconds = first.Seconds(), last.Seconds()
	rep.WindowEndSeconds = p.backupWindow.Seconds()
	tenantsOn, err := watched.tenantsByServer(ctx)
	if err != nil {
		return nil, err
	}
	rep.Servers = tracker.figures(tenantsOn)
	rep.OverLimit = tracker.overLimit()
	rep.JobSeconds = runner.durations()
	if n := len(rep.JobSeconds); n > 0 {
		rep.JobP50, rep.JobP99 = rep.JobSeconds[n/2], rep.JobSeconds[min(n-1, n*99/100)]
	}
	for _, s := range rep.Servers {
		fmt.Fprintf(os.Stderr, "  %s: %d tenants, %d backup Jobs, at most %d running at once (limit %d)\n", s.Server, s.Tenants, s.Jobs, s.MaxRunning, s.Limit)
	}
	if len(rep.OverLimit) > 0 {
		return rep, fmt.Errorf("backup Jobs over a server's limit: %s", strings.Join(rep.OverLimit, "; "))
	}
	if rep.Failed > 0 {
		return rep, fmt.Errorf("%d of %d backups failed", rep.Failed, rep.Backups)
	}
	return rep, nil
}

// decodePlan reads a step's plan as `landlord job` does: a field it does not know is refused.
func decodePlan(data []byte) (backup.Plan, error) {
	var plan backup.Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return plan, dec.Decode(&plan)
}

// backupJobRunner runs backup Jobs as their pods would, a server's limit of them at once at most
// (the operator's limit; the tracker checks it holds).
type backupJobRunner struct {
	c         client.Client
	namespace string
	tracker   *jobTracker
	mu        sync.Mutex
	seconds   []float64
}

func (r *backupJobRunner) start(ctx context.Context, cfg *rest.Config, limits map[string]int) error {
	isBackup, err := labels.NewRequirement(tenancyv1alpha1.BackupJobLabel, selection.Equals, []string{string(backup.OpBackup)})
	if err != nil {
		return err
	}
	jobCache, err := cache.New(cfg, cache.Options{
		Scheme:            r.c.Scheme(),
		DefaultTransform:  cache.TransformStripManagedFields(),
		DefaultNamespaces: map[string]cache.Config{r.namespace: {}},
		ByObject:          map[client.Object]cache.ByObject{&batchv1.Job{}: {Label: labels.NewSelector().Add(*isBackup)}},
	})
	if err != nil {
		return err
	}
	informer, err := jobCache.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		return err
	}
	toRun := make(chan *batchv1.Job, 1<<16)
	observe := func(obj any, gone bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if j, ok := obj.(*batchv1.Job); ok {
			r.tracker.observe(j, gone)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			observe(obj, false)
			if j, ok := obj.(*batchv1.Job); ok {
				if ended, _, _ := jobs.Ended(j); !ended {
					toRun <- j.DeepCopy()
				}
			}
		},
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	}); err != nil {
		return err
	}
	// As many workers as the servers' limits together: the operator starts no more than that.
	workers := 0
	for _, l := range limits {
		workers += l
	}
	for range max(workers, 1) {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-toRun:
					if err := r.run(ctx, j); err != nil && ctx.Err() == nil {
						fmt.Fprintf(os.Stderr, "backup Job %s: %v\n", j.Name, err)
					}
				}
			}
		}()
	}
	go func() { _ = jobCache.Start(ctx) }()
	if !jobCache.WaitForCacheSync(ctx) {
		return fmt.Errorf("backup Jobs' cache did not sync")
	}
	return nil
}

// run carries out the Job's two steps from its plan Secret, then writes its end.
func (r *backupJobRunner) run(ctx context.Context, j *batchv1.Job) error {
	start := time.Now()
	s := &corev1.Secret{}
	if err := r.c.Get(ctx, client.ObjectKey{Namespace: j.Namespace, Name: j.Name}, s); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "landlord-bench-job-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var runErr error
	for _, op := range []backup.Operation{backup.OpDump, backup.OpSeal} {
		plan, err := decodePlan(s.Data[backupjobs.StepKey(op)])
		if err == nil {
			err = backup.RunJob(ctx, plan, backup.FindTools(), filepath.Join(dir, "dumps"), io.Discard)
		}
		if err != nil {
			runErr = fmt.Errorf("%s: %w", op, err)
			break
		}
	}
	r.mu.Lock()
	r.seconds = append(r.seconds, time.Since(start).Seconds())
	r.mu.Unlock()
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "backup Job %s failed: %v\n", j.Name, runErr)
		return failJob(ctx, r.c, j, runErr.Error())
	}
	return completeJob(ctx, r.c, j)
}

// durations are the Jobs' run times, sorted.
func (r *backupJobRunner) durations() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]float64(nil), r.seconds...)
	sort.Float64s(out)
	return out
}

// failJob writes the status the Job controller writes when a Job's one pod failed.
func failJob(ctx context.Context, c client.Client, j *batchv1.Job, message string) error {
	now := metav1.Now()
	if j.Status.StartTime == nil {
		j.Status.StartTime = &j.CreationTimestamp
	}
	j.Status.Failed, j.Status.Active = 1, 0
	j.Status.Ready, j.Status.Terminating = ptrTo(int32(0)), ptrTo(int32(0))
	j.Status.Conditions = append(j.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: message, LastProbeTime: now, LastTransitionTime: now},
		batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, Message: message, LastProbeTime: now, LastTransitionTime: now},
	)
	return client.IgnoreNotFound(c.Status().Update(ctx, j))
}

func printBackups(w io.Writer, b *backupsReport) {
	fmt.Fprintf(w, "\n### Backups: one schedule over every tenant\n\n")
	fmt.Fprintf(w, "A TenantBackupSchedule over all %d tenants, window %s, starting %s; each tenant's database on one of two PostgreSQL servers. Each Job's two steps run in the benchmark's process (real pg_dump, real uploads to an S3 server, keys wrapped by an AWS KMS emulator).\n\n", b.Backups, b.Window, b.ScheduleAt)
	fmt.Fprintf(w, "| backups | succeeded | failed | first success | last success | window end | Job time p50 / p99 (n=%d) | stored |\n|---|---|---|---|---|---|---|---|\n", len(b.JobSeconds))
	fmt.Fprintf(w, "| %d | %d | %d | %.0f s | %.0f s | %.0f s | %.2f / %.2f s | %.1f MiB |\n\n", b.Backups, b.Succeeded, b.Failed,
		b.FirstSuccessSeconds, b.LastSuccessSeconds, b.WindowEndSeconds, b.JobP50, b.JobP99, float64(b.StoredBytes)/(1<<20))
	fmt.Fprintln(w, "| server | tenants' databases | limit of Jobs at once | backup Jobs | most running at once |\n|---|---|---|---|---|")
	for _, s := range b.Servers {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", s.Server, s.Tenants, s.Limit, s.Jobs, s.MaxRunning)
	}
	if len(b.OverLimit) > 0 {
		fmt.Fprintf(w, "\nOVER THE LIMIT: %v\n", b.OverLimit)
	}
	fmt.Fprintf(w, "\nOperator writes per backup: %.1f.\n", b.WritesPerBackup)
}
