package tenant

import (
	"errors"
	"testing"

	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

func TestATakeoverIsRecordedOnlyOnceEveryObjectCarriesTheNewLabel(t *testing.T) {
	ns := func(o outcome) phaseResult {
		return phaseResult{condition: tenancyv1alpha1.NamespaceReadyCondition, outcome: o}
	}
	secrets := func(o outcome) phaseResult {
		return phaseResult{condition: tenancyv1alpha1.SecretsReadyCondition, outcome: o}
	}
	for _, tc := range []struct {
		name     string
		takeover bool
		results  []phaseResult
		want     bool
	}{
		{"a reconcile of the shard's own tenant is recorded whatever its outcome", false, []phaseResult{ns(phase.Stalled("X", "x"))}, true},
		{"a clean takeover is recorded", true, []phaseResult{ns(outcome{Done: true}), secrets(outcome{Done: true})}, true},
		{"a takeover whose namespace is still terminating is not", true, []phaseResult{ns(phase.Progressing("X", "x"))}, false},
		{"a takeover with a stalled phase is not: it may have stopped before writing the rest", true, []phaseResult{ns(outcome{Done: true}), secrets(phase.Stalled("X", "x"))}, false},
		{"a takeover with a failed phase is not", true, []phaseResult{ns(outcome{Done: true}), secrets(phase.Failed("X", errors.New("boom")))}, false},
		{"a takeover with a phase that waited is not: it wrote none of its objects", true, []phaseResult{ns(outcome{Done: true}),
			{condition: tenancyv1alpha1.ComponentsReadyCondition, outcome: waitingFor[tenancyv1alpha1.DomainsReadyCondition], waited: true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Shard: "b"}
			next := tenancyv1alpha1.TenantStatus{Shard: "a", HandoverTo: ptr.To("b")}
			got := r.recordShard(&next, tc.takeover, tc.results)
			if got != tc.want {
				t.Fatalf("recordShard = %v, want %v", got, tc.want)
			}
			if got && (next.Shard != "b" || next.HandoverTo != nil) {
				t.Errorf("recorded status: shard %q, handoverTo %v", next.Shard, next.HandoverTo)
			}
			if !got && next.Shard != "a" {
				t.Errorf("an unrecorded takeover changed status.shard to %q", next.Shard)
			}
		})
	}
}
