package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantTemplate is what every spare of a pool is created from.
type TenantTemplate struct {
	// Labels are put on every spare (and stay on it once allocated). Keys under
	// tenancy.landlord.dev/ are Landlord's: they say what a tenant is (a pool's spare, a
	// customer's), so a template cannot carry them.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('tenancy.landlord.dev/'))",message="label keys under tenancy.landlord.dev/ are reserved for Landlord"
	Labels map[string]string `json:"labels,omitempty"`

	// Spec is the spares' Tenant spec. Organization and email come from the claim.
	// +kubebuilder:validation:XValidation:rule="!has(self.state) || self.state == 'Active'",message="spares are Active"
	// +kubebuilder:validation:XValidation:rule="!has(self.suspend) || !self.suspend",message="spares are not suspended: a suspended spare is never Ready for a claim; suspend one spare by itself instead"
	Spec TenantSpec `json:"spec"`
}

// TenantPoolSpec is how many ready spares a pool keeps, and what they are.
type TenantPoolSpec struct {
	// Replicas is how many unallocated spares the pool keeps, Ready or on their way; suspended
	// spares are not counted.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas int32 `json:"replicas"`

	// MaxProvisioning caps how many spares may be provisioning at once, so refilling a large pool
	// does not flood the database servers; unlimited when unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxProvisioning *int32 `json:"maxProvisioning,omitempty"`

	// Template is what spares are created from.
	Template TenantTemplate `json:"template"`

	// MaxTenants caps the tenants the pool has created that still exist: those it handed out
	// and its spares (Ready, provisioning or suspended). Every claim bound makes the pool create
	// a spare in its place, so without a cap each claim is a new tenant for good. At the cap the
	// pool creates no spare, says so in its MaxTenantsReached condition (Stalled while it holds
	// fewer spares than replicas), and claims wait with the reason MaxTenantsReached until it is
	// raised or tenants are deleted. Unlimited when unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxTenants *int32 `json:"maxTenants,omitempty"`

	// Claims says whose TenantClaims the pool binds, and what a claim may ask for.
	// +optional
	Claims TenantPoolClaims `json:"claims,omitempty"`
}

// TenantPoolClaims says whose claims a pool binds and which labels they may put on a tenant.
// A claim the pool does not allow is never bound: it is Stalled with the reason ClaimRefused,
// naming the field, until it is deleted or the pool allows it.
type TenantPoolClaims struct {
	// NamespaceSelector selects the namespaces whose claims the pool binds. Unset, claims from
	// every namespace are bound: who may create a TenantClaim there is RBAC's to say (the
	// landlord-claimer ClusterRole, which no built-in role includes). Select by
	// kubernetes.io/metadata.name: a label of one's own lets in whoever may label namespaces.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// AllowedLabels are the labels a claim may put on its tenant, each with the values it may
	// take. Shared secrets, rollouts and backup schedules select tenants by label, so a label a
	// customer chooses (plan: enterprise) would choose what its tenant gets. A claim setting a
	// label not listed, or to a value not listed, is refused. Empty: a claim sets no label.
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=32
	// +optional
	AllowedLabels []AllowedClaimLabel `json:"allowedLabels,omitempty"`
}

// AllowedClaimLabel is a label a claim may set.
type AllowedClaimLabel struct {
	// Key is the label's key; keys under tenancy.landlord.dev/ are Landlord's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('tenancy.landlord.dev/')",message="label keys under tenancy.landlord.dev/ are reserved for Landlord"
	Key string `json:"key"`

	// Values are the values the label may take; empty allows any.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Values []string `json:"values,omitempty"`
}

