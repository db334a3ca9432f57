package writes

import (
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReasonDriftRepaired: an object someone else changed was put back as Landlord builds it; the
// note names who changed it.
const ReasonDriftRepaired = "DriftRepaired"

// driftRepairs counts objects put back after someone else changed them, by kind: a steady rate
// is someone (a person, a script, another controller) fighting Landlord, which the events on the
// object's owner name.
var driftRepairs = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "landlord_drift_repairs_total",
	Help: "Objects Landlord put back as it builds them after someone else changed or added to them, by kind.",
}, []string{"kind"})

func init() {
	metrics.Registry.MustRegister(driftRepairs)
}

// MaxEventAction is the longest action an event may carry.
const MaxEventAction = 128

// Truncate cuts s to at most n bytes: events refuse longer actions and notes.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// DriftRepaired returns an apply.Applier's Repaired hook: it counts and logs the repair and
// records a warning on regarding (the tenant, or nil for Landlord's own cluster-wide objects)
// naming the object and who had added to it.
func DriftRepaired(logger logr.Logger, recorder events.EventRecorder, regarding client.Object) func(client.Object, []string) {
	return func(obj client.Object, foreign []string) {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		driftRepairs.WithLabelValues(kind).Inc()
		logger.Info("drift repaired", append(ObjectLogKeys(obj), "fieldManagers", foreign)...)
		if recorder == nil || regarding == nil {
			return
		}
		// The managers are in the action too: events of one object, reason and action within
		// minutes are folded into the first one's series, note and all, and a second editor
		// must not hide behind the first.
		by, action := "someone else changed fields Landlord sets", "Repair"
		if len(foreign) > 0 {
			by = "fields added by " + strings.Join(foreign, ", ") + " are removed"
			action = Truncate("RemoveFieldsOf:"+strings.Join(foreign, ","), MaxEventAction)
		}
		recorder.Eventf(regarding, obj, corev1.EventTypeWarning, ReasonDriftRepaired, action, "%s put back as Landlord builds it: %s", ObjectRef(obj), by)
	}
}
