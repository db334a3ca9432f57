package jobslots_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/jobslots"
)

// waiter is a tenant waiting for a place for its migration Job.
func waiter(tenant string) jobslots.Waiter {
	return jobslots.Waiter{Queue: jobslots.Tenants, Key: client.ObjectKey{Name: tenant}}
}

// migrationJob is a migration Job on the servers, as the cache holds it.
func migrationJob(name string, servers string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "tenant-" + name,
		Labels:      map[string]string{tenancyv1alpha1.MigrationLabel: "id"},
		Annotations: map[string]string{indexes.DatabaseServersAnnotation: servers},
	}}
}

func TestAServerNeverRunsMoreMigrationJobsThanItsLimitHowEverManyReconcilesCreateThemAtOnce(t *testing.T) {
	ctx := context.Background()
	scheme := tenancyv1alpha1.Scheme()
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&batchv1.Job{}, indexes.RunningJobServer, func(o client.Object) []string {
		// The operator's index, as indexes.Add registers it.
		return indexes.RunningJobServers(o)
	}).WithStatusSubresource(&batchv1.Job{}).Build()
	slots := &jobslots.Slots{}
	limits := map[string]int32{"pg": 2, "maria": 3}

	t.Run("of ten Jobs asked for at once, the limit of the fullest server is created", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, full := 0, 0
		for i := range 10 {
			wg.Go(func() {
				job := migrationJob(fmt.Sprintf("t%d", i), "maria,pg")
				err := slots.Create(ctx, c, waiter("tenant"), limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) })
				mu.Lock()
				defer mu.Unlock()
				var f *jobslots.Full
				switch {
				case err == nil:
					created++
				case errors.As(err, &f):
					full++
					if f.Server != "pg" || f.Limit != 2 {
						t.Errorf("refused for %+v, want pg at its limit of 2", f)
					}
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if created != 2 || full != 8 {
			t.Fatalf("created %d, refused %d; want 2 and 8", created, full)
		}
	})

	t.Run("the tenants told a server was full are handed out once, to be woken", func(t *testing.T) {
		if got := slots.Waiting(jobslots.Tenants, "pg", 5); len(got) != 1 || got[0].Name != "tenant" {
			t.Fatalf("waiting for pg: %v", got)
		}
		if got := slots.Waiting(jobslots.Tenants, "pg", 5); len(got) != 0 {
			t.Fatalf("handed out twice: %v", got)
		}
	})

	t.Run("a place freed wakes the tenant that waited longest, one per place", func(t *testing.T) {
		queue := &jobslots.Slots{}
		full := map[string]int32{"pg": 2}
		for _, tenant := range []string{"first", "second", "third"} {
			job := migrationJob("q-"+tenant, "pg")
			if err := queue.Create(ctx, c, waiter(tenant), full, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err == nil {
				t.Fatalf("%s took a place on a full server", tenant)
			}
		}
		if got := queue.Waiting(jobslots.Tenants, "pg", 1); len(got) != 1 || got[0].Name != "first" {
			t.Fatalf("woken: %v, want [first]", got)
		}
		if got := queue.Waiting(jobslots.Tenants, "pg", 5); len(got) != 2 || got[0].Name != "second" || got[1].Name != "third" {
			t.Fatalf("woken: %v, want [second third]", got)
		}
	})

	t.Run("a Job that ended frees its place at once", func(t *testing.T) {
		jobs := &batchv1.JobList{}
		if err := c.List(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		done := &jobs.Items[0]
		done.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		if err := c.Status().Update(ctx, done); err != nil {
			t.Fatal(err)
		}
		next := migrationJob("t-next", "pg")
		if err := slots.Create(ctx, c, waiter("tenant"), limits, client.ObjectKeyFromObject(next), func() error { return c.Create(ctx, next) }); err != nil {
			t.Fatalf("a place was freed, yet: %v", err)
		}
		again := migrationJob("t-again", "pg")
		var f *jobslots.Full
		if err := slots.Create(ctx, c, waiter("tenant"), limits, client.ObjectKeyFromObject(again), func() error { return c.Create(ctx, again) }); !errors.As(err, &f) {
			t.Fatalf("the server is at its limit again, yet: %v", err)
		}
	})

	t.Run("a Job created, ended and gone before another is asked for holds no place once seen", func(t *testing.T) {
		own := &jobslots.Slots{}
		first := migrationJob("t-gone", "solo")
		if err := own.Create(ctx, c, waiter("tenant"), map[string]int32{"solo": 1}, client.ObjectKeyFromObject(first), func() error { return c.Create(ctx, first) }); err != nil {
			t.Fatal(err)
		}
		own.Seen(client.ObjectKeyFromObject(first))
		if err := c.Delete(ctx, first); err != nil {
			t.Fatal(err)
		}
		second := migrationJob("t-second", "solo")
		if err := own.Create(ctx, c, waiter("tenant"), map[string]int32{"solo": 1}, client.ObjectKeyFromObject(second), func() error { return c.Create(ctx, second) }); err != nil {
			t.Fatalf("the first Job is gone, yet: %v", err)
		}
	})

	t.Run("a server with room takes Jobs that reach it alone", func(t *testing.T) {
		job := migrationJob("t-maria", "maria")
		if err := slots.Create(ctx, c, waiter("tenant"), map[string]int32{"maria": 3}, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err != nil {
			t.Fatal(err)
		}
	})
}

// catchingUp is a cache that receives add just after a list was read from it.
type catchingUp struct {
	client.Client
	add client.Object
}

func (c *catchingUp) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := c.Client.List(ctx, list, opts...)
	if c.add != nil {
		if err := c.Create(ctx, c.add); err != nil {
			return err
		}
		c.add = nil
	}
	return err
}

func TestAJobTheCacheReceivesBetweenItsListAndItsReservationsStillCounts(t *testing.T) {
	ctx := context.Background()
	fc := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithIndex(&batchv1.Job{}, indexes.RunningJobServer, indexes.RunningJobServers).Build()
	slots := &jobslots.Slots{}
	limits := map[string]int32{"pg": 1}

	first := migrationJob("t1", "pg")
	// Created, and not in the cache yet: its reservation holds the place.
	if err := slots.Create(ctx, fc, waiter("t1"), limits, client.ObjectKeyFromObject(first), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	// The cache receives it after the next Create read the running Jobs, and before it checks
	// its reservations.
	c := &catchingUp{Client: fc, add: first.DeepCopy()}
	second := migrationJob("t2", "pg")
	err := slots.Create(ctx, c, waiter("t2"), limits, client.ObjectKeyFromObject(second), func() error { return c.Create(ctx, second) })
	var f *jobslots.Full
	if !errors.As(err, &f) || f.Running != 1 {
		t.Fatalf("second Job: %v, want pg full with the first one running", err)
	}
}

func TestMigrationsBackupsAndRestoresShareAServersPlacesAndNoOtherJobTakesOne(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithIndex(&batchv1.Job{}, indexes.RunningJobServer, indexes.RunningJobServers).Build()
	limits := map[string]int32{"pg": 2}
	backupJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: "landlord-backup-1", Namespace: "landlord-system",
		Labels:      map[string]string{tenancyv1alpha1.BackupJobLabel: "backup"},
		Annotations: map[string]string{indexes.DatabaseServersAnnotation: "pg"},
	}}
	// A component's own Job, annotated as if it reached the server: its status is not what the
	// cache keeps, so it must never hold a place.
	componentJob := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: "seed", Namespace: "tenant-a",
		Annotations: map[string]string{indexes.DatabaseServersAnnotation: "pg"},
	}}
	for _, j := range []*batchv1.Job{backupJob, componentJob} {
		if err := c.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	slots := &jobslots.Slots{}

	t.Run("a running backup Job takes one of a server's places from migrations", func(t *testing.T) {
		job := migrationJob("m1", "pg")
		if err := slots.Create(ctx, c, waiter("m1"), limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err != nil {
			t.Fatal(err)
		}
		job = migrationJob("m2", "pg")
		var f *jobslots.Full
		if err := slots.Create(ctx, c, waiter("m2"), limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); !errors.As(err, &f) || f.Running != 2 {
			t.Fatalf("a third Job on a server of 2 places (one backup, one migration, one component Job) got %v, want Full with 2 running", err)
		}
	})

	t.Run("a backup waiting is woken on its own queue, never on the tenants'", func(t *testing.T) {
		b := jobslots.Waiter{Queue: jobslots.Backups, Key: client.ObjectKey{Name: "acme-202612070300"}}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "landlord-backup-2", Namespace: "landlord-system",
			Labels: map[string]string{tenancyv1alpha1.BackupJobLabel: "backup"}, Annotations: map[string]string{indexes.DatabaseServersAnnotation: "pg"}}}
		if err := slots.Create(ctx, c, b, limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err == nil {
			t.Fatal("a backup took a place on a full server")
		}
		if got := slots.Waiting(jobslots.Tenants, "pg", 5); len(got) != 1 || got[0].Name != "m2" {
			t.Fatalf("tenants woken: %v, want [m2]", got)
		}
		if got := slots.Waiting(jobslots.Backups, "pg", 5); len(got) != 1 || got[0] != b.Key {
			t.Fatalf("backups woken: %v, want [%v]", got, b.Key)
		}
	})
}

