package main

// The migrations figure (-rollout-migrations): the component is rolled out to a version without
// migrations, then to one with a pre migration, across every tenant, the tenants' databases
// spread over two PostgreSQL servers. Both rollouts move all tenants in one wave (batchSize
// 100%), so that the second one's pace is set by the servers' limits of migration Jobs
// (spec.maxConcurrentJobs, left at its default) rather than by waves.
//
// The benchmark's control plane runs no Job controller and no nodes: the benchmark plays them,
// completing each migration Job (after -migration-job-time) as the Job controller would once its
// pod ended. Its writes are the benchmark's, left out of the operator's counts. What the figure
// measures is Landlord's orchestration of the migrations, not the migrations themselves.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
)

// Phase names of the two rollouts.
const (
	phaseRolloutPlain    = "rollout without migrations until all N Ready at it"
	phaseRolloutMigrated = "rollout with a pre migration until all N Ready at it"
)

// The versions the rollouts move the component to, from 1.0.0.
const (
	plainVersion    = "1.1.0"
	migratedVersion = "1.2.0"
	// migrationImage is an image the cluster does not run: the benchmark completes its Jobs.
	migrationImage = "registry.example.com/bench/migrate:1.2.0"
)

// migrationsReport is what the rollout with a pre migration ran on each database server.
type migrationsReport struct {
	// JobSeconds is how long each migration Job ran before the benchmark completed it.
	JobSeconds float64       `json:"jobSeconds"`
	Servers    []serverJobs  `json:"servers"`
	BatchSize  string        `json:"batchSize"`
	Backup     string        `json:"backup"`
	Rollouts   []rolloutInfo `json:"rollouts"`
}

// serverJobs is one database server's migration Jobs in the rollout.
type serverJobs struct {
	Server  string `json:"server"`
	Tenants int    `json:"tenants"`
	// Limit is the server's spec.maxConcurrentJobs, or its default.
	Limit int `json:"limit"`
	// Jobs is how many migration Jobs ran against it; MaxRunning the most at once (created and
	// not yet Complete or Failed), as the benchmark's watch of Jobs saw them.
	Jobs       int `json:"jobs"`
	MaxRunning int `json:"maxRunning"`
}

// rolloutInfo is one rollout's own account, from its status.
type rolloutInfo struct {
	Version string `json:"version"`
	Done    int32  `json:"done"`
	Failed  int32  `json:"failed"`
}

// serverCount is how many PostgreSQL servers the benchmark starts.
func serverCount(p params) int {
	if p.rolloutMigrations || p.backups {
		return 2
	}
	return 1
}

// serverName is the name of the benchmark's i-th DatabaseServer.
func serverName(i int) string {
	if i == 0 {
		return "bench-pg"
	}
	return fmt.Sprintf("bench-pg-%d", i+1)
}

// migratedComponent is benchComponentAt(migratedVersion) with one pre migration naming the
// tenant's first database, in an image the cluster does not run, without a backup (the
// benchmark has no backup store).
func migratedComponent() *tenancyv1alpha1.ComponentTemplate {
	tpl := benchComponentAt(migratedVersion)
	tpl.Spec.Migrations = &tenancyv1alpha1.Migrations{
		Backup: tenancyv1alpha1.MigrationBackupOff,
		Pre: []tenancyv1alpha1.MigrationJob{{
			Name: "schema", Image: migrationImage,
			Args:      []string{"ALTER TABLE IF EXISTS items ADD COLUMN IF NOT EXISTS note text"},
			Databases: []string{"db0"},
		}},
	}
	return tpl
}

