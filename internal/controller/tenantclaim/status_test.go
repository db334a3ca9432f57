package tenantclaim

import (
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/controllertest"
)

var boundAt = metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))

// statusCases are the states a claim reports: what a reconcile concluded, the phase and the
// Ready condition that follow, and how kstatus reads the claim.
var statusCases = []struct {
	name     string
	previous tenancyv1alpha1.TenantClaimStatus
	obs      func(previous tenancyv1alpha1.TenantClaimStatus) observation
	phase    tenancyv1alpha1.ClaimPhase
	ready    metav1.ConditionStatus
	reason   string
	message  string
	kstatus  status.Status
}{
	{
		name: "a claim bound to a spare is Bound and Ready, naming its tenant",
		obs: func(tenancyv1alpha1.TenantClaimStatus) observation {
			return boundTo("signup-x7k2p", "tenant-signup-x7k2p", boundAt)
		},
		phase: tenancyv1alpha1.ClaimBound, ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonBound, message: "bound to tenant signup-x7k2p",
		kstatus: status.CurrentStatus,
	},
	{
		name: "a claim bound before claims had conditions gets them from what its status says",
		previous: tenancyv1alpha1.TenantClaimStatus{
			Phase: tenancyv1alpha1.ClaimBound, Tenant: "signup-x7k2p", Namespace: "tenant-signup-x7k2p", BoundTime: &boundAt,
			Reason: tenancyv1alpha1.ReasonBound, Message: "bound to tenant signup-x7k2p",
		},
		obs:   recorded,
		phase: tenancyv1alpha1.ClaimBound, ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonBound, message: "bound to tenant signup-x7k2p",
		kstatus: status.CurrentStatus,
	},
	{
		name: "a claim whose pool does not exist is Pending and Reconciling: the pool may yet be created",
		obs: func(tenancyv1alpha1.TenantClaimStatus) observation {
			return pending(tenancyv1alpha1.ReasonPoolNotFound, "TenantPool signup does not exist")
		},
		phase: tenancyv1alpha1.ClaimPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonPoolNotFound, message: "TenantPool signup does not exist",
		kstatus: status.InProgressStatus,
	},
	{
		name: "a claim on a pool with no Ready spare is Pending and Reconciling until one is",
		obs: func(tenancyv1alpha1.TenantClaimStatus) observation {
			return pending(tenancyv1alpha1.ReasonNoReadySpare, "no Ready spare in pool signup; waiting for one")
		},
		phase: tenancyv1alpha1.ClaimPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonNoReadySpare, message: "no Ready spare in pool signup; waiting for one",
		kstatus: status.InProgressStatus,
	},
	{
		name: "a claim on a pool at its spec.maxTenants is Pending and Reconciling until it is raised",
		obs: func(tenancyv1alpha1.TenantClaimStatus) observation {
			return pending(tenancyv1alpha1.ReasonMaxTenantsReached, "no Ready spare in pool signup, which has created its spec.maxTenants (10) tenants")
		},
		phase: tenancyv1alpha1.ClaimPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonMaxTenantsReached,
		message: "no Ready spare in pool signup, which has created its spec.maxTenants (10) tenants", kstatus: status.InProgressStatus,
	},
	{
		name: "a claim its pool refuses is Pending and Stalled",
		previous: tenancyv1alpha1.TenantClaimStatus{Phase: tenancyv1alpha1.ClaimPending, Reason: tenancyv1alpha1.ReasonNoReadySpare, Message: "no Ready spare",
			Conditions: []metav1.Condition{{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonNoReadySpare, ObservedGeneration: 1}}},
		obs: func(tenancyv1alpha1.TenantClaimStatus) observation {
			return pending(tenancyv1alpha1.ReasonClaimRefused, "pool signup binds no claim of namespace default")
		},
		phase: tenancyv1alpha1.ClaimPending, ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonClaimRefused, message: "pool signup binds no claim of namespace default",
		kstatus: status.FailedStatus,
	},
}

// statusCaseClaim is the claim of a case, at generation 2, with the status an earlier reconcile
// left at generation 1: computeStatus starts from its conditions.
func statusCaseClaim(previous tenancyv1alpha1.TenantClaimStatus) *tenancyv1alpha1.TenantClaim {
	previous.ObservedGeneration = 1
	return &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "acme", Generation: 2},
		Spec:       tenancyv1alpha1.TenantClaimSpec{Pool: "signup"},
		Status:     previous,
	}
}

func TestComputeStatus(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			claim := statusCaseClaim(tc.previous)
			s := computeStatus(claim, tc.obs(claim.Status))
			if s.Phase != tc.phase || s.Reason != tc.reason || s.Message != tc.message || s.ObservedGeneration != 2 {
				t.Errorf("status %+v, want phase %s, reason %s, message %q at generation 2", s, tc.phase, tc.reason, tc.message)
			}
			if bound := tc.phase == tenancyv1alpha1.ClaimBound; bound != (s.Tenant == "signup-x7k2p" && s.Namespace == "tenant-signup-x7k2p" && s.BoundTime.Equal(&boundAt)) {
				t.Errorf("tenant %q, namespace %q, bound at %v: want them set only on a Bound claim", s.Tenant, s.Namespace, s.BoundTime)
			}
			ready := meta.FindStatusCondition(s.Conditions, tenancyv1alpha1.ReadyCondition)
			if ready == nil || ready.Status != tc.ready || ready.Reason != tc.reason || ready.Message != tc.message || ready.ObservedGeneration != 2 {
				t.Errorf("Ready = %+v, want %s %s at generation 2", ready, tc.ready, tc.reason)
			}
			reconciling := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.ReconcilingCondition)
			stalled := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.StalledCondition)
			if want := tc.reason == tenancyv1alpha1.ReasonClaimRefused; stalled != want {
				t.Errorf("Stalled = %v, want %v", stalled, want)
			}
			if want := tc.phase == tenancyv1alpha1.ClaimPending && tc.reason != tenancyv1alpha1.ReasonClaimRefused; reconciling != want {
				t.Errorf("Reconciling = %v, want %v", reconciling, want)
			}
		})
	}
}

// Every state a claim reports reads the same to kstatus (Flux's health checks, kubectl wait,
// cli-utils) and to the Argo CD health check Landlord ships for claims.
func TestAClaimsStatusReadsTheSameInKstatusAndArgoCD(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			claim := statusCaseClaim(tc.previous)
			claim.Status = computeStatus(claim, tc.obs(claim.Status))
			if got, _ := controllertest.KstatusAgreesWithArgoCD(t, claim); got != tc.kstatus {
				t.Errorf("kstatus %s, want %s", got, tc.kstatus)
			}
		})
	}
}
