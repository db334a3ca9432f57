package databases

import (
	"testing"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestWhatAMoveAsksOfItsDatabase(t *testing.T) {
	e := dbEntry{engine: tenancyv1alpha1.EnginePostgres, Database: tenancyv1alpha1.Database{Name: "app"}}
	onOld := &tenancyv1alpha1.DatabaseStatus{Name: "app", Server: "pg-shared"}
	onNew := &tenancyv1alpha1.DatabaseStatus{Name: "app", Server: "pg-dedicated"}
	move := func(phase tenancyv1alpha1.DatabaseMovePhase) *tenancyv1alpha1.DatabaseMove {
		m := &tenancyv1alpha1.DatabaseMove{Spec: tenancyv1alpha1.DatabaseMoveSpec{Tenant: "acme", Database: "app", Server: "pg-dedicated"}}
		m.Name, m.Status.Phase = "acme-app", phase
		return m
	}
	for _, tc := range []struct {
		name            string
		move            *tenancyv1alpha1.DatabaseMove
		prev            *tenancyv1alpha1.DatabaseStatus
		hold, switching bool
	}{
		{name: "no move leaves the database to its convergence", prev: onOld},
		{name: "a move that has not fenced yet changes nothing", move: move(tenancyv1alpha1.MovePending), prev: onOld},
		{name: "a fenced database is held while its copy runs", move: move(tenancyv1alpha1.MoveCopying), prev: onOld, hold: true},
		{name: "a fenced database is held while its move rolls back", move: move(tenancyv1alpha1.MoveRollingBack), prev: onOld, hold: true},
		{name: "a switching move sends the database down the slow path once", move: move(tenancyv1alpha1.MoveSwitching), prev: onOld, switching: true},
		{name: "a switch the status shows already is done", move: move(tenancyv1alpha1.MoveSwitching), prev: onNew},
		{name: "a switched move leaves the database to its convergence", move: move(tenancyv1alpha1.MoveSwitched), prev: onNew},
		{name: "a database not in place is not a move's", move: move(tenancyv1alpha1.MoveCopying)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, switching, res := moving(e, tc.move, tc.prev)
			if hold != tc.hold || switching != tc.switching {
				t.Fatalf("hold %v, switching %v; want %v, %v", hold, switching, tc.hold, tc.switching)
			}
			if hold && (res.Reason != tenancyv1alpha1.ReasonMoving || res.Done || res.Stalled || res.Err != nil) {
				t.Fatalf("a held database reports %+v, want Moving in progress", res)
			}
		})
	}
}