// runRollouts runs the two rollouts as phases of the report, and says what the second one ran
// on each server. It fails when a server had more migration Jobs running at once than its limit.
func runRollouts(ctx context.Context, c client.Client, cfg *rest.Config, watched *benchCache, record func(string, func() error) error, p params, timeout time.Duration) (*migrationsReport, error) {
	for _, tpl := range []*tenancyv1alpha1.ComponentTemplate{benchComponentAt(plainVersion), migratedComponent()} {
		if err := c.Create(ctx, tpl); err != nil {
			return nil, err
		}
	}
	limits, err := serverLimits(ctx, c)
	if err != nil {
		return nil, err
	}
	tracker := newJobTracker(limits)
	jobCtx, stopJobs := context.WithCancel(ctx)
	defer stopJobs()
	if err := playMigrationJobs(jobCtx, cfg, c, tracker, p.migrationJobTime); err != nil {
		return nil, err
	}

	rep := &migrationsReport{JobSeconds: p.migrationJobTime.Seconds(), BatchSize: "100%", Backup: string(tenancyv1alpha1.MigrationBackupOff)}
	for _, version := range []string{plainVersion, migratedVersion} {
		name := phaseRolloutPlain
		if version == migratedVersion {
			name = phaseRolloutMigrated
		}
		fmt.Fprintf(os.Stderr, "rolling bench-web out to %s...\n", version)
		if err := record(name, func() error {
			rollout := &tenancyv1alpha1.ComponentRollout{
				ObjectMeta: metav1.ObjectMeta{Name: "bench-web-" + strings.ReplaceAll(version, ".", "-")},
				Spec: tenancyv1alpha1.ComponentRolloutSpec{
					Component: "bench-web", Version: version,
					Strategy: tenancyv1alpha1.RolloutStrategy{BatchSize: ptrTo(intstr.FromString(rep.BatchSize))},
				},
			}
			if err := c.Create(ctx, rollout); err != nil {
				return err
			}
			return watched.waitAllAtVersion(ctx, p.tenants, version, version == migratedVersion, timeout)
		}); err != nil {
			return nil, err
		}
		rollout := &tenancyv1alpha1.ComponentRollout{}
		if err := c.Get(ctx, client.ObjectKey{Name: "bench-web-" + strings.ReplaceAll(version, ".", "-")}, rollout); err != nil {
			return nil, err
		}
		rep.Rollouts = append(rep.Rollouts, rolloutInfo{Version: version, Done: rollout.Status.Done, Failed: rollout.Status.Failed})
	}
	stopJobs()
	tenants, err := watched.tenantsByServer(ctx)
	if err != nil {
		return nil, err
	}
	rep.Servers = tracker.figures(tenants)
	for _, s := range rep.Servers {
		fmt.Fprintf(os.Stderr, "  %s: %d tenants, %d migration Jobs, at most %d running at once (limit %d)\n", s.Server, s.Tenants, s.Jobs, s.MaxRunning, s.Limit)
	}
	if over := tracker.overLimit(); len(over) > 0 {
		return rep, fmt.Errorf("migration Jobs over a server's limit: %s", strings.Join(over, "; "))
	}
	return rep, nil
}

func ptrTo[T any](v T) *T { return &v }

// serverLimits reads each DatabaseServer's limit of migration Jobs.
func serverLimits(ctx context.Context, c client.Client) (map[string]int, error) {
	list := &tenancyv1alpha1.DatabaseServerList{}
	if err := c.List(ctx, list); err != nil {
		return nil, err
	}
	limits := map[string]int{}
	for _, s := range list.Items {
		limits[s.Name] = tenancyv1alpha1.DefaultMaxConcurrentJobs
		if s.Spec.MaxConcurrentJobs != nil {
			limits[s.Name] = int(*s.Spec.MaxConcurrentJobs)
		}
	}
	return limits, nil
}

// jobTracker keeps, from a watch of migration Jobs, how many run against each server at once: a
// Job runs from its creation until it has a Complete or Failed condition (or is gone). A watch
// delivers a kind's events in the order the API server stored them, so the counts pass through
// the states the server held, and their maximum is the most it ever held at once.
type jobTracker struct {
	mu      sync.Mutex
	limits  map[string]int
	jobs    map[types.NamespacedName]trackedJob
	running map[string]int
	max     map[string]int
	created map[string]int
	over    []string
}

type trackedJob struct {
	servers []string
	running bool
}

func newJobTracker(limits map[string]int) *jobTracker {
	return &jobTracker{limits: limits, jobs: map[types.NamespacedName]trackedJob{},
		running: map[string]int{}, max: map[string]int{}, created: map[string]int{}}
}

// observe records a Job as the watch delivers it; gone when it was deleted.
func (t *jobTracker) observe(j *batchv1.Job, gone bool) {
	key := types.NamespacedName{Namespace: j.Namespace, Name: j.Name}
	finished, _, _ := migrations.Outcome(j)
	now := trackedJob{running: !gone && !finished}
	if s := j.Annotations[indexes.DatabaseServersAnnotation]; s != "" {
		now.servers = strings.Split(s, ",")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	was, seen := t.jobs[key]
	if !seen && !gone {
		for _, s := range now.servers {
			t.created[s]++
		}
	}
	if was.running {
		for _, s := range was.servers {
			t.running[s]--
		}
	}
	if now.running {
		for _, s := range now.servers {
			t.running[s]++
			if t.running[s] > t.max[s] {
				t.max[s] = t.running[s]
				if limit, ok := t.limits[s]; ok && t.running[s] > limit {
					t.over = append(t.over, fmt.Sprintf("%s had %d running, limit %d (at %s)", s, t.running[s], limit, key))
				}
			}
		}
	}
	if gone {
		delete(t.jobs, key)
	} else {
		t.jobs[key] = now
	}
}

// overLimit says each time a server went over its limit.
func (t *jobTracker) overLimit() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.over)
}

// figures are each server's Jobs, in name order, with the tenants placed on it.
func (t *jobTracker) figures(tenants map[string]int) []serverJobs {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := map[string]bool{}
	for _, m := range []map[string]int{t.limits, t.created, tenants} {
		for s := range m {
			names[s] = true
		}
	}
	out := make([]serverJobs, 0, len(names))
	for s := range names {
		out = append(out, serverJobs{Server: s, Tenants: tenants[s], Limit: t.limits[s], Jobs: t.created[s], MaxRunning: t.max[s]})
	}
	slices.SortFunc(out, func(a, b serverJobs) int { return strings.Compare(a.Server, b.Server) })
	return out
}

