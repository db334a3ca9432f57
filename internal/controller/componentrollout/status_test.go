package componentrollout

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/controllertest"
	"github.com/landlord-dev/landlord/test/argocd"
)

var statusNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// following is a tenant that lets rollouts move web, running version, Ready.
func following(name, version string) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       tenancyv1alpha1.TenantSpec{Components: []tenancyv1alpha1.Component{{Name: "web", Version: "1.0.0", FollowRollouts: true}}},
		Status: tenancyv1alpha1.TenantStatus{
			ObservedGeneration: 1,
			Components:         []tenancyv1alpha1.ComponentStatus{{Name: "web", Version: version, Rollout: "web-2", Ready: true}},
			Conditions:         []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonSucceeded}},
		},
	}
}

// windowed is t with a daily maintenance window of an hour at 02:00 UTC, closed at statusNow.
func windowed(t *tenancyv1alpha1.Tenant) *tenancyv1alpha1.Tenant {
	t.Spec.MaintenanceWindows = []tenancyv1alpha1.MaintenanceWindow{{Start: "02:00", Duration: metav1.Duration{Duration: time.Hour}}}
	return t
}

// nextWindow is when windowed's window next opens after statusNow.
var nextWindow = time.Date(2025, 3, 2, 2, 0, 0, 0, time.UTC)

// fleet is the tenants of a case by name, and their names in order, as Reconcile hands them
// to computeStatus.
func fleet(tenants ...*tenancyv1alpha1.Tenant) observation {
	o := observation{selector: labels.Everything(), tenants: map[string]*tenancyv1alpha1.Tenant{}, now: statusNow}
	for _, t := range tenants {
		o.tenants[t.Name] = t
		o.chosen = append(o.chosen, t.Name)
	}
	return o
}

// statusCases are the states a rollout reports: its spec, what a reconcile read, the Ready
// condition that follows, and how kstatus and Argo CD read the rollout.
var statusCases = []struct {
	name    string
	spec    func(*tenancyv1alpha1.ComponentRolloutSpec)
	obs     func() observation
	ready   metav1.ConditionStatus
	reason  string
	requeue time.Duration
	kstatus status.Status
	argo    string
}{
	{
		name:  "a rollout whose selector does not parse is Stalled",
		obs:   func() observation { return observation{invalidSelector: errors.New(`"in" needs values`)} },
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonInvalidObject, kstatus: status.FailedStatus, argo: argocd.Degraded,
	},
	{
		name:  "a rollout of a version whose template is not published is Stalled until it is",
		obs:   func() observation { return observation{missingTemplate: "web-2.0.0"} },
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonTemplateNotFound, kstatus: status.FailedStatus, argo: argocd.Degraded,
	},
	{
		name:  "a rollout with no tenant to move is Ready at once",
		obs:   func() observation { return fleet() },
		ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonRolloutComplete, kstatus: status.CurrentStatus, argo: argocd.Healthy,
	},
	{
		name: "a new rollout releases its canaries' wave and is Reconciling while they move, looking again at their deadline",
		obs: func() observation {
			return fleet(following("acme", "1.0.0"), following("globex", "1.0.0"), following("initech", "1.0.0"))
		},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonWaveInProgress, requeue: 10*time.Minute + time.Second,
		kstatus: status.InProgressStatus, argo: argocd.Progressing,
	},
	{
		name: "a rollout whose tenants all run its version is Ready",
		obs: func() observation {
			return fleet(following("acme", "2.0.0"), following("globex", "2.0.0"), following("initech", "2.0.0"))
		},
		ready: metav1.ConditionTrue, reason: tenancyv1alpha1.ReasonRolloutComplete, kstatus: status.CurrentStatus, argo: argocd.Healthy,
	},
	{
		name: "a rollout pausing between waves is Reconciling, and looks again when the pause ends",
		spec: func(s *tenancyv1alpha1.ComponentRolloutSpec) {
			s.Strategy.PauseBetweenWaves = &metav1.Duration{Duration: time.Hour}
		},
		obs: func() observation {
			return fleet(following("acme", "2.0.0"), following("globex", "1.0.0"), following("initech", "1.0.0"))
		},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonPausedBetweenWaves, requeue: time.Hour,
		kstatus: status.InProgressStatus, argo: argocd.Progressing,
	},
	{
		name: "a rollout whose canary waits for its maintenance window is Reconciling, and looks again when the window opens",
		obs: func() observation {
			return fleet(windowed(following("acme", "1.0.0")), following("globex", "1.0.0"))
		},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonWaveInProgress, requeue: nextWindow.Sub(statusNow) + time.Second,
		kstatus: status.InProgressStatus, argo: argocd.Progressing,
	},
	{
		name: "an urgent rollout moves a tenant outside its window, and looks again at its deadline",
		spec: func(s *tenancyv1alpha1.ComponentRolloutSpec) { s.Strategy.IgnoreMaintenanceWindows = true },
		obs: func() observation {
			return fleet(windowed(following("acme", "1.0.0")), following("globex", "1.0.0"))
		},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonWaveInProgress, requeue: 10*time.Minute + time.Second,
		kstatus: status.InProgressStatus, argo: argocd.Progressing,
	},
	{
		name: "a rollout whose waiting tenant is past the deadline is not failed, only Reconciling",
		obs: func() observation {
			o := fleet(windowed(following("acme", "1.0.0")), following("globex", "1.0.0"))
			o.waves = []tenancyv1alpha1.RolloutWave{{Tenants: []string{"acme"}, StartedAt: &metav1.Time{Time: statusNow.Add(-time.Hour)}}}
			o.released = 1
			return o
		},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonWaveInProgress, requeue: nextWindow.Sub(statusNow) + time.Second,
		kstatus: status.InProgressStatus, argo: argocd.Progressing,
	},
	{
		name: "a rollout halted by its spec with waves to go is not Ready, nor Reconciling: Argo CD shows it Suspended",
		spec: func(s *tenancyv1alpha1.ComponentRolloutSpec) { s.Halted = true },
		obs: func() observation {
			return fleet(following("acme", "1.0.0"), following("globex", "1.0.0"), following("initech", "1.0.0"))
		},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonHaltedBySpec, kstatus: status.InProgressStatus, argo: argocd.Suspended,
	},
	{
		name: "a rollout with more failed tenants than maxFailures is Stalled",
		obs: func() observation {
			o := fleet(following("acme", "1.0.0"), following("globex", "1.0.0"), following("initech", "1.0.0"))
			// The canaries' wave started before the progress deadline, and acme still runs 1.0.0.
			o.waves = []tenancyv1alpha1.RolloutWave{{Tenants: []string{"acme"}, StartedAt: &metav1.Time{Time: statusNow.Add(-time.Hour)}}}
			o.released = 1
			return o
		},
		ready: metav1.ConditionFalse, reason: tenancyv1alpha1.ReasonTooManyFailures, kstatus: status.FailedStatus, argo: argocd.Degraded,
	},
}

