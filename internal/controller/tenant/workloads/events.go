package workloads

// Reasons of the events the engine records on a Tenant for what it did, beside those of the API
// types (volumes kept and deleted). Each is a constant so the reasons reference
// (docs/reasons.md) can say what it means.
const (
	// ReasonNodePoolChanged: the tenant moved to another node pool, and the pods placed on the
	// old one were deleted for their controllers to recreate them on the new one.
	ReasonNodePoolChanged = "NodePoolChanged"
	// ReasonPodsStopped: the tenant is Frozen, and the pods running in its namespace were
	// deleted.
	ReasonPodsStopped = "PodsStopped"
)