// playMigrationJobs watches migration Jobs, counting them in tracker, and completes each one
// after jobTime, as the Job controller would once its pod ended, until ctx ends.
func playMigrationJobs(ctx context.Context, cfg *rest.Config, c client.Client, tracker *jobTracker, jobTime time.Duration) error {
	migration, err := labels.NewRequirement(tenancyv1alpha1.MigrationLabel, selection.Exists, nil)
	if err != nil {
		return err
	}
	jobs, err := cache.New(cfg, cache.Options{
		Scheme:           c.Scheme(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{&batchv1.Job{}: {Label: labels.NewSelector().Add(*migration)}},
	})
	if err != nil {
		return err
	}
	informer, err := jobs.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		return err
	}
	toComplete := make(chan *batchv1.Job, 4096)
	observe := func(obj any, gone bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		j, ok := obj.(*batchv1.Job)
		if !ok {
			return
		}
		tracker.observe(j, gone)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			observe(obj, false)
			if j, ok := obj.(*batchv1.Job); ok {
				if finished, _, _ := migrations.Outcome(j); !finished {
					select {
					case toComplete <- j.DeepCopy():
					case <-ctx.Done():
					}
				}
			}
		},
		UpdateFunc: func(_, obj any) { observe(obj, false) },
		DeleteFunc: func(obj any) { observe(obj, true) },
	}); err != nil {
		return err
	}
	for range 8 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-toComplete:
					if wait := time.Until(j.CreationTimestamp.Add(jobTime)); wait > 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(wait):
						}
					}
					if err := completeJob(ctx, c, j); err != nil && ctx.Err() == nil {
						fmt.Fprintf(os.Stderr, "completing migration Job %s/%s: %v\n", j.Namespace, j.Name, err)
					}
				}
			}
		}()
	}
	go func() { _ = jobs.Start(ctx) }()
	if !jobs.WaitForCacheSync(ctx) {
		return fmt.Errorf("migration Jobs' cache did not sync")
	}
	return nil
}

// completeJob writes the status the Job controller writes when a Job's one pod succeeded.
func completeJob(ctx context.Context, c client.Client, j *batchv1.Job) error {
	now := metav1.Now()
	if j.Status.StartTime == nil {
		j.Status.StartTime = &j.CreationTimestamp
	}
	j.Status.CompletionTime = &now
	j.Status.Succeeded = 1
	j.Status.Active = 0
	j.Status.Ready = ptrTo(int32(0))
	j.Status.Terminating = ptrTo(int32(0))
	j.Status.Conditions = append(j.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastProbeTime: now, LastTransitionTime: now},
		batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached, LastProbeTime: now, LastTransitionTime: now},
	)
	return client.IgnoreNotFound(c.Status().Update(ctx, j))
}

// waitAllAtVersion waits until n tenants are Ready with the component Ready at version and,
// with migrated, its migration to version Succeeded. A failed migration ends the wait.
func (b *benchCache) waitAllAtVersion(ctx context.Context, n int, version string, migrated bool, timeout time.Duration) error {
	return b.poll(ctx, timeout, func() (bool, error) {
		list := &tenancyv1alpha1.TenantList{}
		if err := b.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return false, err
		}
		at := 0
		for i := range list.Items {
			t := &list.Items[i]
			for _, cs := range t.Status.Components {
				if cs.Name != "bench-web" {
					continue
				}
				if m := cs.Migration; m != nil && m.To == version && m.Phase == tenancyv1alpha1.MigrationFailed {
					return false, fmt.Errorf("tenant %s: migration to %s failed: %s", t.Name, version, m.Message)
				}
				if cs.Version != version || !cs.Ready || (migrated && (cs.Migration == nil || cs.Migration.To != version || cs.Migration.Phase != tenancyv1alpha1.MigrationSucceeded)) {
					continue
				}
				if t.Status.ObservedGeneration == t.Generation && meta.IsStatusConditionTrue(t.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
					at++
				}
			}
		}
		return at >= n, nil
	}, "tenants Ready at "+version)
}

// tenantsByServer counts the tenants with a database on each server.
func (b *benchCache) tenantsByServer(ctx context.Context) (map[string]int, error) {
	list := &tenancyv1alpha1.TenantList{}
	if err := b.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for i := range list.Items {
		servers := map[string]bool{}
		for _, d := range list.Items[i].Status.Databases {
			servers[d.Server] = true
		}
		for s := range servers {
			out[s]++
		}
	}
	return out, nil
}

func printMigrations(w *os.File, m *migrationsReport) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "\nMigrations: the rollout with a pre migration (batchSize %s, backup %s; each Job completed by the benchmark %.1f s after its creation):\n\n", m.BatchSize, m.Backup, m.JobSeconds)
	fmt.Fprintln(w, "| server | tenants | migration Jobs | most running at once | limit (spec.maxConcurrentJobs) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, s := range m.Servers {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d |\n", s.Server, s.Tenants, s.Jobs, s.MaxRunning, s.Limit)
	}
	for _, r := range m.Rollouts {
		fmt.Fprintf(w, "\nRollout to %s: %d done, %d failed.", r.Version, r.Done, r.Failed)
	}
	fmt.Fprintln(w)
}
