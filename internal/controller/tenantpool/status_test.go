package tenantpool

import (
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/controllertest"
)

// statusCases are the states a pool reports: what a reconcile counted, the Ready condition and
// MaxTenantsReached that follow, and how kstatus reads the pool.
var statusCases = []struct {
	name       string
	maxTenants *int32
	obs        observation
	ready      metav1.ConditionStatus
	reason     string
	message    string
	full       bool
	kstatus    status.Status
}{
	{
		name: "a pool with its replicas ready is Ready", obs: observation{ready: 3, allocated: 5},
		ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded, message: "3 spares ready", kstatus: status.CurrentStatus,
	},
	{
		name: "a pool short of ready spares is Reconciling", obs: observation{ready: 1, provisioning: 2, allocated: 5},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonProgressing, message: "1 of 3 spares ready, 2 provisioning", kstatus: status.InProgressStatus,
	},
	{
		name: "a pool holding a suspended spare besides its replicas is Ready and says so", obs: observation{ready: 3, suspended: 1, allocated: 5},
		ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded, message: "3 spares ready, 1 suspended", kstatus: status.CurrentStatus,
	},
	{
		name: "a suspended spare does not make a pool Ready", obs: observation{ready: 2, provisioning: 1, suspended: 1, allocated: 5},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonProgressing, message: "2 of 3 spares ready, 1 provisioning, 1 suspended", kstatus: status.InProgressStatus,
	},
	{
		name: "a pool under its cap says nothing of it", maxTenants: ptr.To[int32](10), obs: observation{ready: 3, allocated: 6, tenants: 9},
		ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded, message: "3 spares ready", kstatus: status.CurrentStatus,
	},
	{
		name: "a pool at its cap holding its replicas is Ready and says it is at the cap", maxTenants: ptr.To[int32](10), obs: observation{ready: 3, allocated: 7, tenants: 10},
		ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonSucceeded, message: "3 spares ready", full: true, kstatus: status.CurrentStatus,
	},
	{
		name: "a pool at its cap short of spares is Stalled", maxTenants: ptr.To[int32](10), obs: observation{ready: 1, allocated: 9, tenants: 10},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonMaxTenantsReached,
		message: "1 of 3 spares ready, and the pool has created spec.maxTenants (10) tenants: raise it, or delete tenants", full: true, kstatus: status.FailedStatus,
	},
	{
		name: "a pool at its cap with spares still provisioning is on its way", maxTenants: ptr.To[int32](10), obs: observation{ready: 1, provisioning: 1, allocated: 8, tenants: 10},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonProgressing, message: "1 of 3 spares ready, 1 provisioning", full: true, kstatus: status.InProgressStatus,
	},
}

// statusCasePool is the pool of a case, at generation 4, with the status an earlier reconcile
// left at generation 3: computeStatus starts from it.
func statusCasePool(maxTenants *int32) *tenancyv1alpha1.TenantPool {
	return &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: "standard", Generation: 4},
		Spec:       tenancyv1alpha1.TenantPoolSpec{Replicas: 3, MaxTenants: maxTenants},
		Status: tenancyv1alpha1.TenantPoolStatus{ObservedGeneration: 3, Ready: 3, Conditions: []metav1.Condition{
			{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonSucceeded, Message: "3 spares ready", ObservedGeneration: 3},
			{Type: tenancyv1alpha1.MaxTenantsReachedCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonMaxTenantsReached, ObservedGeneration: 3},
		}},
	}
}

func TestComputeStatus(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			s := computeStatus(statusCasePool(tc.maxTenants), tc.obs)
			if s.Ready != tc.obs.ready || s.Provisioning != tc.obs.provisioning || s.Suspended != tc.obs.suspended || s.Allocated != tc.obs.allocated || s.ObservedGeneration != 4 {
				t.Errorf("counts = ready %d provisioning %d suspended %d allocated %d generation %d", s.Ready, s.Provisioning, s.Suspended, s.Allocated, s.ObservedGeneration)
			}
			if c := meta.FindStatusCondition(s.Conditions, tenancyv1alpha1.ReadyCondition); c == nil || c.Status != tc.ready || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 4 {
				t.Errorf("Ready = %+v, want %s %s at generation 4 saying %q", c, tc.ready, tc.reason, tc.message)
			}
			reconciling := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.ReconcilingCondition)
			stalled := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.StalledCondition)
			if want := tc.ready == metav1.ConditionFalse && tc.reason == tenancyv1alpha1.ReasonProgressing; reconciling != want {
				t.Errorf("Reconciling = %v, want %v", reconciling, want)
			}
			if want := tc.reason == tenancyv1alpha1.ReasonMaxTenantsReached; stalled != want {
				t.Errorf("Stalled = %v, want %v", stalled, want)
			}
			full := meta.FindStatusCondition(s.Conditions, tenancyv1alpha1.MaxTenantsReachedCondition)
			if (full != nil && full.Status == metav1.ConditionTrue) != tc.full {
				t.Errorf("MaxTenantsReached = %+v, want %v", full, tc.full)
			}
		})
	}
}

// Every state a pool reports reads the same to kstatus (Flux's health checks, kubectl wait,
// cli-utils) and to the Argo CD health check Landlord ships for pools.
func TestAPoolsStatusReadsTheSameInKstatusAndArgoCD(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			pool := statusCasePool(tc.maxTenants)
			pool.Status = computeStatus(pool, tc.obs)
			if got, _ := controllertest.KstatusAgreesWithArgoCD(t, pool); got != tc.kstatus {
				t.Errorf("kstatus %s, want %s", got, tc.kstatus)
			}
		})
	}
}
