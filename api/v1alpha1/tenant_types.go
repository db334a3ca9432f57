package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantState is where a tenant is in its lifecycle.
// +kubebuilder:validation:Enum=Active;Frozen;Archived;Purged
type TenantState string

const (
	// StateActive: namespace, RBAC, policy and workloads present and running.
	StateActive TenantState = "Active"
	// StateFrozen: everything kept, workloads scaled to zero.
	StateFrozen TenantState = "Frozen"
	// StateArchived: the namespace is removed; data (databases, stored credentials) is kept, so
	// returning to Active restores the tenant.
	StateArchived TenantState = "Archived"
	// StatePurged: everything is removed, data included. Final.
	StatePurged TenantState = "Purged"
)

// PodSecurityLevel is a Pod Security Standards level enforced on the tenant namespace.
// +kubebuilder:validation:Enum=baseline;restricted
type PodSecurityLevel string

const (
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// Subject is a user, group or service account bound to one of the tenant roles.
// +kubebuilder:validation:XValidation:rule="self.kind == 'ServiceAccount' ? has(self.__namespace__) : !has(self.__namespace__)",message="namespace is required for a ServiceAccount subject and not allowed for a User or Group"
type Subject struct {
	// Kind of the subject.
	// +kubebuilder:validation:Enum=User;Group;ServiceAccount
	Kind string `json:"kind"`

	// Name of the user, group or service account.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// Namespace of a ServiceAccount subject.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// Access lists who may use the tenant's namespace, by role.
type Access struct {
	// Admins manage workloads, configuration and secrets in the tenant namespace.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Admins []Subject `json:"admins,omitempty"`

	// Operators manage workloads and configuration, but cannot read secrets.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Operators []Subject `json:"operators,omitempty"`

	// Viewers read workloads and configuration, but not secrets.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Viewers []Subject `json:"viewers,omitempty"`
}

// Limits are the per-container defaults and maximums of the tenant's LimitRange.
type Limits struct {
	// Default limits for a container that sets none.
	// +optional
	Default corev1.ResourceList `json:"default,omitempty"`

	// DefaultRequest is the request for a container that sets none.
	// +optional
	DefaultRequest corev1.ResourceList `json:"defaultRequest,omitempty"`

	// Max is the largest limit a container may set.
	// +optional
	Max corev1.ResourceList `json:"max,omitempty"`
}

// Domain is a DNS name the tenant may serve, optionally a wildcard ("*.acme.example.com").
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:XValidation:rule="self.matches('^([*][.])?([a-z0-9]([-a-z0-9]*[a-z0-9])?[.])+[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a lowercase DNS name such as acme.example.com, optionally starting with '*.'"
type Domain string

// TenantSpec is the desired state of one customer instance.
type TenantSpec struct {
	// State is the lifecycle state. Purged is final and requires purgeConfirmation.
	// +kubebuilder:default=Active
	// +kubebuilder:validation:XValidation:rule="oldSelf != 'Purged' || self == 'Purged'",message="a Purged tenant is final and cannot change state"
	// +optional
	State TenantState `json:"state,omitempty"`

	// PurgeConfirmation must equal the tenant's name when state is Purged, so that data is never
	// dropped by a typo or a copied manifest.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	PurgeConfirmation string `json:"purgeConfirmation,omitempty"`

	// Organization is the customer's name, for people.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Organization string `json:"organization,omitempty"`

	// Email is the customer's contact address.
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^@ ]+@[^@ ]+[.][^@ ]+$')",message="must be an email address such as ops@example.com"
	// +optional
	Email string `json:"email,omitempty"`

	// Access binds users, groups and service accounts to the tenant roles.
	// +optional
	Access Access `json:"access,omitempty"`

	// Quota is the tenant namespace's ResourceQuota (hard limits); resources not named here
	// take the operator's defaults. NodePort and LoadBalancer services are always capped at 0.
	// +optional
	Quota corev1.ResourceList `json:"quota,omitempty"`

	// Limits are the container defaults and maximums; unset fields take the operator's defaults.
	// +optional
	Limits *Limits `json:"limits,omitempty"`

	// PodSecurity is the Pod Security Standards level enforced in the namespace; the operator's
	// default (restricted unless configured otherwise) when empty.
	// +optional
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// NodePool names the pool of nodes the tenant's pods run on.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	// +optional
	NodePool string `json:"nodePool,omitempty"`

	// Domains the tenant serves.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Domains []Domain `json:"domains,omitempty"`
}

// TenantStatus is the observed state of a tenant.
type TenantStatus struct {
	// ObservedGeneration is the generation last reconciled to completion or to a terminal error.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`

	// Namespace is the tenant's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Conditions: Ready (always), Reconciling and Stalled (only while true), and one condition
	// per concern (NamespaceReady).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Tenant is one customer's isolated instance of the application.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=tnt
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 50",message="metadata.name must be a DNS label of at most 50 characters (lowercase letters, digits and '-') so the tenant's namespace name fits"
// +kubebuilder:validation:XValidation:rule="self.spec.state != 'Purged' || (has(self.spec.purgeConfirmation) && self.spec.purgeConfirmation == self.metadata.name)",message="spec.purgeConfirmation must equal the tenant's name to purge it",fieldPath=".spec.purgeConfirmation"
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TenantSpec `json:"spec"`

	// +kubebuilder:default={"observedGeneration":-1}
	// +optional
	Status TenantStatus `json:"status,omitempty"`
}

// TenantList is a list of tenants.
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Tenant{}, &TenantList{})
}
