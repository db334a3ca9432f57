package controller

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AuditVerdict is the policy audit's verdict on obj in the namespace ns, read as the audit reads
// it: the policies it breaks, and whether it reaches across tenants.
func AuditVerdict(obj client.Object, ns *corev1.Namespace) (policies []string, crosses bool) {
	findings := judgeObject(tenantNamespaceOf(ns), obj, nil)
	for _, f := range findings {
		policies = append(policies, f.Policy)
	}
	return policies, crossesTenants(findings)
}
