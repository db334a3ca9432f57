package leadermetrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/landlord-dev/landlord/internal/controller/leadermetrics"
)

var desc = prometheus.NewDesc("things", "Things.", nil, nil)

// counting reports one series whose value is which reader it was computed from.
func counting(readers map[client.Reader]float64) leadermetrics.CollectFunc {
	return func(_ context.Context, r client.Reader, ch chan<- prometheus.Metric) error {
		v, ok := readers[r]
		if !ok {
			return errors.New("an unknown reader")
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
		return nil
	}
}

// run starts s until the returned function stops it and waits for Start to return.
func run(t *testing.T, s *leadermetrics.Source) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// value waits until a scrape reports want, or no series for -1: a Source sets its reader a
// moment after it is started.
func value(t *testing.T, c prometheus.Collector, want float64) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		n := testutil.CollectAndCount(c)
		if want < 0 {
			g.Expect(n).To(BeZero())
			return
		}
		g.Expect(n).To(Equal(1))
		g.Expect(testutil.ToFloat64(c)).To(Equal(want))
	}).WithTimeout(5 * time.Second).Should(Succeed())
}

func TestCollector(t *testing.T) {
	first, second := fake.NewClientBuilder().Build(), fake.NewClientBuilder().Build()
	c := leadermetrics.New(counting(map[client.Reader]float64{first: 1, second: 2}), desc)

	t.Run("a replica that does not lead reports nothing", func(t *testing.T) {
		value(t, c, -1)
	})
	t.Run("the leading replica reports from its reader, and nothing once it stops", func(t *testing.T) {
		stop := run(t, c.Source(first))
		value(t, c, 1)
		stop()
		value(t, c, -1)
	})
	t.Run("an operator that took over keeps reporting when the one before it stops", func(t *testing.T) {
		stopFirst := run(t, c.Source(first))
		value(t, c, 1)
		stopSecond := run(t, c.Source(second))
		value(t, c, 2)
		stopFirst()
		value(t, c, 2)
		stopSecond()
		value(t, c, -1)
	})
	t.Run("a reader that fails fails the scrape rather than reporting part of the fleet", func(t *testing.T) {
		broken := leadermetrics.New(counting(nil), desc)
		defer run(t, broken.Source(first))()
		registry := prometheus.NewRegistry()
		registry.MustRegister(broken)
		NewWithT(t).Eventually(func() error {
			_, err := registry.Gather()
			return err
		}).WithTimeout(5 * time.Second).Should(MatchError(ContainSubstring("an unknown reader")))
	})
}
