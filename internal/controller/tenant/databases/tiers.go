package databases

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

// A tenant's class says where its databases go (spec.databases of the TenantClass). A database
// already in place on a server the class does not choose (the tenant changed class, or its class
// changed) is moved by a DatabaseMove this engine creates, to a server the class places it on:
// the move copies, verifies, fences and switches it (package databasemove), and keeps the old
// copy until a person confirms it. A database the tenant pins itself (spec.databases[].server,
// where its class lets it) is never moved by its class. One move at a time per database; a move
// that failed is left for a person to look at (the tenant stalls naming it), not retried.

// Moves for a class are created, and an earlier one that succeeded is deleted before the next
// to the same server.
// +kubebuilder:rbac:groups=tenancy.landlord.dev,resources=databasemoves,verbs=create;delete

// serverFits tells whether a server the tenant's database is on suits its class: one its
// selector chooses. true without a class placement, and for a server not (or no longer)
// registered, which is reported elsewhere. Read from the cache: no request.
//
// A dedicated placement chooses a server no other tenant is on when it places or moves a
// database; a database already on a server its class chooses stays there even should another
// tenant's be put there too (by a pin of its spec): the tenant that was there is never the one
// moved off.
func (r *Engine) serverFits(ctx context.Context, s Scope, server string) (bool, error) {
	if s.Placement == nil {
		return true, nil
	}
	placement := *s.Placement
	placement.Dedicated = false
	fits, err := placementFilter(&placement)
	if err != nil {
		return false, err
	}
	ds := &tenancyv1alpha1.DatabaseServer{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: server}, ds); {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return fits(ds, 0), nil
}

// moveToClass converges a database in place (prev) that its class places elsewhere: it is done
// (nothing to do) when the database is pinned or fits, in progress while a move of it is under
// way; otherwise it creates the move to the server the class places it on, or reports why it
// cannot.
func (r *Engine) moveToClass(ctx context.Context, s Scope, e dbEntry, prev *tenancyv1alpha1.DatabaseStatus, open *tenancyv1alpha1.DatabaseMove) phase.Result {
	if s.Placement == nil || prev == nil || e.Server != "" || !r.Moves {
		return phase.Result{Done: true}
	}
	t := s.Tenant
	switch ok, err := r.serverFits(ctx, s, prev.Server); {
	case err != nil:
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	case ok:
		return phase.Result{Done: true}
	case open != nil && open.Status.Phase == tenancyv1alpha1.MoveSwitched:
		// A database moves once at a time: the last move keeps its old copy until confirmed.
		return phase.Progressing(tenancyv1alpha1.ReasonMoving,
			"%s is on DatabaseServer %s, where TenantClass %s does not place it, and moves again once DatabaseMove %s is confirmed (landlordctl db confirm %s)",
			e, prev.Server, s.Class, open.Name, open.Name)
	case open != nil:
		return phase.Progressing(tenancyv1alpha1.ReasonMoving, "%s is moving from DatabaseServer %s to %s (DatabaseMove %s)", e, prev.Server, open.Spec.Server, open.Name)
	}
	target, res := r.placeDatabase(ctx, s, e)
	if !res.Done {
		return res
	}
	name := ClassMoveName(t.Name, e.engine, e.Name, target)
	m := &tenancyv1alpha1.DatabaseMove{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: name}, m); {
	case err == nil && m.Status.Phase == tenancyv1alpha1.MoveFailed:
		return phase.Stalled(tenancyv1alpha1.ReasonClassMoveFailed,
			"%s is on DatabaseServer %s, where TenantClass %s does not place it, and DatabaseMove %s to %s failed: %s; delete the move to try again",
			e, prev.Server, s.Class, name, target, readyMessage(m))
	case err == nil && m.Status.TenantUID != "" && m.Status.TenantUID != string(t.UID):
		return phase.Stalled(tenancyv1alpha1.ReasonClassMoveFailed,
			"DatabaseMove %s is an earlier tenant's of the same name: delete it so that %s can move to DatabaseServer %s", name, e, target)
	case err == nil && m.Terminal():
		// An earlier move to the same server that succeeded (the tenant moved away since): it
		// goes, and the next reconcile makes the new one.
		if err := r.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID}); client.IgnoreNotFound(err) != nil {
			return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
		}
		return phase.Progressing(tenancyv1alpha1.ReasonMoving, "%s: replacing DatabaseMove %s, which ended", e, name)
	case err == nil:
		// Made, and not yet seen by the cache's index of moves under way.
		return phase.Progressing(tenancyv1alpha1.ReasonMoving, "%s is moving to DatabaseServer %s for TenantClass %s (DatabaseMove %s)", e, target, s.Class, name)
	case !apierrors.IsNotFound(err):
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	m = &tenancyv1alpha1.DatabaseMove{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{tenancyv1alpha1.TenantLabel: t.Name, tenancyv1alpha1.ManagedByLabel: tenancyv1alpha1.ManagedByValue},
			// The move goes with the tenant: its finalizer rolls back what it had not switched.
			OwnerReferences: []metav1.OwnerReference{{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "Tenant", Name: t.Name, UID: t.UID}},
		},
		Spec: tenancyv1alpha1.DatabaseMoveSpec{Tenant: t.Name, Database: e.Name, Server: target},
	}
	if err := r.Client.Create(ctx, m); err != nil && !apierrors.IsAlreadyExists(err) {
		return phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	log.FromContext(ctx).Info("database moving to its class's server", "tenant", t.Name, "database", e.Name, "engine", e.engine,
		"from", prev.Server, "to", target, "class", s.Class, "move", name)
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, ReasonClassMove, "Move",
		"%s moves from DatabaseServer %s to %s, where TenantClass %s places it (DatabaseMove %s; the old copy is kept until the move is confirmed)",
		e, prev.Server, target, s.Class, name)
	return phase.Progressing(tenancyv1alpha1.ReasonMoving, "%s is moving to DatabaseServer %s for TenantClass %s (DatabaseMove %s)", e, target, s.Class, name)
}

// ClassMoveName is the name of the move that takes a tenant's database to a server for its
// class: readable, and unique per tenant, database and target (a hash keeps it within a name's
// length).
func ClassMoveName(tenant string, engine tenancyv1alpha1.DatabaseEngine, database, server string) string {
	sum := sha256.Sum256([]byte(server))
	short := "pg"
	if engine == tenancyv1alpha1.EngineMySQL {
		short = "my"
	}
	return fmt.Sprintf("%s-%s-%s-%s", tenant, short, database, hex.EncodeToString(sum[:4]))
}

// readyMessage is the message of an object's Ready condition.
func readyMessage(m *tenancyv1alpha1.DatabaseMove) string {
	for _, c := range m.Status.Conditions {
		if c.Type == tenancyv1alpha1.ReadyCondition {
			return c.Message
		}
	}
	return "no message"
}
