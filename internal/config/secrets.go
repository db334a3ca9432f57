package config

import (
	"fmt"
	"strings"
)

// SharedSource is what writes the template namespace's Secrets, which Landlord copies into
// tenants.
type SharedSource string

const (
	// SharedFromStore: Landlord mirrors the secret store's shared secrets into the template
	// namespace (`landlordctl secrets put --shared`). The default.
	SharedFromStore SharedSource = "Store"
	// SharedFromNamespace: another tool writes the template namespace's Secrets (External Secrets
	// Operator, the Sealed Secrets controller, Flux's kustomize-controller decrypting SOPS) and
	// Landlord writes none there: it copies the labelled ones into tenants. The store still keeps
	// tenants' database credentials.
	SharedFromNamespace SharedSource = "Namespace"
)

// validateSharedSource checks secrets.sharedSource, and refuses a template namespace that is not
// safe: every Secret labelled shared there reaches every tenant, so no tenant may have it, and
// another tool may not feed the one beside the database servers' admin credentials.
func (c *Config) validateSharedSource() []error {
	var errs []error
	// Whatever feeds it, every Secret labelled shared in the template namespace goes to every
	// tenant: a tenant's own namespace cannot be it.
	if strings.HasPrefix(c.Secrets.TemplateNamespace, c.NamespacePrefix) {
		errs = append(errs, fmt.Errorf("secrets.templateNamespace: %q begins with namespacePrefix %q, so it is the namespace of the tenant %q, whose admins could write Secrets every tenant gets: "+
			"name a namespace no tenant can have",
			c.Secrets.TemplateNamespace, c.NamespacePrefix, strings.TrimPrefix(c.Secrets.TemplateNamespace, c.NamespacePrefix)))
	}
	switch c.Secrets.SharedSource {
	case SharedFromStore:
		return errs
	case SharedFromNamespace:
	default:
		return append(errs, fmt.Errorf("secrets.sharedSource: %q is not %s or %s", c.Secrets.SharedSource, SharedFromStore, SharedFromNamespace))
	}
	if c.Secrets.TemplateNamespace == c.Databases.CredentialsNamespace {
		errs = append(errs, fmt.Errorf("secrets.templateNamespace: %q is databases.credentialsNamespace, which holds the database servers' admin credentials: "+
			"with secrets.sharedSource %s another tool writes the template namespace and every Secret it labels shared goes to every tenant; name a namespace of its own",
			c.Secrets.TemplateNamespace, SharedFromNamespace))
	}
	return errs
}
