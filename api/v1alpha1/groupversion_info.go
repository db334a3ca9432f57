// Package v1alpha1 contains the tenancy.landlord.dev/v1alpha1 API: the Tenant and the objects
// that feed it.
// +kubebuilder:object:generate=true
// +groupName=tenancy.landlord.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "tenancy.landlord.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme. (controller-runtime's
	// helper, deprecated for API packages that others import for fewer dependencies; kept as
	// kubebuilder lays the package out, until Landlord's API is a module of its own.)
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion} //nolint:staticcheck // see above

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
