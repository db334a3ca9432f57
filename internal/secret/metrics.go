package secret

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// Operation names of the store metrics: one per Store method.
const (
	OperationGet      = "get"
	OperationList     = "list"
	OperationPut      = "put"
	OperationDelete   = "delete"
	OperationIdentity = "identity"
)

// Results of the store metrics. A secret the store does not hold is an answer, not a failure.
const (
	ResultSuccess  = "success"
	ResultNotFound = "not_found"
	// ResultPreconditionFailed is a conditional delete that found the secret not the one it may
	// delete, and kept it.
	ResultPreconditionFailed = "precondition_failed"
	ResultError              = "error"
)

var (
	storeOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_secret_store_operations_total",
		Help: "Calls to the secret store, by backend (file, gcs, url), operation (get, list, put, delete, identity) and result (success, not_found, precondition_failed, error).",
	}, []string{"backend", "operation", "result"})
	storeOperationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "landlord_secret_store_operation_duration_seconds",
		Help: "How long calls to the secret store took, by backend and operation.",
		// From a local directory's sub-millisecond to Cloud Storage with KMS under load.
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"backend", "operation"})
)

// Collectors are the store metrics, for the operator to register once.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{storeOperations, storeOperationSeconds}
}

// Instrumented counts and times every call to s, a store of the given backend. Wrapped around
// WithTimeout, a call that timed out counts as an error of its bounded duration.
func Instrumented(s Store, backend string) Store {
	return &instrumentedStore{store: s, backend: backend}
}

type instrumentedStore struct {
	store   Store
	backend string
}

func (i *instrumentedStore) observe(operation string, start time.Time, err error) {
	result := ResultSuccess
	switch {
	case errors.Is(err, ErrNotFound):
		result = ResultNotFound
	case errors.Is(err, ErrPreconditionFailed):
		result = ResultPreconditionFailed
	case err != nil:
		result = ResultError
	}
	storeOperations.WithLabelValues(i.backend, operation, result).Inc()
	storeOperationSeconds.WithLabelValues(i.backend, operation).Observe(time.Since(start).Seconds())
}

func (i *instrumentedStore) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	start := time.Now()
	s, err := i.store.Get(ctx, namespace, name)
	i.observe(OperationGet, start, err)
	return s, err
}

func (i *instrumentedStore) List(ctx context.Context, namespace string) ([]*corev1.Secret, error) {
	start := time.Now()
	s, err := i.store.List(ctx, namespace)
	i.observe(OperationList, start, err)
	return s, err
}

func (i *instrumentedStore) Put(ctx context.Context, s *corev1.Secret) error {
	start := time.Now()
	err := i.store.Put(ctx, s)
	i.observe(OperationPut, start, err)
	return err
}

func (i *instrumentedStore) Delete(ctx context.Context, namespace, name string) error {
	start := time.Now()
	err := i.store.Delete(ctx, namespace, name)
	i.observe(OperationDelete, start, err)
	return err
}

func (i *instrumentedStore) Identity(ctx context.Context) (string, error) {
	start := time.Now()
	id, err := i.store.Identity(ctx)
	i.observe(OperationIdentity, start, err)
	return id, err
}

func (i *instrumentedStore) DeleteIf(ctx context.Context, namespace, name string, match func(*corev1.Secret) bool) error {
	start := time.Now()
	err := i.store.DeleteIf(ctx, namespace, name, match)
	i.observe(OperationDelete, start, err)
	return err
}