// TenantPoolStatus counts the pool's tenants.
type TenantPoolStatus struct {
	// ObservedGeneration is the generation last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Ready spares can be claimed now.
	// +optional
	Ready int32 `json:"ready"`
	// Provisioning spares are on their way to Ready.
	// +optional
	Provisioning int32 `json:"provisioning"`
	// Suspended spares were suspended by someone looking at them: the pool neither hands them
	// out nor counts them towards replicas or maxProvisioning, creates others in their place,
	// and never deletes them when it shrinks. They count again once resumed.
	// +optional
	Suspended int32 `json:"suspended"`
	// Allocated tenants were handed out by this pool; the pool never touches them again.
	// +optional
	Allocated int32 `json:"allocated"`
	// Conditions: Ready (the pool holds replicas Ready spares), Reconciling while filling,
	// Stalled when spec.maxTenants keeps it from filling, and MaxTenantsReached, True while
	// it has created spec.maxTenants tenants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TenantPool keeps fully provisioned, unallocated spare tenants, so a signup is one bind away
// from a working instance.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tp,categories=landlord
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Provisioning",type=integer,JSONPath=`.status.provisioning`
// +kubebuilder:printcolumn:name="Allocated",type=integer,JSONPath=`.status.allocated`
// +kubebuilder:printcolumn:name="Suspended",type=integer,JSONPath=`.status.suspended`,priority=1
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.spec.maxTenants`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters, so spare names fit"
type TenantPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantPoolSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status TenantPoolStatus `json:"status,omitempty"`
}

// TenantPoolList is a list of pools.
// +kubebuilder:object:root=true
type TenantPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantPool `json:"items"`
}

// ClaimPhase is where a claim is.
// +kubebuilder:validation:Enum=Pending;Bound
type ClaimPhase string

const (
	ClaimPending ClaimPhase = "Pending"
	ClaimBound   ClaimPhase = "Bound"
)

// Claim reasons.
const (
	// ReasonPoolNotFound: the claim's pool does not exist, or is being deleted.
	ReasonPoolNotFound = "PoolNotFound"
	// ReasonNoReadySpare: the pool has no Ready spare; the claim binds when one is.
	ReasonNoReadySpare = "NoReadySpare"
	// ReasonBound: the claim is bound to a tenant.
	ReasonBound = "Bound"
	// ReasonClaimRefused: the claim's pool does not bind claims from its namespace, or with
	// its labels; the claim is never bound unless the pool comes to allow it.
	ReasonClaimRefused = "ClaimRefused"
	// ReasonMaxTenantsReached: the pool has created spec.maxTenants tenants and creates no more
	// spares until it is raised or tenants are deleted.
	ReasonMaxTenantsReached = "MaxTenantsReached"
)

// TenantClaimSpec asks a pool for a tenant for one customer.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a claim is made once"
type TenantClaimSpec struct {
	// Pool names the TenantPool to take a spare from.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	Pool string `json:"pool"`

	// Organization is the customer's name. It holds no control characters or line breaks:
	// templates print it into manifests, where a line break would add fields of the customer's
	// choosing.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'[\\p{Cc}\\x{2028}\\x{2029}]')",message="organization must not contain control characters or line breaks"
	// +optional
	Organization string `json:"organization,omitempty"`

	// Email is the customer's contact address, without control characters or line breaks.
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^@ ]+@[^@ ]+[.][^@ ]+$')",message="must be an email address such as ops@example.com"
	// +kubebuilder:validation:XValidation:rule="!self.matches(r'[\\p{Cc}\\x{2028}\\x{2029}]')",message="email must not contain control characters or line breaks"
	// +optional
	Email string `json:"email,omitempty"`

	// Labels are added to the tenant (a plan, a region). Keys under tenancy.landlord.dev/ are
	// Landlord's own and refused.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('tenancy.landlord.dev/'))",message="label keys under tenancy.landlord.dev/ are reserved"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// TenantClaimStatus is the outcome of a claim.
type TenantClaimStatus struct {
	// ObservedGeneration is the generation of the claim the status reports on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Phase is Pending until a spare is bound, then Bound. A claim never fails: a missing pool
	// may yet be created, and an empty one refills.
	// +optional
	Phase ClaimPhase `json:"phase,omitempty"`
	// Tenant is the bound tenant's name.
	// +optional
	Tenant string `json:"tenant,omitempty"`
	// Namespace is the bound tenant's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// BoundTime is when the tenant was bound.
	// +optional
	BoundTime *metav1.Time `json:"boundTime,omitempty"`
	// Reason says why the claim is Pending or Failed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains Reason.
	// +optional
	Message string `json:"message,omitempty"`
	// Conditions follow kstatus, so kubectl wait --for=condition=Ready and Flux health checks
	// work on a claim: Ready is True once the claim is Bound; while it is Pending, Ready is False
	// and Reconciling True, both with the reason it waits (NoReadySpare, PoolNotFound).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TenantClaim is a signup: it binds one Ready spare of a pool to a customer.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tc,categories=landlord
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.pool`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.status.tenant`
// +kubebuilder:printcolumn:name="Bound",type=date,JSONPath=`.status.boundTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TenantClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantClaimSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status TenantClaimStatus `json:"status,omitempty"`
}

// TenantClaimList is a list of claims.
// +kubebuilder:object:root=true
type TenantClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantClaim `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantPool{}, &TenantPoolList{}, &TenantClaim{}, &TenantClaimList{})
}