func TestAWaiterKeepsItsTurnUntilItTakesAPlaceAndIsNotWokenAfter(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithIndex(&batchv1.Job{}, indexes.RunningJobServer, indexes.RunningJobServers).WithStatusSubresource(&batchv1.Job{}).Build()
	limits := map[string]int32{"pg": 1}
	slots := &jobslots.Slots{}
	holder := migrationJob("holder", "pg")
	if err := slots.Create(ctx, c, waiter("holder"), limits, client.ObjectKeyFromObject(holder), func() error { return c.Create(ctx, holder) }); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "second"} {
		job := migrationJob(name, "pg")
		if err := slots.Create(ctx, c, waiter(name), limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err == nil {
			t.Fatalf("%s took a place on a full server", name)
		}
	}

	t.Run("one woken that finds the server full again keeps its place in the queue", func(t *testing.T) {
		if got := slots.Waiting(jobslots.Tenants, "pg", 1); len(got) != 1 || got[0].Name != "first" {
			t.Fatalf("woken %v, want [first]", got)
		}
		job := migrationJob("first", "pg")
		if err := slots.Create(ctx, c, waiter("first"), limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err == nil {
			t.Fatal("first took a place the holder still has")
		}
		if got := slots.Waiting(jobslots.Tenants, "pg", 1); len(got) != 1 || got[0].Name != "first" {
			t.Fatalf("woken %v, want first again, ahead of second", got)
		}
		// Woken again, and again the server is full: it waits once more.
		if err := slots.Create(ctx, c, waiter("first"), limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err == nil {
			t.Fatal("first took a place the holder still has")
		}
	})

	t.Run("one that takes its place on a recheck is no longer waiting, and the next is woken", func(t *testing.T) {
		// second, still queued, finds a place on its own recheck once the holder's Job ended.
		holder.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		if err := c.Status().Update(ctx, holder); err != nil {
			t.Fatal(err)
		}
		job := migrationJob("second", "pg")
		if err := slots.Create(ctx, c, waiter("second"), limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err != nil {
			t.Fatal(err)
		}
		if got := slots.Waiting(jobslots.Tenants, "pg", 5); len(got) != 1 || got[0].Name != "first" {
			t.Fatalf("still waiting: %v, want [first] alone", got)
		}
	})
}

func TestAJobTheCacheReceivedHoldsNoReservationOnceItIsGone(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).
		WithIndex(&batchv1.Job{}, indexes.RunningJobServer, indexes.RunningJobServers).Build()
	limits := map[string]int32{"pg": 1}
	slots := &jobslots.Slots{}
	// Created, then deleted before any reconcile looked again: the cache saw it come and go.
	gone := migrationJob("gone", "pg")
	if err := slots.Create(ctx, c, waiter("gone"), limits, client.ObjectKeyFromObject(gone), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	h := slots.Wake(jobslots.Tenants)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h.Create(ctx, event.CreateEvent{Object: gone}, q)
	h.Delete(ctx, event.DeleteEvent{Object: gone}, q)
	next := migrationJob("next", "pg")
	if err := slots.Create(ctx, c, waiter("next"), limits, client.ObjectKeyFromObject(next), func() error { return c.Create(ctx, next) }); err != nil {
		t.Fatalf("the place of a Job gone is still held: %v", err)
	}
}
