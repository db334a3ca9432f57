package namespaces

// Reasons of the events the engine records on a Tenant for what it did, beside the Warning events
// whose reason is the one its namespace condition reports. Each is a constant so the reasons
// reference (docs/reasons.md) can say what it means.
const (
	// ReasonApplied: objects of the tenant's namespace (its RBAC, quota, limits, network
	// policies) that had drifted or whose spec changed were updated; the note names them. The
	// database engine records it for the NetworkPolicy to the tenant's database servers, as
	// their databases' placements change, and the namespace engine for the other objects.
	ReasonApplied = "Applied"
)
