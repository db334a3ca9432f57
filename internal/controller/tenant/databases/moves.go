package databases

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

// A database move (package databasemove) takes one of the tenant's databases over from this
// engine while it runs: from its fence to its switch nothing here touches the database's login
// on its old server (a slow path would give it back the password its applications hold, and let
// them write what the copy misses). Once the move has written the new server into the secret
// store, the database takes the slow path once, which publishes the new server in the tenant's
// Secret and status.

// The moves are read from the cache; the tenant reconciler is woken by their changes.
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databasemoves,verbs=get;list;watch

// movesOf are the tenant's database moves under way, by the database's name in the spec: one per
// database at most, as the move controller refuses a second. A move recorded for an earlier
// tenant of the same name is not this tenant's.
func (r *Engine) movesOf(ctx context.Context, t *tenancyv1alpha1.Tenant) (map[string]*tenancyv1alpha1.DatabaseMove, error) {
	if !r.Moves || len(t.Status.Databases) == 0 {
		return nil, nil
	}
	list := &tenancyv1alpha1.DatabaseMoveList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenMoveTenant: t.Name}); err != nil {
		return nil, err
	}
	out := map[string]*tenancyv1alpha1.DatabaseMove{}
	for i := range list.Items {
		m := &list.Items[i]
		if m.Status.TenantUID == string(t.UID) {
			out[m.Spec.Database] = m
		}
	}
	return out, nil
}

// moving says what a move under way asks of the database's convergence: hold (fenced: leave it
// alone, reporting res), or switch (take the slow path, which reads the new server from the
// store).
func moving(e dbEntry, m *tenancyv1alpha1.DatabaseMove, prev *tenancyv1alpha1.DatabaseStatus) (hold bool, switching bool, res phase.Result) {
	switch {
	case m == nil || prev == nil:
		return false, false, phase.Result{}
	case m.Fencing():
		return true, false, phase.Progressing(tenancyv1alpha1.ReasonMoving,
			"%s is moving from DatabaseServer %s to %s (DatabaseMove %s): its sessions are fenced until the switch", e, prev.Server, m.Spec.Server, m.Name)
	case m.Status.Phase == tenancyv1alpha1.MoveSwitching && prev.Server != m.Spec.Server:
		return false, true, phase.Result{}
	}
	return false, false, phase.Result{}
}

// moveCopies are the copies of the tenant's databases that its moves under way hold apart from
// what its store and status name, for a purge to drop: the copy on the target before the switch,
// and the old database from the switch until the move is confirmed and drops it.
func (r *Engine) moveCopies(ctx context.Context, t *tenancyv1alpha1.Tenant) ([]tenancyv1alpha1.DatabaseStatus, error) {
	if !r.Moves {
		return nil, nil
	}
	list := &tenancyv1alpha1.DatabaseMoveList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{indexes.OpenMoveTenant: t.Name}); err != nil {
		return nil, err
	}
	var out []tenancyv1alpha1.DatabaseStatus
	for _, m := range list.Items {
		if m.Status.TenantUID != string(t.UID) {
			continue
		}
		var at *tenancyv1alpha1.DatabaseLocation
		switch m.Status.Phase {
		case tenancyv1alpha1.MoveCopying, tenancyv1alpha1.MoveRollingBack:
			at = m.Status.To
		case tenancyv1alpha1.MoveSwitching, tenancyv1alpha1.MoveSwitched, tenancyv1alpha1.MoveDropping:
			at = m.Status.From
		}
		if at != nil {
			out = append(out, tenancyv1alpha1.DatabaseStatus{Engine: m.Status.Engine, Name: m.Spec.Database,
				Server: at.Server, Database: at.Database, Username: at.Username})
		}
	}
	return out, nil
}
