package v1alpha1

// Condition types. Ready is always present; Reconciling and Stalled are present only while
// true (kstatus); each of the others is owned by one phase of the reconcile.
const (
	ReadyCondition          = "Ready"
	ReconcilingCondition    = "Reconciling"
	StalledCondition        = "Stalled"
	NamespaceReadyCondition = "NamespaceReady"
)

// Condition reasons.
const (
	ReasonSucceeded            = "Succeeded"
	ReasonProgressing          = "Progressing"
	ReasonNamespaceTerminating = "NamespaceTerminating"
	ReasonNamespaceRemoved     = "NamespaceRemoved"
	ReasonOwnershipConflict    = "OwnershipConflict"
	ReasonInvalidObject        = "InvalidObject"
	ReasonApplyFailed          = "ApplyFailed"
)

// Labels and annotations that Landlord puts on what it manages.
const (
	// ManagedByLabel marks every object Landlord creates; the operator's cache only sees objects
	// carrying it, so memory scales with tenants rather than with the cluster.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "landlord"
	// TenantLabel names the tenant an object belongs to.
	TenantLabel = "tenancy.landlord.dev/tenant"
	// NodePoolLabel on a tenant namespace names the node pool its pods run on.
	NodePoolLabel = "tenancy.landlord.dev/node-pool"
	// DomainsAnnotation on a tenant namespace lists the domains the tenant serves, comma separated.
	DomainsAnnotation = "tenancy.landlord.dev/domains"
	// Finalizer makes tenant deletion orderly.
	Finalizer = "tenancy.landlord.dev/finalizer"
)