// statusCaseRollout is the rollout of a case, at generation 3, with the status an earlier
// reconcile left at generation 2: computeStatus starts from it.
func statusCaseRollout(spec func(*tenancyv1alpha1.ComponentRolloutSpec)) *tenancyv1alpha1.ComponentRollout {
	ro := &tenancyv1alpha1.ComponentRollout{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2", Generation: 3},
		Spec: tenancyv1alpha1.ComponentRolloutSpec{
			Component: "web", Version: "2.0.0",
			Strategy: tenancyv1alpha1.RolloutStrategy{Canaries: []string{"acme"}},
		},
		Status: tenancyv1alpha1.ComponentRolloutStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
			{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonWaveInProgress, ObservedGeneration: 2},
			{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonWaveInProgress, ObservedGeneration: 2},
		}},
	}
	if spec != nil {
		spec(&ro.Spec)
	}
	return ro
}

func TestComputeStatus(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			s, requeue := computeStatus(statusCaseRollout(tc.spec), tc.obs())
			if s.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d, want 3: every reconcile reaches a verdict", s.ObservedGeneration)
			}
			ready := meta.FindStatusCondition(s.Conditions, tenancyv1alpha1.ReadyCondition)
			if ready == nil || ready.Status != tc.ready || ready.Reason != tc.reason || ready.ObservedGeneration != 3 {
				t.Fatalf("Ready = %+v, want %s %s at generation 3", ready, tc.ready, tc.reason)
			}
			reconciling := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.ReconcilingCondition)
			stalled := meta.IsStatusConditionTrue(s.Conditions, tenancyv1alpha1.StalledCondition)
			if want := tc.reason == tenancyv1alpha1.ReasonWaveInProgress || tc.reason == tenancyv1alpha1.ReasonPausedBetweenWaves; reconciling != want {
				t.Errorf("Reconciling = %v, want %v", reconciling, want)
			}
			if want := tc.kstatus == status.FailedStatus; stalled != want {
				t.Errorf("Stalled = %v, want %v", stalled, want)
			}
			if requeue != tc.requeue {
				t.Errorf("looks again in %s, want %s", requeue, tc.requeue)
			}
		})
	}
	t.Run("the observation's waves are left as they were", func(t *testing.T) {
		o := statusCases[len(statusCases)-1].obs()
		computeStatus(statusCaseRollout(nil), o)
		if w := o.waves[0]; w.CompletedAt != nil || len(w.Failed) != 0 {
			t.Errorf("the observation's wave became %+v", w)
		}
	})
}

