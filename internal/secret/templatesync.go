package secret

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
)

var (
	syncUp = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_secret_store_sync_up",
		Help: "1 when the last sync of the template namespace from the secret store succeeded, 0 when it failed.",
	})
	syncLastSuccess = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "landlord_secret_store_last_sync_success_timestamp_seconds",
		Help: "When the template namespace last matched the secret store.",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(syncUp, syncLastSuccess)
}

// TemplateSync mirrors the store's shared secrets (those stored under the template namespace)
// into the template namespace of the cluster, on start, on an interval and on demand. Tenants
// only ever read the cluster's copy, so a store outage delays changes but never blocks a tenant
// and never removes anything.
type TemplateSync struct {
	// Client reads through the cache (the template namespace is cached whole) and writes.
	Client    client.Client
	APIReader client.Reader
	Store     Store
	Namespace string
	Interval  time.Duration
	Log       logr.Logger

	trigger chan struct{}
}

// NewTemplateSync returns a sync of the store into namespace.
func NewTemplateSync(c client.Client, apiReader client.Reader, store Store, namespace string, interval time.Duration, log logr.Logger) *TemplateSync {
	return &TemplateSync{Client: c, APIReader: apiReader, Store: store, Namespace: namespace, Interval: interval, Log: log, trigger: make(chan struct{}, 1)}
}

// Trigger asks for a sync now.
func (s *TemplateSync) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// NeedLeaderElection: only the leader writes.
func (s *TemplateSync) NeedLeaderElection() bool { return true }

// Start syncs until ctx ends. A failed sync is logged and counted, and retried with a backoff
// that starts at a second and grows to the interval.
func (s *TemplateSync) Start(ctx context.Context) error {
	backoff := time.Second
	for {
		wait := s.Interval
		if err := s.SyncOnce(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error(err, "syncing the template namespace from the secret store; tenants keep the secrets they have", "retryIn", backoff)
			wait = backoff
			backoff = min(2*backoff, s.Interval)
		} else {
			backoff = time.Second
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		case <-s.trigger:
			timer.Stop()
		}
	}
}

// SyncOnce brings the template namespace in line with the store: every stored secret written
// (only when it differs), every secret that came from the store and left it removed.
func (s *TemplateSync) SyncOnce(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			syncUp.Set(0)
			return
		}
		syncUp.Set(1)
		syncLastSuccess.SetToCurrentTime()
	}()
	stored, err := s.Store.List(ctx, s.Namespace)
	if err != nil {
		return fmt.Errorf("listing shared secrets in the store: %w", err)
	}
	if err := s.ensureNamespace(ctx); err != nil {
		return err
	}
	applier := &apply.Applier{Client: s.Client, APIReader: s.APIReader}
	keep := map[string]bool{}
	for _, sec := range stored {
		keep[sec.Name] = true
		if _, err := applier.Apply(ctx, templateSecret(s.Namespace, sec)); err != nil {
			return fmt.Errorf("writing template secret %s: %w", sec.Name, err)
		}
	}
	live := &corev1.SecretList{}
	if err := s.Client.List(ctx, live, client.InNamespace(s.Namespace), client.MatchingLabels{tenancyv1alpha1.FromStoreLabel: "true"}); err != nil {
		return err
	}
	var errs []error
	for i := range live.Items {
		if sec := &live.Items[i]; !keep[sec.Name] {
			if err := s.Client.Delete(ctx, sec, client.Preconditions{UID: &sec.UID}); client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("removing template secret %s: %w", sec.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s *TemplateSync) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{}
	// The namespace carries the managed-by label, so the cache answers this without a request.
	err := s.Client.Get(ctx, client.ObjectKey{Name: s.Namespace}, ns)
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace, Labels: map[string]string{
			tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue,
		}}}
		err = s.Client.Create(ctx, ns)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	}
	return err
}

// templateSecret is a stored secret as it sits in the template namespace.
func templateSecret(namespace string, stored *corev1.Secret) *corev1.Secret {
	labels := map[string]string{}
	for k, v := range stored.Labels {
		labels[k] = v
	}
	labels[tenancyv1alpha1.ManagedByLabel] = tenancyv1alpha1.ManagedByValue
	labels[tenancyv1alpha1.FromStoreLabel] = "true"
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: stored.Name, Labels: labels, Annotations: stored.Annotations},
		Type:       stored.Type,
		Data:       stored.Data,
	}
}
