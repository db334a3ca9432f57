package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// waitingListed is how many of a wave's waiting tenants its status names, the first by name
// (status.waves[].waiting).
const waitingListed = 50

// rolloutFollower prints what `rollout` and `rollout status` say of a rollout's waves: each
// wave as it starts, its tenants waiting for their maintenance window, its failed tenants, how
// many of its tenants migrate and how many failed migrating, and its end. The rollout's watch
// and its tenants' watch both report to it, each from its goroutine.
type rolloutFollower struct {
	out    io.Writer
	prefix string

	mu sync.Mutex
	// printed are the lines printed already: a watch may hand over an earlier state after the
	// list showed a later one, and nothing is said twice.
	printed map[string]bool
	ro      *tenancyv1alpha1.ComponentRollout
	// tenants are the tenants the rollout's selector chooses, each as where its move migrates.
	tenants map[string]tenantMigration
	// tenantsRead: the tenants were listed (or could not be), and the counts are worth saying.
	tenantsRead bool
	// reported are the migration counts last printed of each wave, by index.
	reported map[int]waveMigrations
	// watching: the tenants' watch was started; done ends when it has returned.
	watching bool
	done     sync.WaitGroup
}

func newRolloutFollower(out io.Writer, prefix string) *rolloutFollower {
	return &rolloutFollower{out: out, prefix: prefix, printed: map[string]bool{}, tenants: map[string]tenantMigration{}, reported: map[int]waveMigrations{}}
}

// tenantMigration is where a tenant's move to the rollout's version migrates: a migration under
// way, or one that failed.
type tenantMigration struct {
	migrating, failed bool
}

// migrationOf is where t's move of component to version migrates: migrating while its
// ComponentsReady reason is Migrating or the component's migration to version runs; failed once
// that migration failed.
func migrationOf(t *tenancyv1alpha1.Tenant, component, version string) tenantMigration {
	var m tenantMigration
	if c := meta.FindStatusCondition(t.Status.Conditions, tenancyv1alpha1.ComponentsReadyCondition); c != nil &&
		c.Status != metav1.ConditionTrue && c.Reason == tenancyv1alpha1.ReasonMigrating {
		m.migrating = true
	}
	for _, s := range t.Status.Components {
		if s.Name != component || s.Migration == nil || s.Migration.To != version {
			continue
		}
		switch s.Migration.Phase {
		case tenancyv1alpha1.MigrationSucceeded:
		case tenancyv1alpha1.MigrationFailed:
			m.migrating, m.failed = false, true
		default:
			m.migrating = true
		}
	}
	return m
}

// waveMigrations counts a wave's tenants that migrate, and those that failed migrating.
type waveMigrations struct {
	migrating, failed int
}

// countMigrations counts the wave's tenants whose move migrates, and those that failed
// migrating: the rollout names them failed with reason MigrationFailed, or the tenant's
// migration to the version failed.
func countMigrations(w tenancyv1alpha1.RolloutWave, tenants map[string]tenantMigration) waveMigrations {
	failed := map[string]bool{}
	for _, f := range w.Failed {
		if f.Reason == tenancyv1alpha1.ReasonMigrationFailed {
			failed[f.Tenant] = true
		}
	}
	var n waveMigrations
	for _, name := range w.Tenants {
		switch m := tenants[name]; {
		case failed[name] || m.failed:
			n.failed++
		case m.migrating:
			n.migrating++
		}
	}
	return n
}

// say prints a line unless printed already. The caller holds mu, or is the only goroutine.
func (f *rolloutFollower) say(format string, args ...any) {
	if line := fmt.Sprintf(format, args...); !f.printed[line] {
		f.printed[line] = true
		fmt.Fprintln(f.out, line)
	}
}

// rolloutSeen prints what changed of the rollout's waves.
func (f *rolloutFollower) rolloutSeen(ro *tenancyv1alpha1.ComponentRollout) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ro = ro
	f.printWaves()
}

// report prints a line, with the tenants' watch.
func (f *rolloutFollower) report(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.say(format, args...)
}

// followTenants starts watching the tenants the rollout's selector chooses, once, until ctx
// ends: only a rollout still under way is worth it.
func (f *rolloutFollower) followTenants(ctx context.Context, c client.WithWatch, ro *tenancyv1alpha1.ComponentRollout) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watching {
		return
	}
	f.watching = true
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		f.watchTenants(ctx, c, ro)
	}()
}

// wait returns once the tenants' watch has ended (its context canceled).
func (f *rolloutFollower) wait() { f.done.Wait() }

