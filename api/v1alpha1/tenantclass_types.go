package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClassField is a field of a Tenant's spec that its TenantClass may let the tenant set itself.
// +kubebuilder:validation:Enum=quota;limits;podSecurity;nodePool;costCode;maintenanceWindows;databaseServers
type ClassField string

const (
	// ClassFieldQuota is spec.quota: the tenant's keys replace the class's of the same name.
	ClassFieldQuota ClassField = "quota"
	// ClassFieldLimits is spec.limits: each of the tenant's keys replaces the class's.
	ClassFieldLimits ClassField = "limits"
	// ClassFieldPodSecurity is spec.podSecurity.
	ClassFieldPodSecurity ClassField = "podSecurity"
	// ClassFieldNodePool is spec.nodePool.
	ClassFieldNodePool ClassField = "nodePool"
	// ClassFieldCostCode is spec.costCode.
	ClassFieldCostCode ClassField = "costCode"
	// ClassFieldMaintenanceWindows is spec.maintenanceWindows.
	ClassFieldMaintenanceWindows ClassField = "maintenanceWindows"
	// ClassFieldDatabaseServers is spec.databases.postgres[].server and
	// spec.databases.mysql[].server: the tenant pins a database to a server of its choosing.
	ClassFieldDatabaseServers ClassField = "databaseServers"
)

// ClassNodePool is where a class's tenants' pods run: a shared pool by name, or a pool of the
// tenant's own.
// +kubebuilder:validation:XValidation:rule="has(self.name) != (has(self.dedicated) && self.dedicated)",message="set either name (a shared pool) or dedicated: true (a pool per tenant), not both"
type ClassNodePool struct {
	// Name is the shared node pool every tenant of the class runs on. Names beginning with
	// dedicated- are tenants' own pools.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('dedicated-')",message="names beginning with dedicated- are tenants' own pools (dedicated: true)"
	// +optional
	Name string `json:"name,omitempty"`

	// Dedicated puts each tenant of the class on a node pool of its own, named after the tenant:
	// nodes labelled and tainted tenancy.landlord.dev/node-pool=dedicated-<tenant name>, which
	// the platform provides (a Karpenter NodePool or a cloud node group per tenant). No other
	// tenant of a class runs there.
	// +optional
	Dedicated bool `json:"dedicated,omitempty"`
}

// ClassDatabases is where a class's tenants' databases are placed.
type ClassDatabases struct {
	// ServerSelector chooses the DatabaseServers the class's databases are placed on, by their
	// labels; any server of the engine when empty. Among them, the least loaded with room for
	// another tenant is chosen, as without a class.
	// +optional
	ServerSelector *metav1.LabelSelector `json:"serverSelector,omitempty"`

	// Dedicated places each tenant's databases on a server that holds no other tenant's: the
	// platform registers a server per dedicated tenant (maxTenants: 1 keeps it so), with a label
	// the serverSelector chooses.
	// +optional
	Dedicated bool `json:"dedicated,omitempty"`
}

// ClassComponents are what a class says of its tenants' components.
type ClassComponents struct {
	// Allowed are the only components a tenant of the class may name; any when empty.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	Allowed []string `json:"allowed,omitempty"`

	// Values are default values of components, by component name: a tenant's own values are
	// merged over them (objects key by key; anything else the tenant sets replaces the class's).
	// +optional
	Values map[string]apiextensionsv1.JSON `json:"values,omitempty"`
}

// Reasons of a TenantClass's conditions.
const (
	// ReasonClassRollingOut: a change of the class is reaching its tenants.
	ReasonClassRollingOut = "ClassRollingOut"
	// ReasonClassRolloutHalted: a tenant the change reached stalls with it: no further wave is
	// released until it recovers (or the class changes again).
	ReasonClassRolloutHalted = "ClassRolloutHalted"
	// ReasonClassRevisionsFull: the class keeps MaxClassRevisions revisions, each with tenants
	// at it; its new spec is not adopted until tenants of an earlier one are released.
	ReasonClassRevisionsFull = "ClassRevisionsFull"
)

// ClassUpdateStrategy is how a change of a class reaches the tenants already of it.
// +kubebuilder:validation:Enum=Immediate;Waves;NewTenants
type ClassUpdateStrategy string

const (
	// ClassUpdateImmediate: every tenant of the class converges to the change at once.
	ClassUpdateImmediate ClassUpdateStrategy = "Immediate"
	// ClassUpdateWaves: the change reaches a share of the class's tenants at a time (a wave),
	// the next wave once the last one's tenants are Ready with it and its interval has passed;
	// a tenant the change stalls halts it. The others keep the class as it was.
	ClassUpdateWaves ClassUpdateStrategy = "Waves"
	// ClassUpdateNewTenants: the change applies to tenants that join the class from now on;
	// those already of it keep the class as it was.
	ClassUpdateNewTenants ClassUpdateStrategy = "NewTenants"
)

// ClassUpdates says how a change of the class reaches its tenants: set it in the same write as
// the change it is for.
type ClassUpdates struct {
	// Strategy is Immediate (the default), Waves or NewTenants.
	// +kubebuilder:default=Immediate
	// +optional
	Strategy ClassUpdateStrategy `json:"strategy,omitempty"`

	// WavePercent is the share of the class's tenants each wave adds, in percent (Waves only).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=10
	// +optional
	WavePercent int32 `json:"wavePercent,omitempty"`

	// WaveInterval is the least time between two waves (Waves only).
	// +kubebuilder:default="10m"
	// +optional
	WaveInterval *metav1.Duration `json:"waveInterval,omitempty"`
}

