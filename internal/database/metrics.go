package database

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Operation names of the database metrics: one per Provisioner call.
const (
	OperationCheck  = "check"
	OperationEnsure = "ensure"
	OperationDrop   = "drop"
	// OperationInspect is a look that changes nothing (Holds).
	OperationInspect = "inspect"
	// OperationSizes reads the size of every database on a server (the usage sampler's query).
	OperationSizes = "sizes"
	// OperationLimit gives a login the server's connection limit (SetConnectionLimit).
	OperationLimit = "limit"
	// OperationDisconnect ends a login's sessions (Disconnect: a move's fence).
	OperationDisconnect = "disconnect"
)

// Results of the database metrics.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

var (
	operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "landlord_database_operations_total",
		Help: "Calls to database servers, by DatabaseServer, engine, operation (check, ensure, inspect, sizes, drop) and result (success, error).",
	}, []string{"server", "engine", "operation", "result"})
	operationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "landlord_database_operation_duration_seconds",
		Help: "How long calls to database servers took, by DatabaseServer, engine and operation.",
		// From a loopback server's milliseconds to the default 30-second timeout.
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"server", "engine", "operation"})
)

// Collectors are the database metrics, for the operator to register once.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{operations, operationSeconds}
}

// Instrumented counts and times every call of p, a provisioner of the DatabaseServer named
// server: DatabaseServers are few and named by the platform team, so the label stays bounded.
func Instrumented(server string, engine Engine, p Provisioner) Provisioner {
	return &instrumented{server: server, engine: string(engine), next: p}
}

type instrumented struct {
	server, engine string
	next           Provisioner
}

func (i *instrumented) observe(operation string, start time.Time, err error) {
	result := ResultSuccess
	if err != nil {
		result = ResultError
	}
	operations.WithLabelValues(i.server, i.engine, operation, result).Inc()
	operationSeconds.WithLabelValues(i.server, i.engine, operation).Observe(time.Since(start).Seconds())
}

func (i *instrumented) Check(ctx context.Context) (ServerInfo, error) {
	start := time.Now()
	v, err := i.next.Check(ctx)
	i.observe(OperationCheck, start, err)
	return v, err
}

func (i *instrumented) Ensure(ctx context.Context, acct Account) error {
	start := time.Now()
	err := i.next.Ensure(ctx, acct)
	i.observe(OperationEnsure, start, err)
	return err
}

func (i *instrumented) Holds(ctx context.Context, acct Account) (bool, error) {
	start := time.Now()
	held, err := i.next.Holds(ctx, acct)
	i.observe(OperationInspect, start, err)
	return held, err
}

func (i *instrumented) Drop(ctx context.Context, acct Account) error {
	start := time.Now()
	err := i.next.Drop(ctx, acct)
	i.observe(OperationDrop, start, err)
	return err
}

func (i *instrumented) SetConnectionLimit(ctx context.Context, acct Account) error {
	start := time.Now()
	err := i.next.SetConnectionLimit(ctx, acct)
	i.observe(OperationLimit, start, err)
	return err
}

func (i *instrumented) Disconnect(ctx context.Context, acct Account) error {
	start := time.Now()
	err := i.next.Disconnect(ctx, acct)
	i.observe(OperationDisconnect, start, err)
	return err
}

func (i *instrumented) Sizes(ctx context.Context) (map[string]int64, error) {
	start := time.Now()
	sizes, err := i.next.Sizes(ctx)
	i.observe(OperationSizes, start, err)
	return sizes, err
}

func (i *instrumented) Close() error { return i.next.Close() }