// watchTenants lists the tenants the rollout's selector chooses, selected by the API server, and
// watches them from that list, keeping of each only where its move migrates, until ctx ends. A
// user who may not list tenants follows the rollout without its migrations: the list that fails
// is not tried again.
func (f *rolloutFollower) watchTenants(ctx context.Context, c client.WithWatch, ro *tenancyv1alpha1.ComponentRollout) {
	selector, err := metav1.LabelSelectorAsSelector(&ro.Spec.Selector)
	if err != nil {
		// The rollout stalls on it, and says so.
		return
	}
	lw := watchScope{list: &tenancyv1alpha1.TenantList{}, labels: selector}.listerWatcher(c)
	var failed bool
	list, watchFrom := lw.ListWithContextFunc, lw.WatchFuncWithContext
	lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		obj, err := list(ctx, o)
		if err != nil && ctx.Err() == nil {
			failed = true
			f.report("%s: the tenants cannot be listed (%v): their migrations are not shown", f.prefix, err)
			return &tenancyv1alpha1.TenantList{}, nil
		}
		return obj, err
	}
	lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		if failed {
			// Nothing comes, until ctx ends.
			return watch.NewFake(), nil
		}
		return watchFrom(ctx, o)
	}
	component, version := ro.Spec.Component, ro.Spec.Version
	// record keeps where t's move migrates, and says whether that changed. The caller holds mu.
	record := func(obj runtime.Object, deleted bool) bool {
		t, ok := obj.(*tenancyv1alpha1.Tenant)
		if !ok {
			return false
		}
		m := migrationOf(t, component, version)
		switch prev, ok := f.tenants[t.Name]; {
		case deleted && !ok, !deleted && ok && prev == m:
			return false
		case deleted:
			delete(f.tenants, t.Name)
		default:
			f.tenants[t.Name] = m
		}
		return true
	}
	seen := func(obj runtime.Object, deleted bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if ctx.Err() == nil && record(obj, deleted) {
			f.printWaves()
		}
	}
	// The counts are said once every tenant was read, not tenant by tenant as they are.
	precondition := func(store cache.Store) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, obj := range store.List() {
			record(obj.(runtime.Object), false)
		}
		f.tenantsRead = true
		if ctx.Err() == nil {
			f.printWaves()
		}
		return false, nil
	}
	// It ends with ctx; what it says then is of no use.
	_, _ = watchtools.UntilWithSync(ctx, listThenWatch{lw.ListWatch}, &tenancyv1alpha1.Tenant{}, precondition, func(ev watch.Event) (bool, error) {
		switch ev.Type {
		case watch.Added, watch.Modified:
			seen(ev.Object, false)
		case watch.Deleted:
			seen(ev.Object, true)
		}
		return false, nil
	})
}

// printWaves prints each wave of the rollout that started, waits for tenants' maintenance
// windows, failed a tenant, migrates or ended, unless printed already. The caller holds mu.
func (f *rolloutFollower) printWaves() {
	ro := f.ro
	if ro == nil {
		return
	}
	total := len(ro.Status.Waves)
	for i, w := range ro.Status.Waves {
		if w.StartedAt == nil {
			continue
		}
		f.say("%s: wave %d/%d started: %s", f.prefix, i+1, total, strings.Join(w.Tenants, ", "))
		if len(w.Waiting) > 0 && w.CompletedAt == nil {
			waiting := make([]string, len(w.Waiting))
			for j, wt := range w.Waiting {
				waiting[j] = wt.Tenant + " at " + wt.NextWindow.UTC().Format(time.RFC3339)
			}
			first := ""
			if len(w.Waiting) == waitingListed {
				first = fmt.Sprintf(" (the first %d by name)", waitingListed)
			}
			f.say("%s: wave %d/%d: waiting for their maintenance window%s: %s", f.prefix, i+1, total, first, strings.Join(waiting, ", "))
		}
		for _, fl := range w.Failed {
			f.say("%s: wave %d/%d: %s failed: %s: %s", f.prefix, i+1, total, fl.Tenant, fl.Reason, fl.Message)
		}
		// Said each time the counts change, back to what they were included.
		if n := countMigrations(w, f.tenants); f.tenantsRead && n != f.reported[i] {
			f.reported[i] = n
			line := fmt.Sprintf("%s: wave %d/%d: %d migrating, %d failed migrating (%s)", f.prefix, i+1, total, n.migrating, n.failed, tenancyv1alpha1.ReasonMigrationFailed)
			f.printed[line] = true
			fmt.Fprintln(f.out, line)
		}
		if w.CompletedAt != nil {
			f.say("%s: wave %d/%d done: %d done, %d failed, %d skipped", f.prefix, i+1, total, w.Done, len(w.Failed), w.Skipped)
		}
	}
}
