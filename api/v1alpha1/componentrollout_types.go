package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ComponentRolloutSpec moves one component of a set of tenants to a version, wave by wave. Only
// Active tenants, not suspended, whose component follows rollouts
// (spec.components[].followRollouts) are moved. Of the rollouts that reach a tenant the highest
// version wins (semver; equal versions by creation, then name), and none moves it down but a
// rollback. What is rolled out is fixed at creation: only spec.halted may change.
// +kubebuilder:validation:XValidation:rule="self.component == oldSelf.component && self.version == oldSelf.version && has(self.selector) == has(oldSelf.selector) && (!has(self.selector) || self.selector == oldSelf.selector) && has(self.strategy) == has(oldSelf.strategy) && (!has(self.strategy) || self.strategy == oldSelf.strategy) && (has(self.rollback) && self.rollback) == (has(oldSelf.rollback) && oldSelf.rollback)",message="only spec.halted may change: roll out another version as a new ComponentRollout"
type ComponentRolloutSpec struct {
	// Component names the component to move (its ComponentTemplates' spec.component).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	Component string `json:"component"`

	// Version to move the tenants to: the ComponentTemplate <component>-<version> renders it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Version string `json:"version"`

	// Selector chooses the tenants by label; empty chooses every tenant.
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitempty"`

	// Strategy is how many tenants move at a time, and when the rollout stops.
	// +optional
	Strategy RolloutStrategy `json:"strategy,omitempty"`

	// Rollback lets the rollout move tenants down to its version from a higher one that a
	// rollout created no later than it gave them. Without it, a tenant running a higher version stays
	// there, counted in status.ahead. A rollback takes only tenants that no rollout of a higher
	// version chooses: delete that rollout first (deleting moves no tenant).
	// +optional
	Rollback bool `json:"rollback,omitempty"`

	// Halted stops the rollout from starting another wave; the tenants already moved stay
	// moved. Set it back to false to resume.
	// +optional
	Halted bool `json:"halted,omitempty"`
}

// RolloutStrategy is how a ComponentRollout moves its tenants.
type RolloutStrategy struct {
	// Canaries are tenants moved first, as a wave of their own; names that the selector does
	// not choose, or whose component does not follow rollouts, are left out.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=50
	// +listType=set
	// +optional
	Canaries []string `json:"canaries,omitempty"`

	// BatchSize is how many tenants each wave after the canaries moves: a number, or a
	// percentage of the tenants chosen (at least one). Default 10%: ten waves, and a status that
	// stays small however many tenants there are.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="must be a number of at least 1, or a percentage from 1% to 100%"
	// +optional
	BatchSize *intstr.IntOrString `json:"batchSize,omitempty"`

	// PauseBetweenWaves is how long to wait after a wave is done before the next one starts.
	// +optional
	PauseBetweenWaves *metav1.Duration `json:"pauseBetweenWaves,omitempty"`

	// MaxFailures is how many failed tenants the rollout tolerates; one more halts it until
	// enough of them recover. Default 0.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxFailures int32 `json:"maxFailures,omitempty"`

	// ProgressDeadline is how long a tenant of a wave may take to run the version Ready before
	// it counts as failed. Default 10m.
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// IgnoreMaintenanceWindows moves each tenant when its wave is released, outside its
	// maintenance windows (spec.maintenanceWindows) too: for an urgent fix.
	// +optional
	IgnoreMaintenanceWindows bool `json:"ignoreMaintenanceWindows,omitempty"`
}

// RolloutWave is one wave of a rollout: the tenants it moves, fixed when it is planned (only the
// last wave takes more: tenants chosen late, up to a batch).
type RolloutWave struct {
	// Tenants moved by the wave.
	// +listType=atomic
	Tenants []string `json:"tenants"`
	// StartedAt is when the wave was released to its tenants, or when tenants chosen late last
	// joined it after that; unset while it waits.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when every tenant of the wave ran the version Ready, or was given up on
	// within maxFailures; unset again when tenants chosen late join it.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Done counts the wave's tenants that run the version Ready.
	// +optional
	Done int32 `json:"done,omitempty"`
	// Pending counts the wave's tenants still moving.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// Skipped counts the wave's tenants no longer chosen (deleted, relabelled, pinned, or not
	// Active): they are not moved.
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
	// Ahead counts the wave's tenants that run a higher version than the rollout's, which a
	// rollout that is not a rollback leaves where they are.
	// +optional
	Ahead int32 `json:"ahead,omitempty"`
	// Waiting are the wave's tenants waiting for their maintenance window, and when it opens:
	// the first 50 by name (pending counts them all). The wave is not done while any waits.
	// +listType=map
	// +listMapKey=tenant
	// +optional
	Waiting []RolloutWaiting `json:"waiting,omitempty"`
	// Failed are the wave's tenants that failed, and why.
	// +listType=map
	// +listMapKey=tenant
	// +optional
	Failed []RolloutFailure `json:"failed,omitempty"`
}

