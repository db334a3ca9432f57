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
	// ReasonApplied: the tenant's NetworkPolicy to its database servers was updated as its
	// databases' placements changed; the note names it. The tenant reconciler records the same
	// reason for the other objects of the tenant's namespace it updates.
	ReasonApplied = "Applied"
)
