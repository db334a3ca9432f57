package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/config"
)

func TestLeastSquaresSlope(t *testing.T) {
	for name, tc := range map[string]struct {
		xs, ys []float64
		want   float64
	}{
		"a line":               {xs: []float64{0, 1, 2, 3}, ys: []float64{1, 3, 5, 7}, want: 2},
		"flat":                 {xs: []float64{0, 0.5, 1}, ys: []float64{40, 40, 40}, want: 0},
		"noise around a trend": {xs: []float64{0, 1, 2, 3}, ys: []float64{10, 9, 12, 11}, want: 0.6},
		"falling":              {xs: []float64{0, 2}, ys: []float64{8, 4}, want: -2},
		"one point":            {xs: []float64{1}, ys: []float64{5}, want: 0},
		"no spread in x":       {xs: []float64{2, 2, 2}, ys: []float64{1, 2, 3}, want: 0},
		"no points":            {},
	} {
		t.Run(name, func(t *testing.T) {
			if got := leastSquaresSlope(tc.xs, tc.ys); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("slope %v, want %v", got, tc.want)
			}
		})
	}
}

// Every kind Landlord puts in a tenant namespace is among what the namespace controller's
// stand-in deletes; otherwise a finished namespace would leave objects behind in the operator's
// cache, and the soak would measure that.
func TestNamespaceContentsCoverATenantsKinds(t *testing.T) {
	kinds := map[string]bool{}
	cfg := config.Default()
	for _, gvk := range namespaceContents(&cfg) {
		kinds[gvk.Kind] = true
	}
	for _, want := range []string{"RoleBinding", "ResourceQuota", "LimitRange", "NetworkPolicy", "Secret", "ConfigMap", "Service"} {
		if !kinds[want] {
			t.Errorf("%s missing from %v", want, kinds)
		}
	}
	if kinds["Namespace"] {
		t.Error("the namespace itself is among its contents")
	}
}

func TestPrintSoak(t *testing.T) {
	var out bytes.Buffer
	printSoak(&out, &soakReport{
		Seconds: 600, OperationsPerSecond: 2, LiveHeapSlopeMiBPerHour: 0.25, NamespacesFinished: 7,
		Operations: soakOperations{Created: 10, Deleted: 20},
		Samples: []soakSample{
			{Seconds: 0, RSSMiB: 100, LiveHeapMiB: 30, Tenants: 103},
			{Seconds: 300, RSSMiB: 120, LiveHeapMiB: 29.5, Tenants: 104},
			{Seconds: 600, RSSMiB: 110, LiveHeapMiB: 30.5, Tenants: 103},
		},
	})
	for _, want := range []string{
		"10 minutes of churn at 2.0 operations/s: 10 tenants created",
		"20 deleted",
		"7 tenant namespaces were emptied and finalized",
		"| operator RSS | 100 MiB | 110 MiB | 100 MiB | 120 MiB |",
		"| live heap | 30.0 MiB | 30.5 MiB | 29.5 MiB | 30.5 MiB |",
		"| tenants | 103 | 103 | 103 | 104 |",
		"Live heap trend: +0.25 MiB per hour (least squares over 3 samples).",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	out.Reset()
	printSoak(&out, nil)
	if out.Len() != 0 {
		t.Errorf("no soak printed %q", out.String())
	}
}
