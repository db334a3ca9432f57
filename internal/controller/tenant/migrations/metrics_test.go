package migrations

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A component's move makes both its landlord_migrations_total series exist at 0: the alert on
// failed migrations sees the first failure as an increase from 0, not a series born at 1.
func TestAMoveMakesItsComponentsMigrationCountersExistAtZero(t *testing.T) {
	before := testutil.CollectAndCount(migrationsFinished)
	countMoves("counted")
	countMoves("counted")
	if got := testutil.CollectAndCount(migrationsFinished); got != before+2 {
		t.Errorf("%d series after a move of a new component, want %d", got, before+2)
	}
	for _, result := range []string{"succeeded", "failed"} {
		if v := testutil.ToFloat64(migrationsFinished.WithLabelValues("counted", result)); v != 0 {
			t.Errorf("result=%q is %v, want 0", result, v)
		}
	}
}
