package components

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// neverSynced is the informer of a kind the API server cannot list: it never syncs, and it
// counts how often it is asked.
type neverSynced struct {
	cache.Informer
	asked atomic.Int32
}

func (i *neverSynced) HasSynced() bool {
	i.asked.Add(1)
	return false
}

// A kind the operator may list but the API server cannot (a conversion webhook or an aggregated
// API that is down) must not hold every reconcile that renders it for a whole timeout, again on
// every retry, until those tenants hold every worker. Each kind has one deadline: the reconciles
// before it wait until it, and those after it do not wait at all.
func TestAKindThatNeverSyncsIsWaitedOnUntilOneDeadline(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "kinds.example.com", Version: "v2", Kind: "Widget"}

	t.Run("a reconcile after the deadline asks the informer once and does not wait", func(t *testing.T) {
		informer := &neverSynced{}
		w := &KindWatches{Timeout: time.Minute, watching: map[schema.GroupVersionKind]kindInformer{
			gvk: {informer: informer, started: time.Now().Add(-time.Hour)},
		}}
		for range 3 {
			err := w.ensure(context.Background(), gvk)
			if err == nil || !strings.Contains(err.Error(), "has not synced") || !strings.Contains(err.Error(), "Widget.kinds.example.com") {
				t.Fatalf("ensure = %v, want an error naming the kind that has not synced", err)
			}
		}
		// One look per reconcile; a wait polls it every 100ms.
		if got := informer.asked.Load(); got != 3 {
			t.Fatalf("HasSynced was asked %d times by 3 reconciles, want 3: a reconcile waited", got)
		}
	})

	t.Run("reconciles before the deadline wait until it and no longer", func(t *testing.T) {
		informer := &neverSynced{}
		// The informer started almost a minute ago; its deadline is 300ms away. A reconcile that
		// waited a whole timeout of its own rather than until the kind's deadline would end this
		// test's context first.
		started := time.Now().Add(-time.Minute + 300*time.Millisecond)
		syncBy := started.Add(time.Minute)
		w := &KindWatches{Timeout: time.Minute, watching: map[schema.GroupVersionKind]kindInformer{
			gvk: {informer: informer, started: started},
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.ensure(ctx, gvk); err == nil || ctx.Err() != nil {
			t.Fatalf("ensure = %v (context: %v), want the kind's error at its deadline", err, ctx.Err())
		}
		if time.Now().Before(syncBy) {
			t.Fatalf("ensure gave up before the kind's deadline")
		}
	})
}
