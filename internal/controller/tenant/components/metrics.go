package components

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// componentRenderFailures counts the attempts to render a component that failed, by the reason
// its tenant then reports: a missing template, a template that does not render, or one
// rendering a kind components may not create. Every retry of a stalled tenant counts. Like the
// operator's other metrics, it carries no per-tenant label.
var componentRenderFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "landlord_component_render_failures_total",
	Help: "Component renderings that failed, by component and reason (TemplateNotFound, RenderFailed, KindNotAllowed).",
}, []string{"component", "reason"})

func init() {
	metrics.Registry.MustRegister(componentRenderFailures)
}
