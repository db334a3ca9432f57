package testenv

import (
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metricSum adds up the samples of a metric in the operator's registry whose labels include
// the given ones.
func metricSum(name string, labels map[string]string) float64 {
	v, _ := OperatorMetric(name, labels)
	return v
}

// OperatorMetric adds up the samples of a metric in the registry of the operators this process
// runs whose labels include the given ones.
func OperatorMetric(name string, labels map[string]string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	return SumMetric(families, name, labels), nil
}

// SumMetric adds up the counter, gauge and histogram-sum samples of a metric whose labels
// include the given ones.
func SumMetric(families []*dto.MetricFamily, name string, labels map[string]string) float64 {
	return addUp(families, name, labels, (*dto.Histogram).GetSampleSum)
}

// CountMetric is SumMetric with a histogram's number of observations in place of their sum.
func CountMetric(families []*dto.MetricFamily, name string, labels map[string]string) float64 {
	return addUp(families, name, labels, func(h *dto.Histogram) float64 { return float64(h.GetSampleCount()) })
}

func addUp(families []*dto.MetricFamily, name string, labels map[string]string, histogram func(*dto.Histogram) float64) float64 {
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += histogram(m.Histogram)
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Reconciles is how many tenant reconciles have finished, whatever their result.
func (o *Operator) Reconciles() int {
	return int(metricSum("controller_runtime_reconcile_total", map[string]string{"controller": "tenant"}))
}

// Idle reports whether the tenant controller has nothing queued and nothing running. The depth
// gauge is shared by every queue of the name in the process, and a queue shut down with items
// ready leaves them counted for good: what an earlier operator of this process left is taken off.
func (o *Operator) Idle() bool {
	return metricSum("workqueue_depth", map[string]string{"name": o.controller})-o.staleDepth == 0 &&
		metricSum("controller_runtime_active_workers", map[string]string{"controller": o.controller}) == 0
}
