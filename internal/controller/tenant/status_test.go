package tenant

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

func TestComputeStatus(t *testing.T) {
	const namespace = "tenant-acme"
	nsDone := phaseResult{condition: tenancyv1alpha1.NamespaceReadyCondition, outcome: phase.Done(tenancyv1alpha1.ReasonSucceeded, "namespace is ready")}
	secretsDone := phaseResult{condition: tenancyv1alpha1.SecretsReadyCondition, outcome: phase.Done(tenancyv1alpha1.ReasonSucceeded, "secrets copied")}
	dbsStalled := phaseResult{condition: tenancyv1alpha1.DatabasesReadyCondition, outcome: phase.Stalled(tenancyv1alpha1.ReasonNoDatabaseServer, "no server")}
	compsRolling := phaseResult{condition: tenancyv1alpha1.ComponentsReadyCondition, outcome: phase.Progressing(tenancyv1alpha1.ReasonProgressing, "web rolling out")}
	compsFailed := phaseResult{condition: tenancyv1alpha1.ComponentsReadyCondition, outcome: phase.Failed(tenancyv1alpha1.ReasonApplyFailed, errors.New("apply refused"))}

	// want is a condition's status and reason, or absent.
	type want struct {
		status metav1.ConditionStatus
		reason string
	}
	absent := want{}
	for _, tc := range []struct {
		name               string
		state              tenancyv1alpha1.TenantState
		previous           tenancyv1alpha1.TenantStatus
		results            []phaseResult
		ready              want
		reconciling        want
		stalled            want
		secrets            want
		observedGeneration int64
		namespace          string
	}{
		{
			name:    "every phase done makes the tenant Ready for its generation",
			state:   tenancyv1alpha1.StateActive,
			results: []phaseResult{nsDone, secretsDone},
			ready:   want{metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded}, reconciling: absent, stalled: absent,
			secrets:            want{metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded},
			observedGeneration: 7, namespace: namespace,
		},
		{
			name:    "a phase in progress makes it Reconciling and leaves observedGeneration behind",
			state:   tenancyv1alpha1.StateActive,
			results: []phaseResult{nsDone, secretsDone, compsRolling},
			ready:   want{metav1.ConditionFalse, tenancyv1alpha1.ReasonProgressing}, reconciling: want{metav1.ConditionTrue, tenancyv1alpha1.ReasonProgressing}, stalled: absent,
			secrets:            want{metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded},
			observedGeneration: 3, namespace: namespace,
		},
		{
			name:    "a transient error counts as progress, not as a stall",
			state:   tenancyv1alpha1.StateActive,
			results: []phaseResult{nsDone, compsFailed},
			ready:   want{metav1.ConditionFalse, tenancyv1alpha1.ReasonApplyFailed}, reconciling: want{metav1.ConditionTrue, tenancyv1alpha1.ReasonApplyFailed}, stalled: absent,
			observedGeneration: 3, namespace: namespace,
		},
		{
			name:    "a stall is reported ahead of progress and is a verdict for the generation",
			state:   tenancyv1alpha1.StateActive,
			results: []phaseResult{nsDone, compsRolling, dbsStalled},
			ready:   want{metav1.ConditionFalse, tenancyv1alpha1.ReasonNoDatabaseServer}, reconciling: absent, stalled: want{metav1.ConditionTrue, tenancyv1alpha1.ReasonNoDatabaseServer},
			observedGeneration: 7, namespace: namespace,
		},
		{
			name:  "an Archived tenant loses the conditions of phases it no longer runs and its namespace once removed",
			state: tenancyv1alpha1.StateArchived,
			previous: tenancyv1alpha1.TenantStatus{Namespace: namespace, Conditions: []metav1.Condition{
				{Type: tenancyv1alpha1.SecretsReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonSucceeded},
				{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonProgressing},
			}},
			results: []phaseResult{{condition: tenancyv1alpha1.NamespaceReadyCondition, outcome: phase.Done(tenancyv1alpha1.ReasonNamespaceRemoved, "removed")}},
			ready:   want{metav1.ConditionTrue, tenancyv1alpha1.ReasonSucceeded}, reconciling: absent, stalled: absent,
			secrets:            absent,
			observedGeneration: 7, namespace: "",
		},
		{
			name:     "an Archived tenant keeps naming its namespace while it terminates",
			state:    tenancyv1alpha1.StateArchived,
			previous: tenancyv1alpha1.TenantStatus{Namespace: namespace},
			results:  []phaseResult{{condition: tenancyv1alpha1.NamespaceReadyCondition, outcome: phase.Progressing(tenancyv1alpha1.ReasonNamespaceTerminating, "terminating")}},
			ready:    want{metav1.ConditionFalse, tenancyv1alpha1.ReasonNamespaceTerminating}, reconciling: want{metav1.ConditionTrue, tenancyv1alpha1.ReasonNamespaceTerminating}, stalled: absent,
			observedGeneration: 3, namespace: namespace,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := &tenancyv1alpha1.Tenant{
				ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 7},
				Spec:       tenancyv1alpha1.TenantSpec{State: tc.state},
			}
			previous := *tc.previous.DeepCopy()
			previous.ObservedGeneration = 3
			tenant.Status = previous
			got := computeStatus(tenant, namespace, *previous.DeepCopy(), tc.results)

			for _, c := range []struct {
				typ  string
				want want
			}{
				{tenancyv1alpha1.ReadyCondition, tc.ready},
				{tenancyv1alpha1.ReconcilingCondition, tc.reconciling},
				{tenancyv1alpha1.StalledCondition, tc.stalled},
				{tenancyv1alpha1.SecretsReadyCondition, tc.secrets},
			} {
				cond := meta.FindStatusCondition(got.Conditions, c.typ)
				switch {
				case c.want == absent && cond != nil:
					t.Errorf("%s = %s/%s, want it absent", c.typ, cond.Status, cond.Reason)
				case c.want != absent && cond == nil:
					t.Errorf("%s is absent, want %s/%s", c.typ, c.want.status, c.want.reason)
				case c.want != absent && (cond.Status != c.want.status || cond.Reason != c.want.reason || cond.ObservedGeneration != 7):
					t.Errorf("%s = %s/%s at generation %d, want %s/%s at 7", c.typ, cond.Status, cond.Reason, cond.ObservedGeneration, c.want.status, c.want.reason)
				}
			}
			if got.ObservedGeneration != tc.observedGeneration {
				t.Errorf("observedGeneration = %d, want %d", got.ObservedGeneration, tc.observedGeneration)
			}
			if got.Namespace != tc.namespace {
				t.Errorf("namespace = %q, want %q", got.Namespace, tc.namespace)
			}
			if !equality.Semantic.DeepEqual(tenant.Status, previous) {
				t.Error("computeStatus changed the tenant it was given")
			}
		})
	}
}

