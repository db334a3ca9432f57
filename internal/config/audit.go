package config

import "fmt"

// AuditAction is what the policy audit does with an object in a tenant namespace that breaks an
// isolation policy: one created while the policies were absent (deleted by hand, `kubectl delete
// -k`, a fresh install over existing tenant namespaces), which the API server never judged.
type AuditAction string

const (
	// AuditDelete deletes the objects that reach across tenants (ExternalName Services, Services
	// with externalIPs, Ingresses and routes for hosts the tenant does not hold) and reports the
	// rest. The default: such an object keeps taking another tenant's traffic until it goes.
	AuditDelete AuditAction = "Delete"
	// AuditReport reports every finding and deletes nothing, for a platform team that wants to
	// look before anything of a tenant's goes.
	AuditReport AuditAction = "Report"
)

// validateAudit checks isolation.audit.
func (i Isolation) validateAudit() []error {
	switch i.Audit {
	case AuditDelete, AuditReport:
		return nil
	}
	return []error{fmt.Errorf("isolation.audit: %q is not %s or %s", i.Audit, AuditDelete, AuditReport)}
}
