package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComponentTemplateSpec is one version of an application component's manifests. It is
// immutable: a new version is a new ComponentTemplate, so a tenant pinned to a version always
// renders the same thing.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: publish a new version as a new ComponentTemplate"
type ComponentTemplateSpec struct {
	// Component names the application component (web, api, worker).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	Component string `json:"component"`

	// Version is the component version the manifests belong to: a tag or a commit.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	Version string `json:"version"`

	// Image is the component's image repository; a tenant's instance runs Image:Version unless
	// its manifests say otherwise.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Image string `json:"image,omitempty"`

	// Manifests is a Go text/template that renders multi-document YAML: the objects of one
	// tenant's instance of the component. The sprig function library is available.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=262144
	Manifests string `json:"manifests"`

	// Values are the default values, overridden by the operator's defaults and then by the
	// tenant's values.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesSchema is an OpenAPI v3 schema (as in a CRD) that the merged values must satisfy.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	ValuesSchema *apiextensionsv1.JSON `json:"valuesSchema,omitempty"`

	// FieldsOwnedByOthers are fields of the rendered objects that another controller takes over:
	// spec.replicas of a Deployment a HorizontalPodAutoscaler sizes, an annotation a service mesh
	// writes. Landlord writes the rendered value when it creates the object, and while no other
	// field manager has written the field; after that its writes leave the field out, and drift
	// repair ignores it.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	FieldsOwnedByOthers []FieldOwnedByOthers `json:"fieldsOwnedByOthers,omitempty"`

	// Migrations change each tenant's data for this version: Jobs that Landlord runs in the
	// tenant's namespace when a tenant moves to this version (by its spec or a ComponentRollout),
	// and before the component first starts in a new tenant. A version without migrations moves
	// as any other.
	// +optional
	Migrations *Migrations `json:"migrations,omitempty"`
}

// Migrations are the Jobs that bring a tenant's data to a version, and how they run.
type Migrations struct {
	// Pre are run in order before any of the version's pods exist (expand): the workloads move
	// to the version only once every one has succeeded, and stay on the version they ran when
	// one fails.
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	// +optional
	Pre []MigrationJob `json:"pre,omitempty"`

	// Post are run in order once every workload of the version is Ready at it (contract).
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	// +optional
	Post []MigrationJob `json:"post,omitempty"`

	// FromAnyVersion says this version's migrations bring the data of any older version up to
	// it (an Atlas, Flyway or Rails migrate): a tenant that skips versions runs only this
	// version's migrations and those of the versions after it. Without it, a tenant moving from
	// 1.0 to 1.3 runs the migrations of 1.1, 1.2 and 1.3 in order.
	// +optional
	FromAnyVersion bool `json:"fromAnyVersion,omitempty"`

	// Backup is whether a TenantBackup of the databases the migrations name is taken before
	// they run: Required (the default: a failed backup fails the migration), Optional (the
	// migrations run after the backup ends, however it ends) or Off. Without a backup store
	// (backups.objects) no backup is taken. A new tenant's first migrations take none.
	// +kubebuilder:validation:Enum=Required;Optional;Off
	// +optional
	Backup MigrationBackup `json:"backup,omitempty"`

	// FenceWriters scales the version the tenant runs to zero replicas, and waits for its pods
	// to be gone, before the pre migrations run: for migrations the old code cannot survive.
	// The workloads come back at the old version when a migration fails.
	// +optional
	FenceWriters bool `json:"fenceWriters,omitempty"`
}

// MigrationBackup is whether a backup is taken before a migration.
type MigrationBackup string

const (
	// MigrationBackupRequired: a failed backup fails the move.
	MigrationBackupRequired MigrationBackup = "Required"
	// MigrationBackupOptional: the migrations run once the backup ended, however it ended.
	MigrationBackupOptional MigrationBackup = "Optional"
	// MigrationBackupOff: no backup is taken.
	MigrationBackupOff MigrationBackup = "Off"
)