func TestSuspendedStatusKeepsWhatWasObservedAndSaysWhy(t *testing.T) {
	observed := []metav1.Condition{
		{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonRollingOut, ObservedGeneration: 3},
		{Type: tenancyv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonRollingOut, ObservedGeneration: 3},
		{Type: tenancyv1alpha1.ComponentsReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonRollingOut, ObservedGeneration: 3},
	}
	tenant := &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: "acme", Generation: 7},
		Spec:       tenancyv1alpha1.TenantSpec{Suspend: true},
		Status: tenancyv1alpha1.TenantStatus{
			ObservedGeneration: 3, Namespace: "tenant-acme", LastHandledReconcileAt: "earlier",
			Conditions: append([]metav1.Condition(nil), observed...),
		},
	}
	before := *tenant.Status.DeepCopy()

	got := suspendedStatus(tenant)

	t.Run("the Suspended condition names spec.suspend, for the current generation", func(t *testing.T) {
		c := meta.FindStatusCondition(got.Conditions, tenancyv1alpha1.SuspendedCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tenancyv1alpha1.ReasonSuspended || c.ObservedGeneration != 7 {
			t.Fatalf("Suspended = %+v, want True/Suspended at generation 7", c)
		}
		if !strings.Contains(c.Message, "spec.suspend") {
			t.Errorf("message %q does not name spec.suspend", c.Message)
		}
	})
	t.Run("observedGeneration is current", func(t *testing.T) {
		if got.ObservedGeneration != 7 {
			t.Errorf("observedGeneration = %d, want 7", got.ObservedGeneration)
		}
	})
	t.Run("every other condition and field is as last observed", func(t *testing.T) {
		for _, want := range observed {
			c := meta.FindStatusCondition(got.Conditions, want.Type)
			if c == nil || c.Status != want.Status || c.Reason != want.Reason || c.ObservedGeneration != want.ObservedGeneration {
				t.Errorf("%s = %+v, want %+v", want.Type, c, want)
			}
		}
		if len(got.Conditions) != len(observed)+1 {
			t.Errorf("%d conditions, want %d", len(got.Conditions), len(observed)+1)
		}
		if got.Namespace != "tenant-acme" || got.LastHandledReconcileAt != "earlier" {
			t.Errorf("namespace %q, lastHandledReconcileAt %q changed", got.Namespace, got.LastHandledReconcileAt)
		}
	})
	t.Run("resumed, computeStatus removes the Suspended condition", func(t *testing.T) {
		resumed := tenant.DeepCopy()
		resumed.Spec.Suspend = false
		resumed.Status = got
		next := computeStatus(resumed, "tenant-acme", *got.DeepCopy(), []phaseResult{
			{condition: tenancyv1alpha1.NamespaceReadyCondition, outcome: phase.Done(tenancyv1alpha1.ReasonSucceeded, "namespace is ready")},
		})
		if c := meta.FindStatusCondition(next.Conditions, tenancyv1alpha1.SuspendedCondition); c != nil {
			t.Errorf("Suspended = %+v after resuming, want it absent", c)
		}
	})
	if !equality.Semantic.DeepEqual(tenant.Status, before) {
		t.Error("suspendedStatus changed the tenant it was given")
	}
}
