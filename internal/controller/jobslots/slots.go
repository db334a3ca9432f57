// Package jobslots keeps the Jobs that reach a database server (migrations, backups, restores)
// within the server's limit of Jobs at once (DatabaseServer spec.maxConcurrentJobs), and
// remembers who waits for a place so that a Job's end wakes the one that waited longest.
package jobslots

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"

	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/jobs"
)

// reservationLifetime is how long a Job this process created counts against its servers before
// the cache shows it: far longer than the cache takes, short enough that a Job whose creation
// the cache never shows (deleted at once) does not hold a place for long.
const reservationLifetime = time.Minute

// Queue is the controller a waiter is woken on.
type Queue string

const (
	// Tenants wait for a place for a migration Job (the tenant controller).
	Tenants Queue = "tenants"
	// Backups wait for a place for a backup Job (the TenantBackup controller).
	Backups Queue = "backups"
)

// Waiter is what waits for a place: the object its controller reconciles, on the queue of that
// controller.
type Waiter struct {
	Queue Queue
	Key   client.ObjectKey
}

// Slots keeps each database server's Jobs within its limit (DatabaseServer
// spec.maxConcurrentJobs), migrations, backups and restores together: a Job is created only while
// fewer than the limit run against every server it reaches. What runs is read from the cache's
// index of running Jobs (indexes.RunningJobServer), and the Jobs this process created that the
// cache does not show yet are counted besides, so reconciles running side by side, of one
// controller or of several, never pass the limit together. One Slots per operator process,
// shared by its controllers: shards each hold to the limit on their own.
type Slots struct {
	mu sync.Mutex
	// reserved are the Jobs this process created, by server, and when.
	reserved map[string]map[client.ObjectKey]time.Time
	// waiting are those told a server was full, by queue and server, and since when: woken, the
	// longest waiting first, when a Job on it ends.
	waiting map[Queue]map[string]map[client.ObjectKey]time.Time
	// since is when each waiter was first told a server was full: one woken that finds it full
	// again keeps its turn. Forgotten once it takes a place, or after forgetWaiters.
	since map[Waiter]time.Time
	// purged is when since was last rid of the waiters gone.
	purged time.Time
}

// forgetWaiters is how long a waiter's first wait is kept without its taking a place: one that
// went away (deleted, no longer in need) is forgotten then.
const forgetWaiters = 24 * time.Hour

// Waiting hands out, and forgets, the n of queue that have waited longest for a place on
// server: a Job on it ended, and one of them may take its place. Waking one per place freed, not
// every one waiting, keeps a queue of hundreds from being reconciled at each Job's end; one woken
// that takes no place (deleted, or no longer in need) leaves it to the next one's recheck. Each
// controller wakes its own queue when a Job ends, so a place freed may wake one of each: the
// first to come takes it, the other waits again.
func (s *Slots) Waiting(queue Queue, server string, n int) []client.ObjectKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := s.waiting[queue][server]
	out := make([]client.ObjectKey, 0, len(waiting))
	for k := range waiting {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b client.ObjectKey) int {
		if c := waiting[a].Compare(waiting[b]); c != 0 {
			return c
		}
		return strings.Compare(a.String(), b.String())
	})
	if len(out) > n {
		out = out[:n]
	}
	for _, k := range out {
		delete(waiting, k)
	}
	return out
}

// Seen drops the reservation of a Job the cache now holds: from then on the index counts it
// while it runs. The tenant's reconcile calls it as soon as it reads the Job from the cache, so a
// Job that ends and goes soon after does not hold its place until the reservation expires.
func (s *Slots) Seen(key client.ObjectKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, jobs := range s.reserved {
		delete(jobs, key)
	}
}

// Full is a server at its limit.
type Full struct {
	Server  string
	Running int
	Limit   int32
}

func (f *Full) Error() string {
	return fmt.Sprintf("database server %s runs %d of the %d Jobs (migrations, backups, restores) it allows at once", f.Server, f.Running, f.Limit)
}

// Create calls create for the Job at key unless a server of limits (server name → limit) is at
// its limit, in which case it returns that server's *Full and creates nothing, and remembers
// waiter as waiting for it (Waiting). A waiter that takes its place is no longer waiting.
func (s *Slots) Create(ctx context.Context, c client.Reader, waiter Waiter, limits map[string]int32, key client.ObjectKey, create func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	servers, err := s.check(ctx, c, waiter, limits, key)
	if err != nil {
		return err
	}
	if err := create(); err != nil {
		return err
	}
	now := time.Now()
	if s.reserved == nil {
		s.reserved = map[string]map[client.ObjectKey]time.Time{}
	}
	for _, server := range servers {
		if s.reserved[server] == nil {
			s.reserved[server] = map[client.ObjectKey]time.Time{}
		}
		s.reserved[server][key] = now
		delete(s.waiting[waiter.Queue][server], waiter.Key)
	}
	delete(s.since, waiter)
	return nil
}

// Check returns the *Full of a server of limits at its limit, remembering waiter as waiting for
// it, or nil when every one has a place now: a cheap look before work that only a Job needs,
// which Create makes again before it creates.
func (s *Slots) Check(ctx context.Context, c client.Reader, waiter Waiter, limits map[string]int32, key client.ObjectKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.check(ctx, c, waiter, limits, key)
	return err
}

