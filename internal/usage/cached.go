package usage

import (
	"encoding/json"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/apply"
)

// CachedAnnotation is set in the operator's cache, never on the server, on a Tenant whose
// status.usage the cache keeps as this JSON in place of the typed struct: a sample of a dozen
// quantities is about 2.4 KB decoded and a few hundred bytes as JSON, and only the sampler and
// a status write read it. It is trusted only on an object the cache shaped
// (apply.ShapedByCache): one set on the server is never the cache's.
const CachedAnnotation = "tenancy.landlord.dev/cached-usage"

// Compact moves t's status.usage into CachedAnnotation, for the operator's cache transform. A
// value the server holds in the annotation is dropped first: only the cache sets it.
func Compact(t *tenancyv1alpha1.Tenant) error {
	delete(t.Annotations, CachedAnnotation)
	if t.Status.Usage == nil {
		return nil
	}
	raw, err := json.Marshal(t.Status.Usage)
	if err != nil {
		return err
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[CachedAnnotation] = string(raw)
	t.Status.Usage = nil
	return nil
}

// Of is t's status.usage, whether t came from the API server or from the cache (Compact),
// without changing t: what the sampler reads the cache's tenants with.
func Of(t *tenancyv1alpha1.Tenant) *tenancyv1alpha1.TenantUsage {
	if t.Status.Usage != nil {
		return t.Status.Usage
	}
	raw, ok := t.Annotations[CachedAnnotation]
	if !ok || !apply.ShapedByCache(t) {
		return nil
	}
	return (&Record{raw: raw}).Usage()
}

// Record is a Tenant's status.usage as a copy of a cached Tenant held it: taken off the copy by
// Take, and decoded only when asked for, so that a reconcile that writes no usage (nearly all
// of them) decodes nothing.
type Record struct {
	raw     string
	decoded *tenancyv1alpha1.TenantUsage
	done    bool
}

// Take takes the cache's record off t, a copy of a cached Tenant about to be reconciled, so that
// t's metadata is the server's: nothing written or fingerprinted carries the record. t's
// status.usage stays as it was: nil from the cache, whole in an API server's answer.
func Take(t *tenancyv1alpha1.Tenant) *Record {
	r := &Record{decoded: t.Status.Usage, done: true}
	raw, ok := t.Annotations[CachedAnnotation]
	if !ok {
		return r
	}
	if t.Status.Usage == nil && apply.ShapedByCache(t) {
		// The cache's copy: its usage is the record, decoded when asked for.
		r.raw, r.done = raw, false
	}
	delete(t.Annotations, CachedAnnotation)
	if len(t.Annotations) == 0 {
		t.Annotations = nil
	}
	return r
}

// Usage is the status.usage the record holds, decoded once.
func (r *Record) Usage() *tenancyv1alpha1.TenantUsage {
	if !r.done {
		r.done = true
		u := &tenancyv1alpha1.TenantUsage{}
		// Only the cache writes it, from a value the server decoded: an error is unreachable,
		// and taken as no usage (the next sample writes it again).
		if err := json.Unmarshal([]byte(r.raw), u); err == nil {
			r.decoded = u
		}
	}
	return r.decoded
}
