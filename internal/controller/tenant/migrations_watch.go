package tenant

import (
	"context"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/tenant/migrations"
)

// migrationJobEnded wakes the tenants waiting for a place on the database servers of a
// migration Job that ended or went, rather than leaving them to their next recheck.
func (r *Reconciler) migrationJobEnded() handler.EventHandler {
	wake := func(job *batchv1.Job, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for server := range strings.SplitSeq(job.Annotations[indexes.MigrationServersAnnotation], ",") {
			if server == "" {
				continue
			}
			// One Job ended: one place freed.
			for _, t := range r.slots.Waiting(server, 1) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: t}})
			}
		}
	}
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*batchv1.Job)
			job, ok := e.ObjectNew.(*batchv1.Job)
			if !ok || !okOld {
				return
			}
			if ended, _, _ := migrations.Outcome(job); ended {
				if was, _, _ := migrations.Outcome(old); !was {
					wake(job, q)
				}
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if job, ok := e.Object.(*batchv1.Job); ok {
				wake(job, q)
			}
		},
	}
}
