package databases

import (
	"context"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/controller/tenant/phase"
)

// placeDatabase is where a tenant's new database of an engine goes: the server already holding
// the tenant's databases of that engine if any (no request, and no look at the servers), else
// the least loaded server (see leastLoadedServer) by the servers and tenant counts in the cache.
// Nothing is placed when none qualifies; a server becoming Ready re-triggers the tenant. Counts
// include what this process placed that the cache does not show yet (placements).
//
// A tenant of a class placing databases (s.Placement) is placed on a server the class chooses,
// and its other databases of the engine are placed with them only while that server fits.
func (r *Engine) placeDatabase(ctx context.Context, s Scope, e dbEntry) (string, phase.Result) {
	t := s.Tenant
	fits, err := placementFilter(s.Placement)
	if err != nil {
		return "", phase.Stalled(tenancyv1alpha1.ReasonInvalidObject, "TenantClass %s: %v", s.Class, err)
	}
	for _, d := range t.Status.Databases {
		if d.Engine == e.engine {
			if ok, err := r.serverFits(ctx, s, d.Server); err != nil || ok {
				return d.Server, phase.Result{Done: err == nil, Err: err}
			}
		}
	}
	servers := &tenancyv1alpha1.DatabaseServerList{}
	if err := r.Client.List(ctx, servers); err != nil {
		return "", phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	moving, err := r.movingTo(ctx, t.Name)
	if err != nil {
		return "", phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	server, err := r.placed.place(ctx, r.Client, t, e.engine, servers.Items, moving, fits)
	if err != nil {
		return "", phase.Failed(tenancyv1alpha1.ReasonApplyFailed, err)
	}
	if server != "" {
		return server, phase.Result{Done: true}
	}
	if s.Placement != nil {
		return "", phase.Progressing(tenancyv1alpha1.ReasonNoDatabaseServer,
			"%s: no Ready %s DatabaseServer that TenantClass %s places databases on has room for the tenant", e, e.engine, s.Class)
	}
	return "", phase.Progressing(tenancyv1alpha1.ReasonNoDatabaseServer,
		"%s: no Ready %s DatabaseServer has room for another tenant", e, e.engine)
}

// serverFilter tells whether a server, with n other tenants on it, may take a tenant's database.
type serverFilter func(ds *tenancyv1alpha1.DatabaseServer, n int32) bool

// placementFilter is the servers a class's placement allows: those its selector chooses (all
// when it has none), and for a dedicated placement only those holding no other tenant. Nil
// placement allows every server.
func placementFilter(p *tenancyv1alpha1.ClassDatabases) (serverFilter, error) {
	if p == nil {
		return func(*tenancyv1alpha1.DatabaseServer, int32) bool { return true }, nil
	}
	sel := labels.Everything()
	if p.ServerSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(p.ServerSelector); err != nil {
			return nil, fmt.Errorf("spec.databases.serverSelector: %w", err)
		}
	}
	dedicated := p.Dedicated
	return func(ds *tenancyv1alpha1.DatabaseServer, n int32) bool {
		return sel.Matches(labels.Set(ds.Labels)) && (!dedicated || n == 0)
	}, nil
}

// leastLoadedServer is the Ready, not deleted server of the engine with the fewest tenants
// (by tenants, a count per server name) and room for one more, that fits; ties go to the first
// name. It is "" when none qualifies.
func leastLoadedServer(engine tenancyv1alpha1.DatabaseEngine, servers []tenancyv1alpha1.DatabaseServer, tenants map[string]int32, fits serverFilter) string {
	best, bestCount := "", int32(-1)
	for i := range servers {
		ds := &servers[i]
		if ds.Spec.Engine != engine || !ds.DeletionTimestamp.IsZero() ||
			!meta.IsStatusConditionTrue(ds.Status.Conditions, tenancyv1alpha1.ReadyCondition) {
			continue
		}
		n := tenants[ds.Name]
		if ds.Spec.MaxTenants != nil && n >= *ds.Spec.MaxTenants {
			continue
		}
		if !fits(ds, n) {
			continue
		}
		if bestCount < 0 || n < bestCount || (n == bestCount && ds.Name < best) {
			best, bestCount = ds.Name, n
		}
	}
	return best
}

// movingTo counts, by target server, the moves of tenants other than the one named that are
// headed there and not yet switched, from the cache; none when moves are not served.
func (r *Engine) movingTo(ctx context.Context, tenant string) (map[string]int32, error) {
	if !r.Moves {
		return nil, nil
	}
	list := &tenancyv1alpha1.DatabaseMoveList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string]int32{}
	for i := range list.Items {
		m := &list.Items[i]
		switch m.Status.Phase {
		case "", tenancyv1alpha1.MovePending, tenancyv1alpha1.MoveCopying, tenancyv1alpha1.MoveSwitching:
			// Once switched, the tenant's status names the server, which the index counts.
			if m.Spec.Tenant != tenant {
				out[m.Spec.Server]++
			}
		}
	}
	return out, nil
}

