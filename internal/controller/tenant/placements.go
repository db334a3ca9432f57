package tenant

import (
	"context"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

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
func (p *placements) place(ctx context.Context, c client.Reader, t *tenancyv1alpha1.Tenant, engine tenancyv1alpha1.DatabaseEngine, servers []tenancyv1alpha1.DatabaseServer) (string, error) {
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
		n, err := countTenantsOn(ctx, c, ds.Name)
		if err != nil {
			return "", err
		}
		for name, engines := range p.pending {
			if name != t.Name && engines[engine] == ds.Name {
				n++
			}
		}
		counts[ds.Name] = n
	}
	server := leastLoadedServer(engine, servers, counts)
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
