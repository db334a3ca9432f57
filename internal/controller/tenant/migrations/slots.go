package migrations

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/controller/indexes"
)

// reservationLifetime is how long a Job this process created counts against its servers before
// the cache shows it: far longer than the cache takes, short enough that a Job whose creation
// the cache never shows (deleted at once) does not hold a place for long.
const reservationLifetime = time.Minute

// Slots keeps each database server's migration Jobs within its limit
// (DatabaseServer spec.maxConcurrentJobs): a Job is created only while fewer than the limit run
// against every server it reaches. What runs is read from the cache's index of running
// migration Jobs, and the Jobs this process created that the cache does not show yet are counted
// besides, so reconciles running side by side never pass the limit together. One Slots per
// operator process: shards each hold to the limit on their own.
type Slots struct {
	mu sync.Mutex
	// reserved are the Jobs this process created, by server, and when.
	reserved map[string]map[client.ObjectKey]time.Time
	// waiting are the tenants told a server was full, by server, and since when: woken, the
	// longest waiting first, when a Job on it ends.
	waiting map[string]map[string]time.Time
}

// Waiting hands out, and forgets, the n tenants that have waited longest for a place on server:
// a Job on it ended, and one of them may take its place. Waking one per place freed, not every
// tenant waiting, keeps a queue of hundreds from being reconciled at each Job's end; a tenant
// woken that takes no place (deleted, or no longer moving) leaves it to the next one's recheck.
func (s *Slots) Waiting(server string, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	queue := s.waiting[server]
	out := make([]string, 0, len(queue))
	for t := range queue {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b string) int {
		if c := queue[a].Compare(queue[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if len(out) > n {
		out = out[:n]
	}
	for _, t := range out {
		delete(queue, t)
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
	return fmt.Sprintf("database server %s runs %d of the %d migration Jobs it allows at once", f.Server, f.Running, f.Limit)
}

// Create calls create for the Job at key unless a server of limits (server name → limit) is at
// its limit, in which case it returns that server's *Full and creates nothing.
// The tenant is remembered as waiting for a full server (Waiting).
func (s *Slots) Create(ctx context.Context, c client.Reader, tenant string, limits map[string]int32, key client.ObjectKey, create func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	servers := make([]string, 0, len(limits))
	for server := range limits {
		servers = append(servers, server)
	}
	slices.Sort(servers)
	for _, server := range servers {
		jobs := &batchv1.JobList{}
		if err := c.List(ctx, jobs, client.MatchingFields{indexes.RunningMigrationServer: server}, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		running := map[client.ObjectKey]bool{}
		for i := range jobs.Items {
			running[client.ObjectKeyFromObject(&jobs.Items[i])] = true
		}
		for k, at := range s.reserved[server] {
			// Once the cache holds the Job, the index counts it while it runs. The list above may
			// have been read just before the Job arrived: it counts here while it has not ended.
			job := &batchv1.Job{}
			if c.Get(ctx, k, job, client.UnsafeDisableDeepCopy) == nil {
				delete(s.reserved[server], k)
				if finished, _, _ := Outcome(job); !finished {
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
		if limit := limits[server]; len(running) >= int(limit) {
			if s.waiting == nil {
				s.waiting = map[string]map[string]time.Time{}
			}
			if s.waiting[server] == nil {
				s.waiting[server] = map[string]time.Time{}
			}
			if _, queued := s.waiting[server][tenant]; !queued {
				s.waiting[server][tenant] = now
			}
			return &Full{Server: server, Running: len(running), Limit: limit}
		}
	}
	if err := create(); err != nil {
		return err
	}
	if s.reserved == nil {
		s.reserved = map[string]map[client.ObjectKey]time.Time{}
	}
	for _, server := range servers {
		if s.reserved[server] == nil {
			s.reserved[server] = map[client.ObjectKey]time.Time{}
		}
		s.reserved[server][key] = now
	}
	return nil
}
