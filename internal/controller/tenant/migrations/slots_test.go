package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
)

// migrationJob is a migration Job on the servers, as the cache holds it.
func migrationJob(name string, servers string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "tenant-" + name,
		Labels:      map[string]string{tenancyv1alpha1.MigrationLabel: "id"},
		Annotations: map[string]string{indexes.MigrationServersAnnotation: servers},
	}}
}

func TestAServerNeverRunsMoreMigrationJobsThanItsLimitHowEverManyReconcilesCreateThemAtOnce(t *testing.T) {
	ctx := context.Background()
	scheme := tenancyv1alpha1.Scheme()
	c := fake.NewClientBuilder().WithScheme(scheme).WithIndex(&batchv1.Job{}, indexes.RunningMigrationServer, func(o client.Object) []string {
		// The operator's index, as indexes.Add registers it.
		return indexes.RunningMigrationServers(o)
	}).WithStatusSubresource(&batchv1.Job{}).Build()
	slots := &migrations.Slots{}
	limits := map[string]int32{"pg": 2, "maria": 3}

	t.Run("of ten Jobs asked for at once, the limit of the fullest server is created", func(t *testing.T) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		created, full := 0, 0
		for i := range 10 {
			wg.Go(func() {
				job := migrationJob(fmt.Sprintf("t%d", i), "maria,pg")
				err := slots.Create(ctx, c, "tenant", limits, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) })
				mu.Lock()
				defer mu.Unlock()
				var f *migrations.Full
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
		if got := slots.Waiting("pg", 5); len(got) != 1 || got[0] != "tenant" {
			t.Fatalf("waiting for pg: %v", got)
		}
		if got := slots.Waiting("pg", 5); len(got) != 0 {
			t.Fatalf("handed out twice: %v", got)
		}
	})

	t.Run("a place freed wakes the tenant that waited longest, one per place", func(t *testing.T) {
		queue := &migrations.Slots{}
		full := map[string]int32{"pg": 2}
		for _, tenant := range []string{"first", "second", "third"} {
			job := migrationJob("q-"+tenant, "pg")
			if err := queue.Create(ctx, c, tenant, full, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err == nil {
				t.Fatalf("%s took a place on a full server", tenant)
			}
		}
		if got := queue.Waiting("pg", 1); len(got) != 1 || got[0] != "first" {
			t.Fatalf("woken: %v, want [first]", got)
		}
		if got := queue.Waiting("pg", 5); len(got) != 2 || got[0] != "second" || got[1] != "third" {
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
		if err := slots.Create(ctx, c, "tenant", limits, client.ObjectKeyFromObject(next), func() error { return c.Create(ctx, next) }); err != nil {
			t.Fatalf("a place was freed, yet: %v", err)
		}
		again := migrationJob("t-again", "pg")
		var f *migrations.Full
		if err := slots.Create(ctx, c, "tenant", limits, client.ObjectKeyFromObject(again), func() error { return c.Create(ctx, again) }); !errors.As(err, &f) {
			t.Fatalf("the server is at its limit again, yet: %v", err)
		}
	})

	t.Run("a Job created, ended and gone before another is asked for holds no place once seen", func(t *testing.T) {
		own := &migrations.Slots{}
		first := migrationJob("t-gone", "solo")
		if err := own.Create(ctx, c, "tenant", map[string]int32{"solo": 1}, client.ObjectKeyFromObject(first), func() error { return c.Create(ctx, first) }); err != nil {
			t.Fatal(err)
		}
		own.Seen(client.ObjectKeyFromObject(first))
		if err := c.Delete(ctx, first); err != nil {
			t.Fatal(err)
		}
		second := migrationJob("t-second", "solo")
		if err := own.Create(ctx, c, "tenant", map[string]int32{"solo": 1}, client.ObjectKeyFromObject(second), func() error { return c.Create(ctx, second) }); err != nil {
			t.Fatalf("the first Job is gone, yet: %v", err)
		}
	})

	t.Run("a server with room takes Jobs that reach it alone", func(t *testing.T) {
		job := migrationJob("t-maria", "maria")
		if err := slots.Create(ctx, c, "tenant", map[string]int32{"maria": 3}, client.ObjectKeyFromObject(job), func() error { return c.Create(ctx, job) }); err != nil {
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
	fc := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithIndex(&batchv1.Job{}, indexes.RunningMigrationServer, indexes.RunningMigrationServers).Build()
	slots := &migrations.Slots{}
	limits := map[string]int32{"pg": 1}

	first := migrationJob("t1", "pg")
	// Created, and not in the cache yet: its reservation holds the place.
	if err := slots.Create(ctx, fc, "t1", limits, client.ObjectKeyFromObject(first), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	// The cache receives it after the next Create read the running Jobs, and before it checks
	// its reservations.
	c := &catchingUp{Client: fc, add: first.DeepCopy()}
	second := migrationJob("t2", "pg")
	err := slots.Create(ctx, c, "t2", limits, client.ObjectKeyFromObject(second), func() error { return c.Create(ctx, second) })
	var f *migrations.Full
	if !errors.As(err, &f) || f.Running != 1 {
		t.Fatalf("second Job: %v, want pg full with the first one running", err)
	}
}
