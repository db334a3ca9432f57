package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DatabaseMovePhase is where a database move is.
// +kubebuilder:validation:Enum=Pending;Copying;Switching;Switched;Dropping;Succeeded;RollingBack;Failed
type DatabaseMovePhase string

const (
	// MovePending: the move has not started; nothing is changed yet (it waits for the database
	// to be in place, or for the target server to be Ready).
	MovePending DatabaseMovePhase = "Pending"
	// MoveCopying: the writers are fenced (the old login's password is replaced and its sessions
	// ended) and a Job copies the database to the target server and compares every table.
	MoveCopying DatabaseMovePhase = "Copying"
	// MoveSwitching: the copy is proven equal, the secret store names the new server, and the
	// tenant's credentials Secret is being switched to it.
	MoveSwitching DatabaseMovePhase = "Switching"
	// MoveSwitched: the tenant runs on the new server; the old database is kept, as of the
	// cut-over, until spec.confirmed is true.
	MoveSwitched DatabaseMovePhase = "Switched"
	// MoveDropping: confirmed; the old database and its login are being dropped.
	MoveDropping DatabaseMovePhase = "Dropping"
	// MoveSucceeded: the database is on the new server alone.
	MoveSucceeded DatabaseMovePhase = "Succeeded"
	// MoveRollingBack: the move stopped before the switch (its copy failed, the move was
	// deleted, the tenant left Active or Frozen): the copy on the target server is dropped and
	// the old login gets its password back.
	MoveRollingBack DatabaseMovePhase = "RollingBack"
	// MoveFailed: the move was refused or rolled back; the database is where it was, unchanged.
	MoveFailed DatabaseMovePhase = "Failed"
)

// Reasons of a DatabaseMove's conditions, and of the tenant's DatabasesReady while one of its
// databases moves.
const (
	// ReasonMoveRefused: the move cannot be made: the tenant, its database or the target server
	// does not exist or does not fit (another engine, the server it is on already, a spec that
	// names another server, another move of the database under way). Nothing was changed.
	ReasonMoveRefused = "MoveRefused"
	// ReasonMoveWaiting: the move waits to start: the database is not in place yet, or the
	// target server is not Ready.
	ReasonMoveWaiting = "MoveWaiting"
	// ReasonMoving: the move is under way (on a tenant: one of its databases is fenced for a
	// move, or being switched to its new server).
	ReasonMoving = "Moving"
	// ReasonMoveUnconfirmed: the tenant runs on the new server; the old database is kept until
	// spec.confirmed is true.
	ReasonMoveUnconfirmed = "MoveUnconfirmed"
	// ReasonMoveFailed: the copy failed or did not prove equal, or the move was stopped before
	// the switch; it was rolled back and the database is where it was.
	ReasonMoveFailed = "MoveFailed"
)

// DatabaseMoveSpec names a tenant's database and the server to move it to.
// +kubebuilder:validation:XValidation:rule="self.tenant == oldSelf.tenant && self.database == oldSelf.database && self.server == oldSelf.server",message="tenant, database and server are immutable: create another move"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.confirmed) || !oldSelf.confirmed || (has(self.confirmed) && self.confirmed)",message="confirmed cannot be taken back: the old database may already be dropped"
type DatabaseMoveSpec struct {
	// Tenant whose database moves.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a tenant's name (a DNS label)"
	Tenant string `json:"tenant"`

	// Database is the database's name in the tenant's spec (spec.databases.postgres or
	// spec.databases.mysql).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	Database string `json:"database"`

	// Server is the DatabaseServer to move the database to, of the database's engine, running
	// the same version as the one it is on or a newer one.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Server string `json:"server"`

	// Confirmed lets the move drop the database's old copy once the tenant runs on the new
	// server. Until then the old database and login are kept, as they were at the cut-over, so
	// that the move can be checked (and undone by hand) first. Once true it cannot be unset.
	// +optional
	Confirmed bool `json:"confirmed,omitempty"`
}

// DatabaseLocation is where a copy of a tenant's database is: its server, its database's and
// its login's names there.
type DatabaseLocation struct {
	Server   string `json:"server"`
	Database string `json:"database"`
	Username string `json:"username"`
}

// DatabaseMoveStatus is how far a move has gone, and what the cut-over cost.
type DatabaseMoveStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration"`
	// Phase of the move.
	// +optional
	Phase DatabaseMovePhase `json:"phase,omitempty"`
	// TenantUID is the UID of the tenant moved: a tenant deleted and created again under its
	// name is another, and stops the move.
	// +optional
	TenantUID string `json:"tenantUID,omitempty"`
	// Engine of the database.
	// +optional
	Engine DatabaseEngine `json:"engine,omitempty"`
	// From is where the database was when the move started: kept until the move is confirmed.
	// +optional
	From *DatabaseLocation `json:"from,omitempty"`
	// To is where the database goes.
	// +optional
	To *DatabaseLocation `json:"to,omitempty"`
	// Job copies the database, in the operator's backups namespace.
	// +optional
	Job string `json:"job,omitempty"`
	// FencedAt is when the tenant's writers were stopped: the start of the cut-over.
	// +optional
	FencedAt *metav1.Time `json:"fencedAt,omitempty"`
	// SwitchedAt is when the tenant's credentials Secret named the new server: the end of the
	// cut-over.
	// +optional
	SwitchedAt *metav1.Time `json:"switchedAt,omitempty"`
	// Downtime is the cut-over's measured length, SwitchedAt less FencedAt: while it lasts the
	// database takes no session of the tenant's.
	// +optional
	Downtime *metav1.Duration `json:"downtime,omitempty"`
	// CompletionTime is when the move succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions: Ready (True once Succeeded; False with the reason while under way or
	// failed), Reconciling and Stalled, as kstatus reads them.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DatabaseMove moves one of a tenant's databases to another DatabaseServer of its engine: its
// writers are fenced, a Job copies it and proves the copy equal table by table, the tenant's
// credentials are switched to the new server, and the old database is kept until the move is
// confirmed, then dropped. Until the switch, a failure (or deleting the move) rolls it back and
// the database stays where it was.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dbmove,categories=landlord
// +kubebuilder:printcolumn:name="Tenant",type=string,JSONPath=`.spec.tenant`
// +kubebuilder:printcolumn:name="Database",type=string,JSONPath=`.spec.database`
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.status.from.server`
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=`.spec.server`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Downtime",type=string,JSONPath=`.status.downtime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters"
type DatabaseMove struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DatabaseMoveSpec `json:"spec"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status DatabaseMoveStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DatabaseMoveList is a list of DatabaseMoves.
type DatabaseMoveList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DatabaseMove `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DatabaseMove{}, &DatabaseMoveList{})
}

// Terminal reports whether the move has ended, succeeded or failed.
func (m *DatabaseMove) Terminal() bool {
	return m.Status.Phase == MoveSucceeded || m.Status.Phase == MoveFailed
}

// Fencing reports whether the move holds the database's writers off its old server (from the
// fence to the switch): nothing else may change its login there meanwhile.
func (m *DatabaseMove) Fencing() bool {
	return m.Status.Phase == MoveCopying || m.Status.Phase == MoveRollingBack
}