// RolloutWaiting is a tenant of a released wave that waits for its maintenance window.
type RolloutWaiting struct {
	// Tenant is the tenant's name.
	Tenant string `json:"tenant"`
	// NextWindow is when its next maintenance window opens.
	NextWindow metav1.Time `json:"nextWindow"`
}

// RolloutFailure is a tenant that did not run the version Ready.
type RolloutFailure struct {
	// Tenant is the tenant's name.
	Tenant string `json:"tenant"`
	// Reason is the tenant's Ready reason, or ProgressDeadlineExceeded.
	Reason string `json:"reason"`
	// Message is the tenant's Ready message, cut to 256 characters.
	// +kubebuilder:validation:MaxLength=300
	// +optional
	Message string `json:"message,omitempty"`
	// OwnCause: the tenant never took the version up, for a reason of its own (its namespace
	// did not converge, so its components were not applied). It is listed, and does not count
	// against maxFailures: it says nothing of the version.
	// +optional
	OwnCause bool `json:"ownCause,omitempty"`
}

// ComponentRolloutStatus is the rollout's progress, wave by wave: everything the operator needs
// to carry on after a restart is here.
type ComponentRolloutStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Waves are the rollout's waves in order. Tenants chosen after it was planned join the last
	// wave (never the canaries') until it holds a batch; only a full last wave makes a new one.
	// A released last wave takes them only while the rollout may move tenants (not halted, within
	// maxFailures, no pause pending). Tenants deleted after their wave completed leave it, and a
	// completed wave left empty goes.
	// So late tenants add a wave per batch, never one each: every wave but the canaries' and the
	// last holds batchSize tenants, or that share of those chosen by then (at 10%, 1,000 tenants
	// arriving one at a time make 50 waves). A released wave they join starts again.
	// +listType=atomic
	// +optional
	Waves []RolloutWave `json:"waves,omitempty"`

	// Released is the number of waves released to their tenants.
	// +optional
	Released int32 `json:"released,omitempty"`

	// Done, Pending, Failed, Skipped and Ahead count the tenants of every wave.
	// +optional
	Done int32 `json:"done,omitempty"`
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// +optional
	Skipped int32 `json:"skipped,omitempty"`
	// Ahead counts the tenants that run a higher version than the rollout's and stay there.
	// +optional
	Ahead int32 `json:"ahead,omitempty"`
	// Blocked counts the failed tenants that never took the version up, for reasons of their
	// own (RolloutFailure.ownCause); Failed counts the others, the version's failures.
	// +optional
	Blocked int32 `json:"blocked,omitempty"`

	// Conditions: Ready (always; True once every wave is done), Reconciling (while waves are
	// under way) and Stalled (while halted by failures or a missing template), following kstatus.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ComponentRollout moves one component of many tenants to a version in waves, declared in Git
// next to the tenants. Progress is kept in its status, so a restarted operator carries on where
// it was.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cro,categories=landlord
// +kubebuilder:printcolumn:name="Component",type=string,JSONPath=`.spec.component`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Done",type=integer,JSONPath=`.status.done`
// +kubebuilder:printcolumn:name="Failed",type=integer,JSONPath=`.status.failed`
// +kubebuilder:printcolumn:name="Ahead",type=integer,JSONPath=`.status.ahead`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
type ComponentRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ComponentRolloutSpec `json:"spec"`

	// +optional
	Status ComponentRolloutStatus `json:"status,omitempty"`
}

// ComponentRolloutList is a list of component rollouts.
// +kubebuilder:object:root=true
type ComponentRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ComponentRollout `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ComponentRollout{}, &ComponentRolloutList{})
}

// Rollout reasons.
const (
	// ReasonWaveInProgress: a wave's tenants are moving.
	ReasonWaveInProgress = "WaveInProgress"
	// ReasonPausedBetweenWaves: a wave is done, and the next starts after pauseBetweenWaves.
	ReasonPausedBetweenWaves = "PausedBetweenWaves"
	// ReasonHaltedBySpec: spec.halted is true.
	ReasonHaltedBySpec = "HaltedBySpec"
	// ReasonTooManyFailures: more tenants failed than maxFailures tolerates; the message names
	// them. The rollout goes on once enough of them run the version Ready.
	ReasonTooManyFailures = "TooManyFailures"
	// ReasonProgressDeadlineExceeded: a tenant did not run the version Ready within the
	// rollout's progressDeadline.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonRolloutComplete: every wave is done.
	ReasonRolloutComplete = "RolloutComplete"
)
