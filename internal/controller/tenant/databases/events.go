package databases

// Reasons of the events the engine records on a Tenant for what it did, beside the Warning events
// whose reason is the one its database condition reports. Each is a constant so the reasons
// reference (docs/reasons.md) can say what it means.
const (
	// ReasonProvisioned: a database and its login were created on a DatabaseServer.
	ReasonProvisioned = "Provisioned"
	// ReasonRotated: a database login was given a new password, as a rotation request asked.
	ReasonRotated = "Rotated"
	// ReasonCredentialsRestored: the secret store held no record of a database's credentials;
	// the password in the tenant's credentials Secret was written back to it and kept.
	ReasonCredentialsRestored = "CredentialsRestored"
	// ReasonClassMove: a database is on a server its TenantClass does not place it on (the
	// tenant changed class, or its class changed), and a DatabaseMove to a server the class
	// chooses was created; the old copy is kept until the move is confirmed.
	ReasonClassMove = "ClassMove"
	// ReasonApplied: objects of the tenant's namespace (its RBAC, quota, limits, network
	// policies) that had drifted or whose spec changed were updated; the note names them. The
	// database engine records it for the NetworkPolicy to the tenant's database servers, as
	// their databases' placements change, and the namespace engine for the other objects.
	ReasonApplied = "Applied"
)
