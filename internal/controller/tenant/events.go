package tenant

// Reasons of the events the tenant controller records on a Tenant for what it did, beside the
// Warning events whose reason is the one its conditions report. Each is a constant so the
// reasons reference (docs/reasons.md) can say what it means.
const (
	// ReasonApplied: objects of the tenant's namespace (its RBAC, quota, limits, network
	// policies) that had drifted or whose spec changed were updated; the note names them.
	ReasonApplied = "Applied"
	// ReasonNodePoolChanged: the tenant moved to another node pool, and the pods placed on the
	// old one were deleted for their controllers to recreate them on the new one.
	ReasonNodePoolChanged = "NodePoolChanged"
	// ReasonPodsStopped: the tenant is Frozen, and the pods running in its namespace were
	// deleted.
	ReasonPodsStopped = "PodsStopped"
)
