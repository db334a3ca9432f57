package tenantclaim

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/conditions"
)

// observation is what one reconcile of a claim concluded: bound to a tenant, or Pending with the
// reason it waits (or is refused) and a message saying so.
type observation struct {
	phase             tenancyv1alpha1.ClaimPhase
	tenant, namespace string
	boundTime         *metav1.Time
	reason, message   string
}

// boundTo is a claim bound to tenant, whose namespace is namespace, at now.
func boundTo(tenant, namespace string, now metav1.Time) observation {
	return observation{
		phase: tenancyv1alpha1.ClaimBound, tenant: tenant, namespace: namespace, boundTime: &now,
		reason: tenancyv1alpha1.ReasonBound, message: fmt.Sprintf("bound to tenant %s", tenant),
	}
}

// pending is a claim not bound, for reason; ReasonClaimRefused is a claim its pool does not bind.
func pending(reason, message string) observation {
	return observation{phase: tenancyv1alpha1.ClaimPending, reason: reason, message: message}
}

// recorded is what the claim's status already says: a claim bound by an earlier reconcile.
func recorded(s tenancyv1alpha1.TenantClaimStatus) observation {
	return observation{phase: s.Phase, tenant: s.Tenant, namespace: s.Namespace, boundTime: s.BoundTime, reason: s.Reason, message: s.Message}
}

// computeStatus is the claim's status after a reconcile: its phase, tenant, reason and message
// as observed, with the kstatus conditions they stand for, so kubectl wait
// --for=condition=Ready and Flux health checks work on claims: a Bound claim is Ready; a Pending
// one is Reconciling, not Ready, with the reason it waits (a missing pool may yet be created,
// and an empty one refills); a refused one is Stalled: it waits on a change to its pool, or its
// own deletion. observedGeneration is always the current generation: every reconcile reaches a
// verdict on the spec it read.
func computeStatus(claim *tenancyv1alpha1.TenantClaim, o observation) tenancyv1alpha1.TenantClaimStatus {
	next := tenancyv1alpha1.TenantClaimStatus{
		Phase: o.phase, Tenant: o.tenant, Namespace: o.namespace, BoundTime: o.boundTime,
		Reason: o.reason, Message: o.message,
	}
	next.ObservedGeneration = claim.Generation
	next.Conditions = append([]metav1.Condition(nil), claim.Status.Conditions...)
	conds := conditions.For(&next.Conditions, claim.Generation)
	switch {
	case next.Phase == tenancyv1alpha1.ClaimBound:
		conds.Ready(next.Reason, next.Message)
	case next.Reason == tenancyv1alpha1.ReasonClaimRefused:
		conds.Stalled(next.Reason, next.Message)
	default:
		conds.Reconciling(next.Reason, next.Message)
	}
	return next
}
