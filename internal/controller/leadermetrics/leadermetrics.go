// Package leadermetrics serves metrics that the leading replica computes from its cache when
// Prometheus scrapes it: counted at scrape time, they cannot drift from the objects as they are,
// and they cost no API request and no work in any reconcile. One replica reports them, so a sum
// over replicas counts nothing twice.
package leadermetrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// collectTimeout bounds a scrape's reads; the cache answers from memory.
const collectTimeout = 10 * time.Second

// CollectFunc sends the metrics computed from reader to ch, or returns why it cannot.
type CollectFunc func(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error

// Collector is a prometheus.Collector that calls its CollectFunc with the reader of the
// Source that runs, and reports nothing while none does (a standby replica).
type Collector struct {
	descs   []*prometheus.Desc
	collect CollectFunc

	mu     sync.Mutex
	reader client.Reader
	// owner is the Source that set reader.
	owner *Source
}

// New returns a collector of the metrics descs describes, computed by collect.
func New(collect CollectFunc, descs ...*prometheus.Desc) *Collector {
	return &Collector{descs: descs, collect: collect}
}

// Describe sends the collector's descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect computes the metrics from the running Source's reader, if any.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	if err := c.collect(ctx, reader, ch); err != nil {
		// The scrape fails, and says why, rather than reporting a partial fleet as the whole.
		ch <- prometheus.NewInvalidMetric(c.descs[0], err)
	}
}

// Source returns a manager Runnable that serves c from reader while its operator leads (a
// Runnable that does not say otherwise runs on the leader only).
func (c *Collector) Source(reader client.Reader) *Source {
	return &Source{collector: c, reader: reader}
}

// Source is a manager Runnable serving its collector from its reader while it runs.
type Source struct {
	collector *Collector
	reader    client.Reader
}

// Start serves the collector from the reader until ctx ends.
func (s *Source) Start(ctx context.Context) error {
	c := s.collector
	c.mu.Lock()
	c.reader, c.owner = s.reader, s
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	// Another operator of this process (tests restart it) may have taken over meanwhile.
	if c.owner == s {
		c.reader, c.owner = nil, nil
	}
	c.mu.Unlock()
	return nil
}
