// Package domains decides which tenant holds each domain (the one serving it, then the one
// created first) and hands a domain over: the other tenants' Ingresses and routes naming it are
// deleted before the new holder's namespace admits it. The tenant reconciler's namespace phase
// calls it.
package domains

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/net/publicsuffix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/config"
	"github.com/landlord-dev/landlord/internal/controller/indexes"
	"github.com/landlord-dev/landlord/internal/shard"
)

// Engine is what deciding and handing over domains needs of the operator.
type Engine struct {
	// Client reads through the cache and writes; APIReader reads what the cache does not hold
	// (another shard's tenants' namespaces, other tenants' Ingresses and routes).
	Client    client.Client
	APIReader client.Reader
	Config    *config.Config
	Recorder  events.EventRecorder
	// Shard is the operator's shard ("" for the default one).
	Shard string
}

// createdBefore orders tenants by creation, then by name.
func createdBefore(a, b *tenancyv1alpha1.Tenant) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// overlap reports whether two domains can name the same host: equal, or one a wildcard over the
// other.
func overlap(a, b string) bool {
	return a == b || indexes.CoveringWildcard(a) == b || indexes.CoveringWildcard(b) == a
}

// serves reports whether the tenant's namespace admits Ingresses for a domain overlapping d
// (its domains annotation, which the admission policies read).
func (r *Engine) serves(ctx context.Context, t *tenancyv1alpha1.Tenant, d string) (bool, error) {
	ns := &corev1.Namespace{}
	// The namespace of another shard's tenant (or of one being handed over) is not in this
	// shard's cache: taking it for absent would hand a domain that tenant serves to an older
	// tenant listing it later.
	var reader client.Reader = r.Client
	if shard.StepFor(r.Shard, t) != shard.Reconcile {
		reader = r.APIReader
	}
	if err := reader.Get(ctx, client.ObjectKey{Name: r.Config.NamespaceName(t.Name)}, ns); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	for _, have := range strings.Split(ns.Annotations[tenancyv1alpha1.DomainsAnnotation], ",") {
		if have != "" && overlap(have, d) {
			return true, nil
		}
	}
	return false, nil
}

// holdsBefore reports whether other holds d ahead of t, given whether t serves it. The tenant
// already serving it holds it: a domain is never taken from the tenant serving it by one that
// lists it later, whatever their ages. Between tenants neither (or both, from before domains were
// unique) serving it, the one created first holds it. A tenant holds a domain for as long as it
// lists it, whatever its state, so an Archived tenant comes back to the domains it left with.
func (r *Engine) holdsBefore(ctx context.Context, other, t *tenancyv1alpha1.Tenant, selfServes bool, d string) (bool, error) {
	otherServes, err := r.serves(ctx, other, d)
	if err != nil || otherServes != selfServes {
		return otherServes, err
	}
	return createdBefore(other, t), nil
}

// Check returns the domains the tenant holds; why it may not serve the others, or "": a
// wildcard over a public suffix (*.co.uk would take traffic for every company under it), a name
// under the base domain that is another tenant's, or a domain (or wildcard) another tenant
// holds; and what a domain it takes over from another tenant still waits for, or "" (handOver).
func (r *Engine) Check(ctx context.Context, t *tenancyv1alpha1.Tenant) (held []tenancyv1alpha1.Domain, problem, waiting string, err error) {
	var problems, waits []string
	held = make([]tenancyv1alpha1.Domain, 0, len(t.Spec.Domains))
	for _, dom := range t.Spec.Domains {
		d := string(dom)
		if problem := domainShape(d, t.Name, r.Config); problem != "" {
			problems = append(problems, problem)
			continue
		}
		holders, serving, err := r.domainHolders(ctx, t, d)
		if err != nil {
			return nil, "", "", err
		}
		if len(holders) > 0 {
			problems = append(problems, fmt.Sprintf("%s is held by tenant %s", d, strings.Join(holders, ", ")))
			continue
		}
		if !serving {
			// Taken now: whatever another tenant still has for it goes first.
			wait, err := r.handOver(ctx, t, d)
			if err != nil {
				return nil, "", "", err
			}
			if wait != "" {
				waits = append(waits, wait)
				continue
			}
		}
		held = append(held, dom)
	}
	waiting = strings.Join(waits, "; ")
	if len(problems) == 0 {
		return held, "", waiting, nil
	}
	return held, strings.Join(problems, "; ") + ": remove it from spec.domains, or release it from the tenant holding it first", waiting, nil
}

// domainShape refuses what no tenant may serve, whoever else lists it.
func domainShape(d, tenant string, cfg *config.Config) string {
	if rest, ok := strings.CutPrefix(d, "*."); ok {
		if suffix, _ := publicsuffix.PublicSuffix(rest); suffix == rest {
			return fmt.Sprintf("%s is a wildcard over the public suffix %s", d, rest)
		}
	}
	if base := cfg.Isolation.BaseDomain; base != "" && (d == base || strings.HasSuffix(d, "."+base)) {
		own := cfg.DefaultDomain(tenant)
		if d != own && !strings.HasSuffix(d, "."+own) {
			return fmt.Sprintf("%s is under the base domain %s, where a tenant serves only its own %s", d, base, own)
		}
	}
	return ""
}

// overlapping calls visit with every tenant that lists d, a wildcard over d, or (for a wildcard
// d) a name under it; a tenant may be visited more than once. Reads are from the cache, shared:
// visit must not change the tenant.
func (r *Engine) overlapping(ctx context.Context, d string, visit func(*tenancyv1alpha1.Tenant)) error {
	for _, key := range indexes.OverlapKeys(d) {
		list := &tenancyv1alpha1.TenantList{}
		if err := r.Client.List(ctx, list, client.MatchingFields{indexes.TenantDomain: key}, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		for i := range list.Items {
			visit(&list.Items[i])
		}
	}
	return nil
}

// domainHolders lists the tenants that hold d, or a wildcard over it, or (for a wildcard) a
// name under it, before t; and whether t's namespace admits d already.
func (r *Engine) domainHolders(ctx context.Context, t *tenancyv1alpha1.Tenant, d string) ([]string, bool, error) {
	selfServes, err := r.serves(ctx, t, d)
	if err != nil {
		return nil, false, err
	}
	seen := map[string]bool{}
	var errs []error
	err = r.overlapping(ctx, d, func(other *tenancyv1alpha1.Tenant) {
		if other.UID == t.UID || seen[other.Name] {
			return
		}
		holds, err := r.holdsBefore(ctx, other, t, selfServes, d)
		errs = append(errs, err)
		seen[other.Name] = holds
	})
	if err = errors.Join(append(errs, err)...); err != nil {
		return nil, false, err
	}
	holders := make([]string, 0, len(seen))
	for name, holds := range seen {
		if holds {
			holders = append(holders, name)
		}
	}
	sort.Strings(holders)
	return holders, selfServes, err
}

// TenantsSharing maps a tenant to the others that list one of its domains (or a wildcard
// over one, or a name under one): when it gives a domain up, or goes, the next in line takes it.
// It is called with the old and the new tenant of an update, so a removed domain is seen.
func (r *Engine) TenantsSharing(ctx context.Context, obj client.Object) []reconcile.Request {
	t, ok := obj.(*tenancyv1alpha1.Tenant)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var requests []reconcile.Request
	for _, d := range t.Spec.Domains {
		_ = r.overlapping(ctx, string(d), func(other *tenancyv1alpha1.Tenant) {
			if other.Name != t.Name && !seen[other.Name] {
				seen[other.Name] = true
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{Name: other.Name}})
			}
		})
	}
	return requests
}
