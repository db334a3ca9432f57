// Package component renders a tenant's instance of an application component from its
// ComponentTemplate, and judges the objects it rendered once they are live. Everything here is a
// pure function of its arguments: no client, no clock, no environment, no randomness, so one
// tenant pinned to one version renders the same objects on every reconcile and the controller
// can compare them with its cache. (The render deadline reads the clock, but only to stop a
// render; what a finished render produces never depends on it.)
//
// A template sees the tenant, the component, the tenant's databases and pooler settings, and the
// merged values:
//
//	{{ .Tenant.Name }} {{ .Tenant.Namespace }} {{ .Tenant.Organization }} {{ .Tenant.Email }}
//	{{ .Tenant.Labels }}
//	{{ .Component.Name }} {{ .Component.Version }} {{ .Component.Image }} {{ .Component.ImageRef }}
//	{{ .Databases.app.SecretName }} {{ .Databases.app.Engine }}
//	{{ .PgBouncer.DefaultPoolSize }}
//	{{ .Values.replicas }}
//
// A value or database the tenant does not have renders as nothing, at any depth
// ({{ .Values.a.b.c }} included), so optional values need no guards; `default` supplies a
// fallback and `required` turns absence into an error the tenant's status shows.
//
// A render is bounded (Limits: output size, range iterations and template calls, time), and the
// objects it produces are checked against the kinds components may render (CheckKind).
package component

import (
	"maps"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Input is what a template can read besides its values.
type Input struct {
	Tenant    Tenant
	Component Info
	// Databases are keyed by the database's name in the tenant spec.
	Databases map[string]Database
	PgBouncer PgBouncer
}

// Tenant is the part of the Tenant a template may use.
type Tenant struct {
	Name, Namespace, Organization, Email string
	Labels                               map[string]string
}

// Info identifies the component version being rendered.
type Info struct {
	// Image is the repository; ImageRef is Image:Version, or empty when the template names no
	// image, so manifests can write `image: {{ .Component.ImageRef }}` and stay pinned to the
	// version the tenant chose.
	Name, Version, Image, ImageRef string
}

// Database is one of the tenant's databases: its engine, and the Secret in the tenant namespace
// holding its credentials.
type Database struct {
	Engine, SecretName string
}

// PgBouncer is the tenant's pooler tuning; DefaultPoolSize is 0 when the tenant leaves it to the
// template (`{{ .PgBouncer.DefaultPoolSize | default 20 }}`).
type PgBouncer struct {
	DefaultPoolSize int32
}

// NewInput builds the Input for a tenant, a component and a template; namespace is the tenant's
// namespace. Databases come from the spec rather than the status, so a template renders the same
// before and after the databases exist: the Secret names are known in advance.
func NewInput(t *tenancyv1alpha1.Tenant, namespace string, tmpl *tenancyv1alpha1.ComponentTemplate) Input {
	in := Input{
		Tenant: Tenant{
			Name:         t.Name,
			Namespace:    namespace,
			Organization: t.OrganizationName(),
			Email:        t.ContactEmail(),
			// A copy, so that a template function that mutates maps cannot reach the tenant.
			Labels: maps.Clone(t.Labels),
		},
		Component: Info{
			Name:    tmpl.Spec.Component,
			Version: tmpl.Spec.Version,
			Image:   tmpl.Spec.Image,
		},
		Databases: map[string]Database{},
	}
	if in.Tenant.Labels == nil {
		in.Tenant.Labels = map[string]string{}
	}
	if tmpl.Spec.Image != "" {
		in.Component.ImageRef = tmpl.Spec.Image + ":" + tmpl.Spec.Version
	}
	for _, db := range t.Spec.Databases.Postgres {
		in.Databases[db.Name] = Database{Engine: string(tenancyv1alpha1.EnginePostgres), SecretName: tenancyv1alpha1.DatabaseSecretName(db.Name)}
	}
	for _, db := range t.Spec.Databases.MySQL {
		in.Databases[db.Name] = Database{Engine: string(tenancyv1alpha1.EngineMySQL), SecretName: tenancyv1alpha1.DatabaseSecretName(db.Name)}
	}
	if t.Spec.PgBouncer != nil {
		in.PgBouncer.DefaultPoolSize = t.Spec.PgBouncer.DefaultPoolSize
	}
	return in
}