// countOthersOn counts the tenants other than the one named with databases on a server, from the
// cache index.
func countOthersOn(ctx context.Context, c client.Reader, server, tenant string) (int32, error) {
	list := &tenancyv1alpha1.TenantList{}
	if err := c.List(ctx, list, client.MatchingFields{indexes.TenantDatabaseServer: server}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	n := int32(0)
	for i := range list.Items {
		if list.Items[i].Name != tenant {
			n++
		}
	}
	return n, nil
}

// placements are the databases this process has placed on a server and the cache does not
// count yet. A server's tenants are counted from the cache's index of tenants' statuses, and a
// tenant's status is written only once its database exists, at the end of the reconcile that
// placed it: concurrent reconciles of new tenants would all see the same counts meanwhile, and
// a server with room for one more would take one per worker. Placing is done one at a time, and
// counts what this process placed that the cache does not show yet.
type placements struct {
	mu sync.Mutex
	// pending maps a tenant's name to the server each engine's database was placed on.
	pending map[string]map[tenancyv1alpha1.DatabaseEngine]string
}

// place chooses the least loaded of servers for t's database of engine (leastLoadedServer),
// counting each server's tenants from the cache plus what is pending there, and records the
// choice, under the lock: one placement at a time. A tenant that was placed before and does not
// show it yet is placed again without counting itself. "" when no server qualifies.
//
// moving counts, by server, the other tenants with a move under way to it: a move takes its
// place on its target before the tenant's status shows it there.
func (p *placements) place(ctx context.Context, c client.Reader, t *tenancyv1alpha1.Tenant, engine tenancyv1alpha1.DatabaseEngine, servers []tenancyv1alpha1.DatabaseServer, moving map[string]int32, fits serverFilter) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.forgetCounted(ctx, c); err != nil {
		return "", err
	}
	counts := map[string]int32{}
	for i := range servers {
		ds := &servers[i]
		if ds.Spec.Engine != engine {
			continue
		}
		n, err := countOthersOn(ctx, c, ds.Name, t.Name)
		if err != nil {
			return "", err
		}
		for name, engines := range p.pending {
			if name != t.Name && engines[engine] == ds.Name {
				n++
			}
		}
		n += moving[ds.Name]
		counts[ds.Name] = n
	}
	server := leastLoadedServer(engine, servers, counts, fits)
	if server == "" {
		return "", nil
	}
	if p.pending == nil {
		p.pending = map[string]map[tenancyv1alpha1.DatabaseEngine]string{}
	}
	if p.pending[t.Name] == nil {
		p.pending[t.Name] = map[tenancyv1alpha1.DatabaseEngine]string{}
	}
	p.pending[t.Name][engine] = server
	return server, nil
}

// forgetCounted drops the placements the cache now counts (the tenant's status names the
// server), those of tenants gone from it, and those of engines a tenant no longer asks a
// database of (whose placement then never shows, and would count on its server for good). One
// read of the cache per pending tenant: as many as were placed in the last moments.
func (p *placements) forgetCounted(ctx context.Context, c client.Reader) error {
	for name, engines := range p.pending {
		t := &tenancyv1alpha1.Tenant{}
		switch err := c.Get(ctx, client.ObjectKey{Name: name}, t, client.UnsafeDisableDeepCopy); {
		case apierrors.IsNotFound(err):
			delete(p.pending, name)
			continue
		case err != nil:
			return err
		}
		wanted := desiredDatabases(t)
		for engine, server := range engines {
			counted := slices.ContainsFunc(t.Status.Databases, func(d tenancyv1alpha1.DatabaseStatus) bool {
				return d.Engine == engine && d.Server == server
			})
			if counted || !slices.ContainsFunc(wanted, func(e dbEntry) bool { return e.engine == engine }) {
				delete(engines, engine)
			}
		}
		if len(engines) == 0 {
			delete(p.pending, name)
		}
	}
	return nil
}
