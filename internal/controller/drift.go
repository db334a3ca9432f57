package controller

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReasonDriftRepaired is the event reason of an object put back after someone else changed it.
const ReasonDriftRepaired = "DriftRepaired"

// driftRepairs counts objects put back after someone else changed them, by kind: a steady rate
// is someone (a person, a script, another controller) fighting Landlord, which the events on the
// object's owner name.
var driftRepairs = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "landlord_drift_repairs_total",
	Help: "Objects Landlord put back after someone else changed or added to them, by kind.",
}, []string{"kind"})

func init() {
	metrics.Registry.MustRegister(driftRepairs)
}

// driftRepaired returns an apply.Applier's Repaired hook: it counts the repair and records a
// warning on regarding (the tenant, or nil for Landlord's own cluster-wide objects) naming the
// object and who had added to it.
func driftRepaired(recorder events.EventRecorder, regarding client.Object) func(client.Object, []string) {
	return func(obj client.Object, foreign []string) {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		driftRepairs.WithLabelValues(kind).Inc()
		if recorder == nil || regarding == nil {
			return
		}
		by := "someone else changed fields Landlord sets"
		if len(foreign) > 0 {
			by = "fields added by " + strings.Join(foreign, ", ") + " are removed"
		}
		recorder.Eventf(regarding, obj, corev1.EventTypeWarning, ReasonDriftRepaired, "Repair", "%s put back as Landlord builds it: %s", objectRef(obj), by)
	}
}
