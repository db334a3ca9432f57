package v1alpha1

import (
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
