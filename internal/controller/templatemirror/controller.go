// Package templatemirror runs the mirror of the secret store into the template namespace
// (package templatesync) at start-up, every interval, and when asked.
package templatemirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/landlord-dev/landlord/internal/controller/shutdown"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/templatesync"
)

var (
	templateSyncUp = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_secret_store_sync_up",
		Help: "1 when the last sync of the template namespace from the secret store succeeded, 0 when it failed (with secrets.sharedSource Namespace: the check of the store the namespace records).",
	})
	templateSyncLastSuccess = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_secret_store_last_sync_success_timestamp_seconds",
		Help: "When the template namespace last matched the secret store.",
	})
)

func init() {
	metrics.Registry.MustRegister(templateSyncUp, templateSyncLastSuccess)
}

// templateSyncRequest is the one request the controller works on: the whole namespace.
var templateSyncRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "template-namespace"}}

// Reconciler mirrors the secret store's shared secrets into the template namespace
// (templatesync.Mirror), or with RecordOnly records the store there (templatesync.RecordStore), at
// start-up, every Interval, and when Trigger asks. A failed sync is
// retried with a backoff that starts at a second and grows to the interval; tenants keep the
// secrets they have meanwhile.
type Reconciler struct {
	// Client reads through the cache (the template namespace is cached whole) and writes.
	Client client.Client
	// APIReader reads a Secret from the API server before a sync removes it (Options.Reader).
	APIReader client.Reader
	Store     secret.Store
	Namespace string
	Interval  time.Duration
	// MaxDeletionPercent bounds the share of the namespace's secrets one sync may remove.
	MaxDeletionPercent int
	// RecordOnly is set when another tool writes the namespace's Secrets (secrets.sharedSource
	// Namespace): each sync then only records the store, or checks the one recorded
	// (RecordStore), and writes or removes no Secret.
	RecordOnly bool
	// Recorder reports a refused sync on the template namespace.
	Recorder events.EventRecorder

	triggerOnce sync.Once
	trigger     chan struct{}
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete

// SetupWithManager registers the controller: one request at start-up, requeued after every
// sync, and added again by Trigger.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("templatesync").
		WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(templateSyncRequest)
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-r.triggers():
						q.Add(templateSyncRequest)
					}
				}
			}()
			return nil
		})).
		WithOptions(controller.Options{
			RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, max(r.Interval, time.Second)),
		}).
		Complete(shutdown.Quiet(r))
}

// Trigger asks for a sync now. Triggers sent while one waits are one sync.
func (r *Reconciler) Trigger() {
	select {
	case r.triggers() <- struct{}{}:
	default:
	}
}

func (r *Reconciler) triggers() chan struct{} {
	r.triggerOnce.Do(func() { r.trigger = make(chan struct{}, 1) })
	return r.trigger
}

func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if err := r.Sync(ctx); err != nil {
		return ctrl.Result{}, fmt.Errorf("syncing the template namespace from the secret store; tenants keep the secrets they have: %w", err)
	}
	return ctrl.Result{RequeueAfter: r.Interval}, nil
}

// Sync brings the template namespace in line with the store now (with RecordOnly: makes sure it
// records the store), and reports it in the sync metrics.
func (r *Reconciler) Sync(ctx context.Context) error {
	var err error
	if r.RecordOnly {
		err = templatesync.RecordStore(ctx, r.Client, r.Store, r.Namespace)
	} else {
		err = templatesync.Mirror(ctx, r.Client, r.Store, r.Namespace, templatesync.Options{MaxDeletionPercent: r.MaxDeletionPercent, Reader: r.APIReader})
	}
	if err != nil {
		templateSyncUp.Set(0)
		var refused *templatesync.RefusedError
		if errors.As(err, &refused) && r.Recorder != nil {
			ns := &corev1.Namespace{}
			if r.Client.Get(ctx, client.ObjectKey{Name: r.Namespace}, ns) == nil {
				templatesync.Report(r.Recorder, ns, err)
			}
		}
		return err
	}
	templateSyncUp.Set(1)
	templateSyncLastSuccess.SetToCurrentTime()
	return nil
}