// TenantClassSpec is what a tier means: every field it sets applies to each tenant naming the
// class, and a tenant may set a field itself only where overrides lists it.
type TenantClassSpec struct {
	// Description says what the tier is for, for people (landlordctl describe class).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Description string `json:"description,omitempty"`

	// Quota is the tenants' ResourceQuota (hard limits), as Tenant spec.quota.
	// +optional
	Quota corev1.ResourceList `json:"quota,omitempty"`

	// Limits are the containers' defaults and maximums, as Tenant spec.limits.
	// +optional
	Limits *Limits `json:"limits,omitempty"`

	// PodSecurity is the Pod Security Standards level of the tenants' namespaces.
	// +optional
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// NodePool is where the tenants' pods run: a shared pool, or one per tenant.
	// +optional
	NodePool *ClassNodePool `json:"nodePool,omitempty"`

	// Databases is where the tenants' databases are placed. Changing it (or a tenant's class)
	// moves each database that no longer fits to a server that does, by a DatabaseMove
	// Landlord creates, which keeps the old copy until it is confirmed.
	// +optional
	Databases *ClassDatabases `json:"databases,omitempty"`

	// MaintenanceWindows are the tenants' maintenance windows, as Tenant spec.maintenanceWindows.
	// +kubebuilder:validation:MaxItems=14
	// +listType=atomic
	// +optional
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`

	// Components says which components the tenants may run, and their default values.
	// +optional
	Components *ClassComponents `json:"components,omitempty"`

	// CostCode is what cloud cost tools attribute the tenants' spend to, as Tenant spec.costCode.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="must be a label value: letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
	// +optional
	CostCode string `json:"costCode,omitempty"`

	// Overrides are the fields a tenant of the class may set in its own spec; a Tenant setting
	// any other of them is refused at admission. A field the tenant sets replaces the class's
	// (quota and limits key by key).
	// +kubebuilder:validation:MaxItems=7
	// +listType=set
	// +optional
	Overrides []ClassField `json:"overrides,omitempty"`

	// Updates says how a change of this spec reaches the tenants already of the class: at once,
	// in waves, or not at all (only tenants joining it from then on). Changing updates alone
	// changes no tenant.
	// +optional
	Updates *ClassUpdates `json:"updates,omitempty"`
}

// MaxClassRevisions is how many revisions a class's status keeps at most.
const MaxClassRevisions = 10

// ClassRevision is the class's spec as it was at one revision, kept while a tenant converges
// to it.
type ClassRevision struct {
	// Name is the revision: a digest of the spec (updates left out).
	Name string `json:"name"`
	// Created is when the revision became the class's.
	Created metav1.Time `json:"created"`
	// Spec is the class's spec at the revision (updates left out).
	Spec TenantClassSpec `json:"spec"`
}

// ClassRollout is how the class's current revision reaches its tenants.
type ClassRollout struct {
	// Revision being rolled out.
	Revision string `json:"revision"`
	// Strategy it goes by, as spec.updates said when the revision was made.
	Strategy ClassUpdateStrategy `json:"strategy"`
	// ReleasedPercent is the share of the class's tenants (by a hash of their names) that
	// converge to the revision: 100 for Immediate, 0 for NewTenants (only new tenants), and for
	// Waves it grows by spec.updates.wavePercent a wave.
	ReleasedPercent int32 `json:"releasedPercent"`
	// WaveStarted is when the last wave was released.
	// +optional
	WaveStarted *metav1.Time `json:"waveStarted,omitempty"`
	// Halted says why no further wave is released (a tenant the revision stalls); empty
	// otherwise.
	// +optional
	Halted string `json:"halted,omitempty"`
}

// TenantClassStatus is the class's revisions and how its current one reaches its tenants.
type TenantClassStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Revision is the class's current revision: new tenants converge to it.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Revisions are the class's spec at the current revision and at each earlier one a tenant
	// still converges to, MaxClassRevisions at most: a new spec with as many in use is not
	// adopted (ClassRevisionsFull).
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Revisions []ClassRevision `json:"revisions,omitempty"`
	// Rollout is how the current revision reaches the tenants already of the class.
	// +optional
	Rollout *ClassRollout `json:"rollout,omitempty"`
	// Tenants is how many tenants name the class (Archived, Purged and suspended ones left
	// out); Updated how many of them converge to the current revision.
	// +optional
	Tenants int32 `json:"tenants"`
	// +optional
	Updated int32 `json:"updated"`
	// Conditions: Ready once every tenant of the class is at the current revision (or none is
	// to move: NewTenants), Reconciling while a rollout goes on, Stalled while one is halted.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=tcl,categories=landlord
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Node-Pool",type=string,JSONPath=`.spec.nodePool.name`
// +kubebuilder:printcolumn:name="Cost-Code",type=string,JSONPath=`.spec.costCode`
// +kubebuilder:printcolumn:name="Tenants",type=integer,JSONPath=`.status.tenants`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updated`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`,priority=1

// TenantClass is a plan: what a tier of customers gets (quota and limits, node pool shared or
// dedicated, database placement shared or dedicated, maintenance windows, components, cost
// code) and what its tenants may set themselves. A Tenant names it in spec.class; changing a
// tenant's class moves the tenant to the new tier, its pods and databases included.
type TenantClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantClassSpec   `json:"spec,omitempty"`
	Status TenantClassStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// TenantClassList is a list of TenantClasses.
type TenantClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TenantClass{}, &TenantClassList{})
}
