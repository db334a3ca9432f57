package controller

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AuditVerdict is the policy audit's verdict on obj in a namespace admitting domains: the
// policies it breaks, and whether it reaches across tenants.
func AuditVerdict(obj client.Object, domains []string) (policies []string, crosses bool) {
	var findings []auditFinding
	switch o := obj.(type) {
	case *corev1.Service:
		findings = judgeService(o)
	case *networkingv1.Ingress:
		findings = judgeIngress(o, domains)
	case *unstructured.Unstructured:
		findings = judgeRoute(o, domains)
	}
	for _, f := range findings {
		policies = append(policies, f.Policy)
	}
	return policies, crossesTenants(findings)
}