// MigrationJob is one migration: the container of a Job that Landlord runs once in the tenant's
// namespace, under its quota and policies, as a Job tenant users cannot edit or delete.
type MigrationJob struct {
	// Name of the migration, unique in its list.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a DNS label (lowercase letters, digits and '-')"
	Name string `json:"name"`

	// Image runs the migration; the template's image at its version when empty.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Image string `json:"image,omitempty"`

	// Command and Args are the container's, as in a pod.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// Env is the container's environment, besides the databases'.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Databases are the tenant's databases (their names in its spec) the migration needs. Each
	// reaches the container from the tenant's own credentials Secret, db-<name>, as
	// DB_<NAME>_URL, _HOST, _PORT, _DATABASE, _USERNAME and _PASSWORD (NAME upper-cased, '-' as
	// '_'), and as DATABASE_URL when it is the only one. A database the tenant does not have
	// holds the migration back with MigrationFailed.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Databases []string `json:"databases,omitempty"`

	// Resources are the container's requests and limits; the tenant's limit range fills in
	// what is left out.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Timeout bounds the Job (its activeDeadlineSeconds), from 1s to 24h; 10m when unset. A Job
	// holds its place on its database servers (spec.maxConcurrentJobs) for as long as it runs.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="must be from 1s to 24h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Retries is how many times a failed container is run again before the migration fails
	// (the Job's backoffLimit). Only for migrations that can safely run again.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	Retries int32 `json:"retries,omitempty"`
}

// FieldOwnedByOthers names one field of some of a component's rendered objects that another
// controller owns once the object exists.
type FieldOwnedByOthers struct {
	// Group is the API group of the objects (apps); empty matches the kind in any group.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="must be an API group, such as apps"
	// +optional
	Group string `json:"group,omitempty"`

	// Kind is the kind of the objects (Deployment).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9]*$')",message="must be a kind, such as Deployment"
	Kind string `json:"kind"`

	// Name is the name of the one object, as the manifests render it; empty matches every
	// object of the kind.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// JSONPointer is the field, as a JSON pointer (RFC 6901) from the object's root:
	// /spec/replicas, or /metadata/annotations/sidecar.istio.io~1status (~1 stands for '/', ~0
	// for '~'). A field holding an object covers every field in it. Not an element of a list,
	// the object's identity or status, nor metadata but a single label or annotation that is
	// not Landlord's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^(/([^/~]|~[01])+)+$')",messageExpression="'jsonPointer ' + self + ' is not a JSON pointer to a field: it must be /-separated field names, such as /spec/replicas, with ~1 for a / and ~0 for a ~ within a name'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('/([0-9]+|-)(/|$)')",messageExpression="'jsonPointer ' + self + ' names an element of a list: only fields of objects can be owned by others (name the list itself to hand over all of it)'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^/(apiVersion|kind|status)(/|$)')",messageExpression="'jsonPointer ' + self + ' is never owned by others: apiVersion and kind are what the object is, and Landlord never writes status'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^/metadata(/|$)') || self.matches('^/metadata/(labels|annotations)/[^/]+$')",messageExpression="'jsonPointer ' + self + ' is metadata Landlord must own: of metadata, only a single label or annotation (/metadata/annotations/NAME) can be owned by others'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^/metadata/(labels|annotations)/(tenancy[.]landlord[.]dev~1|app[.]kubernetes[.]io~1managed-by$)')",messageExpression="'jsonPointer ' + self + ' is a label or annotation of Landlord (app.kubernetes.io/managed-by, tenancy.landlord.dev/*), which it keeps on every object it renders'"
	JSONPointer string `json:"jsonPointer"`
}

// ComponentTemplate is one version of an application component, rendered into every tenant
// that pins it. Its name is <component>-<version>.
// +kubebuilder:metadata:annotations="helm.sh/resource-policy=keep"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/prune=disabled"
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ct,categories=landlord
// +kubebuilder:printcolumn:name="Component",type=string,JSONPath=`.spec.component`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.component + '-' + self.spec.version",message="metadata.name must be <spec.component>-<spec.version>"
type ComponentTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ComponentTemplateSpec `json:"spec"`
}

// ComponentTemplateList is a list of component templates.
// +kubebuilder:object:root=true
type ComponentTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ComponentTemplate `json:"items"`
}

// ComponentTemplateName is the name of the ComponentTemplate of a component version.
func ComponentTemplateName(component, version string) string { return component + "-" + version }

func init() {
	SchemeBuilder.Register(&ComponentTemplate{}, &ComponentTemplateList{})
}