// check is Check with the lock held; it returns the servers, sorted.
func (s *Slots) check(ctx context.Context, c client.Reader, waiter Waiter, limits map[string]int32, key client.ObjectKey) ([]string, error) {
	now := time.Now()
	servers := make([]string, 0, len(limits))
	for server := range limits {
		servers = append(servers, server)
	}
	slices.Sort(servers)
	for _, server := range servers {
		list := &batchv1.JobList{}
		if err := c.List(ctx, list, client.MatchingFields{indexes.RunningJobServer: server}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		running := map[client.ObjectKey]bool{}
		for i := range list.Items {
			running[client.ObjectKeyFromObject(&list.Items[i])] = true
		}
		for k, at := range s.reserved[server] {
			// Once the cache holds the Job, the index counts it while it runs. The list above may
			// have been read just before the Job arrived: it counts here while it has not ended.
			job := &batchv1.Job{}
			if c.Get(ctx, k, job, client.UnsafeDisableDeepCopy) == nil {
				delete(s.reserved[server], k)
				if finished, _, _ := jobs.Ended(job); !finished {
					running[k] = true
				}
				continue
			}
			if now.Sub(at) > reservationLifetime {
				delete(s.reserved[server], k)
				continue
			}
			running[k] = true
		}
		// The caller's own Job, made before and not in the cache yet, holds no place against
		// itself: it is created again as already there.
		delete(running, key)
		if limit := limits[server]; len(running) >= int(limit) {
			s.wait(waiter, server, now)
			return nil, &Full{Server: server, Running: len(running), Limit: limit}
		}
	}
	return servers, nil
}

// wait remembers waiter as waiting for server, since it first waited.
func (s *Slots) wait(waiter Waiter, server string, now time.Time) {
	if s.since == nil {
		s.since = map[Waiter]time.Time{}
	}
	if now.Sub(s.purged) > time.Minute {
		s.purged = now
		for w, at := range s.since {
			if now.Sub(at) > forgetWaiters {
				delete(s.since, w)
			}
		}
	}
	since, ok := s.since[waiter]
	if !ok {
		since = now
		s.since[waiter] = now
	}
	if s.waiting == nil {
		s.waiting = map[Queue]map[string]map[client.ObjectKey]time.Time{}
	}
	if s.waiting[waiter.Queue] == nil {
		s.waiting[waiter.Queue] = map[string]map[client.ObjectKey]time.Time{}
	}
	waiting := s.waiting[waiter.Queue]
	if waiting[server] == nil {
		waiting[server] = map[client.ObjectKey]time.Time{}
	}
	waiting[server][waiter.Key] = since
}

// ServersOf are the database servers of the tenant's databases that reach selects, sorted, with
// their limits of Jobs at once.
func ServersOf(ctx context.Context, c client.Reader, t *tenancyv1alpha1.Tenant, reach func(database string) bool) ([]string, map[string]int32, error) {
	var on []string
	for _, db := range t.Status.Databases {
		if db.Server != "" && reach(db.Name) {
			on = append(on, db.Server)
		}
	}
	limits, err := Limits(ctx, c, on)
	if err != nil {
		return nil, nil, err
	}
	servers := make([]string, 0, len(limits))
	for s := range limits {
		servers = append(servers, s)
	}
	slices.Sort(servers)
	return servers, limits, nil
}

// Limits reads the limit of Jobs at once of each server named (DatabaseServer
// spec.maxConcurrentJobs, the default when unset); a server not found has the default.
func Limits(ctx context.Context, c client.Reader, servers []string) (map[string]int32, error) {
	limits := make(map[string]int32, len(servers))
	for _, server := range servers {
		if _, ok := limits[server]; ok || server == "" {
			continue
		}
		limit := int32(tenancyv1alpha1.DefaultMaxConcurrentJobs)
		s := &tenancyv1alpha1.DatabaseServer{}
		switch err := c.Get(ctx, client.ObjectKey{Name: server}, s, client.UnsafeDisableDeepCopy); {
		case err == nil:
			if s.Spec.MaxConcurrentJobs != nil {
				limit = *s.Spec.MaxConcurrentJobs
			}
		case !apierrors.IsNotFound(err):
			return nil, err
		}
		limits[server] = limit
	}
	return limits, nil
}

// Wake is the event handler that wakes, of queue, the one that waited longest for a place on
// each server of a Job that ended or went: one place freed, one woken. A Job the cache receives
// drops its reservation at once (Seen): from then on the index counts it, and a Job created and
// deleted before any reconcile looked again holds no place for the reservation's lifetime.
func (s *Slots) Wake(queue Queue) handler.EventHandler {
	wake := func(job *batchv1.Job, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for server := range strings.SplitSeq(job.Annotations[indexes.DatabaseServersAnnotation], ",") {
			if server == "" {
				continue
			}
			for _, k := range s.Waiting(queue, server, 1) {
				q.Add(reconcile.Request{NamespacedName: k})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if job, ok := e.Object.(*batchv1.Job); ok && job.Annotations[indexes.DatabaseServersAnnotation] != "" {
				s.Seen(client.ObjectKeyFromObject(job))
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*batchv1.Job)
			job, ok := e.ObjectNew.(*batchv1.Job)
			if !ok || !okOld {
				return
			}
			if ended, _, _ := jobs.Ended(job); ended {
				if was, _, _ := jobs.Ended(old); !was {
					wake(job, q)
				}
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if job, ok := e.Object.(*batchv1.Job); ok {
				s.Seen(client.ObjectKeyFromObject(job))
				wake(job, q)
			}
		},
	}
}