// Every state a rollout reports reads the same to kstatus (Flux's health checks, kubectl wait,
// cli-utils) and to the Argo CD health check Landlord ships for rollouts; a halted one with
// waves to go, which kstatus reads as InProgress, is Suspended to Argo CD.
func TestARolloutsStatusReadsTheSameInKstatusAndArgoCD(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			ro := statusCaseRollout(tc.spec)
			ro.Status, _ = computeStatus(ro, tc.obs())
			if gotKstatus, gotArgo := controllertest.KstatusAgreesWithArgoCD(t, ro); gotKstatus != tc.kstatus || gotArgo != tc.argo {
				t.Errorf("kstatus %s and Argo CD %s, want %s and %s", gotKstatus, gotArgo, tc.kstatus, tc.argo)
			}
		})
	}
}

// A released wave's tenants that wait for their maintenance window are pending, named with
// their next window (by name, at most maxWaiting), and hold the wave open; the rollout looks
// again when the first window opens.
func TestWaitingTenants(t *testing.T) {
	many := func(n int) []*tenancyv1alpha1.Tenant {
		var tenants []*tenancyv1alpha1.Tenant
		for i := range n {
			tenants = append(tenants, windowed(following(fmt.Sprintf("t%03d", n-i), "1.0.0")))
		}
		return tenants
	}
	waiting := func(names ...string) []tenancyv1alpha1.RolloutWaiting {
		var out []tenancyv1alpha1.RolloutWaiting
		for _, name := range names {
			out = append(out, tenancyv1alpha1.RolloutWaiting{Tenant: name, NextWindow: metav1.NewTime(nextWindow)})
		}
		return out
	}
	for name, tc := range map[string]struct {
		ignore      bool
		tenants     []*tenancyv1alpha1.Tenant
		wantWaiting []tenancyv1alpha1.RolloutWaiting
		wantPending int32
		wantDone    int32
		wantRequeue time.Duration
	}{
		"a tenant outside its window waits while its wave-mate is done": {
			tenants:     []*tenancyv1alpha1.Tenant{windowed(following("acme", "1.0.0")), following("globex", "2.0.0")},
			wantWaiting: waiting("acme"), wantPending: 1, wantDone: 1, wantRequeue: nextWindow.Sub(statusNow) + time.Second,
		},
		"a tenant already running the version outside its window is done": {
			tenants:  []*tenancyv1alpha1.Tenant{windowed(following("acme", "2.0.0")), following("globex", "2.0.0")},
			wantDone: 2,
		},
		"an urgent rollout names no tenant waiting": {
			ignore:      true,
			tenants:     []*tenancyv1alpha1.Tenant{windowed(following("acme", "1.0.0")), following("globex", "2.0.0")},
			wantPending: 1, wantDone: 1, wantRequeue: 10*time.Minute + time.Second,
		},
		"the waiting tenants are named by name, the first 50": {
			tenants:     many(60),
			wantWaiting: waiting(names(1, 50)...), wantPending: 60, wantRequeue: nextWindow.Sub(statusNow) + time.Second,
		},
	} {
		t.Run(name, func(t *testing.T) {
			ro := statusCaseRollout(func(s *tenancyv1alpha1.ComponentRolloutSpec) {
				s.Strategy.Canaries = nil
				s.Strategy.BatchSize = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
				s.Strategy.IgnoreMaintenanceWindows = tc.ignore
			})
			s, requeue := computeStatus(ro, fleet(tc.tenants...))
			if len(s.Waves) != 1 || s.Released != 1 {
				t.Fatalf("waves %+v, %d released; want one, released", s.Waves, s.Released)
			}
			w := s.Waves[0]
			if !equality.Semantic.DeepEqual(w.Waiting, tc.wantWaiting) {
				t.Errorf("waiting %+v, want %+v", w.Waiting, tc.wantWaiting)
			}
			if w.Pending != tc.wantPending || w.Done != tc.wantDone || len(w.Failed) != 0 {
				t.Errorf("wave: %d pending, %d done, failed %+v; want %d pending, %d done", w.Pending, w.Done, w.Failed, tc.wantPending, tc.wantDone)
			}
			if complete := w.CompletedAt != nil; complete != (tc.wantPending == 0) {
				t.Errorf("wave completed %v with %d pending", complete, w.Pending)
			}
			if requeue != tc.wantRequeue {
				t.Errorf("looks again in %s, want %s", requeue, tc.wantRequeue)
			}
		})
	}
}

// names are t<from> to t<to>, as many() names them.
func names(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("t%03d", i))
	}
	return out
}
