// Package tenantclass says what a Tenant is under its TenantClass: the fields the class lets it
// set, and the spec it converges to, the class's fields filled in beneath the tenant's own. The
// functions are pure: the tenant reconciler reads the class from its cache and calls them; the
// admission policy that refuses an override (internal/policy) states the same rules in CEL.
package tenantclass

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/resources"
)

// RefusedError is a field a tenant sets that its class does not let it set.
type RefusedError struct {
	Class string
	// Path is the field, as a person finds it in the Tenant (spec.quota,
	// spec.components[name=billing]).
	Path string
	// Why completes "class X does not let its tenants ...".
	Why string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s: TenantClass %s does not let its tenants %s", e.Path, e.Class, e.Why)
}

// Check is nil when t sets only what class c lets it, or the first field it should not set, in
// the order of the spec.
func Check(t *tenancyv1alpha1.Tenant, c *tenancyv1alpha1.TenantClass) error {
	allowed := func(f tenancyv1alpha1.ClassField) bool { return slices.Contains(c.Spec.Overrides, f) }
	set := []struct {
		field tenancyv1alpha1.ClassField
		path  string
		isSet bool
	}{
		{tenancyv1alpha1.ClassFieldQuota, "spec.quota", len(t.Spec.Quota) > 0},
		{tenancyv1alpha1.ClassFieldLimits, "spec.limits", t.Spec.Limits != nil},
		{tenancyv1alpha1.ClassFieldPodSecurity, "spec.podSecurity", t.Spec.PodSecurity != ""},
		{tenancyv1alpha1.ClassFieldNodePool, "spec.nodePool", t.Spec.NodePool != ""},
		{tenancyv1alpha1.ClassFieldCostCode, "spec.costCode", t.Spec.CostCode != ""},
		{tenancyv1alpha1.ClassFieldMaintenanceWindows, "spec.maintenanceWindows", len(t.Spec.MaintenanceWindows) > 0},
	}
	for _, f := range set {
		if f.isSet && !allowed(f.field) {
			return &RefusedError{Class: c.Name, Path: f.path, Why: "set " + string(f.field) + " (spec.overrides)"}
		}
	}
	if !allowed(tenancyv1alpha1.ClassFieldDatabaseServers) {
		for _, e := range []struct {
			engine string
			dbs    []tenancyv1alpha1.Database
		}{{"postgres", t.Spec.Databases.Postgres}, {"mysql", t.Spec.Databases.MySQL}} {
			engine := e.engine
			for _, d := range e.dbs {
				if d.Server != "" {
					return &RefusedError{Class: c.Name, Path: fmt.Sprintf("spec.databases.%s[name=%s].server", engine, d.Name),
						Why: "choose their database servers (spec.overrides: databaseServers)"}
				}
			}
		}
	}
	if c.Spec.Components != nil && len(c.Spec.Components.Allowed) > 0 {
		for _, comp := range t.Spec.Components {
			if !slices.Contains(c.Spec.Components.Allowed, comp.Name) {
				return &RefusedError{Class: c.Name, Path: fmt.Sprintf("spec.components[name=%s]", comp.Name),
					Why: "run component " + comp.Name + " (spec.components.allowed: " + strings.Join(c.Spec.Components.Allowed, ", ") + ")"}
			}
		}
	}
	return nil
}

// Apply is the tenant as its class makes it: a copy of t whose spec has the class's quota,
// limits, pod security level, node pool, maintenance windows, cost code and component values,
// each beneath what t sets itself. t is not changed. Apply does not check t (see Check): what t
// sets wins.
func Apply(t *tenancyv1alpha1.Tenant, c *tenancyv1alpha1.TenantClass) *tenancyv1alpha1.Tenant {
	out := t.DeepCopy()
	s, cs := &out.Spec, &c.Spec
	if len(cs.Quota) > 0 {
		// A class's cpu and a tenant's requests.cpu are one limit: the tenant's wins.
		s.Quota = resources.MergeResources(resources.NormalizeQuota(cs.Quota), resources.NormalizeQuota(s.Quota))
	}
	if cs.Limits != nil {
		l := cs.Limits.DeepCopy()
		if s.Limits != nil {
			l.Default = resources.MergeResources(l.Default, s.Limits.Default)
			l.DefaultRequest = resources.MergeResources(l.DefaultRequest, s.Limits.DefaultRequest)
			l.Max = resources.MergeResources(l.Max, s.Limits.Max)
		}
		s.Limits = l
	}
	if s.PodSecurity == "" {
		s.PodSecurity = cs.PodSecurity
	}
	if s.NodePool == "" {
		s.NodePool = NodePool(t, c)
	}
	if s.CostCode == "" {
		s.CostCode = cs.CostCode
	}
	if len(s.MaintenanceWindows) == 0 && len(cs.MaintenanceWindows) > 0 {
		s.MaintenanceWindows = slices.Clone(cs.MaintenanceWindows)
	}
	if cs.Components != nil {
		for i := range s.Components {
			comp := &s.Components[i]
			if base, ok := cs.Components.Values[comp.Name]; ok {
				comp.Values = mergeValues(&base, comp.Values)
			}
		}
	}
	return out
}

// DedicatedPoolPrefix begins the name of every dedicated node pool: dedicated-<tenant>. A
// shared pool named so would be taken for a tenant's own; the API refuses such names in a class.
const DedicatedPoolPrefix = "dedicated-"

// NodePool is the node pool class c gives tenant t: its shared pool, the tenant's own
// (dedicated-<tenant>) when dedicated, or "" (none).
func NodePool(t *tenancyv1alpha1.Tenant, c *tenancyv1alpha1.TenantClass) string {
	switch p := c.Spec.NodePool; {
	case p == nil:
		return ""
	case p.Dedicated:
		return DedicatedPoolPrefix + t.Name
	default:
		return p.Name
	}
}

// mergeValues is a component's values: the tenant's over the class's, objects merged key by key
// (as a JSON merge patch, except that null is a value, not a removal), anything else replaced.
// Values that do not decode (the API server stores valid JSON only) leave the tenant's as they
// are.
func mergeValues(base, over *apiextensionsv1.JSON) *apiextensionsv1.JSON {
	if over == nil || len(over.Raw) == 0 {
		return base.DeepCopy()
	}
	b, errB := decodeNumbers(base.Raw)
	o, errO := decodeNumbers(over.Raw)
	if errB != nil || errO != nil {
		return over
	}
	raw, err := json.Marshal(merge(b, o))
	if err != nil {
		return over
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

// decodeNumbers decodes JSON keeping numbers as written: an integer beyond 2^53 is not rounded
// through a float.
func decodeNumbers(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	return v, d.Decode(&v)
}

func merge(base, over any) any {
	bm, ok1 := base.(map[string]any)
	om, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		return over
	}
	out := maps.Clone(bm)
	for k, v := range om {
		out[k] = merge(bm[k], v)
	}
	return out
}

// Revision is the digest that names a class's spec, its updates and description left out
// (changing how a change reaches tenants, or the words about the tier, is no change of it).
func Revision(spec tenancyv1alpha1.TenantClassSpec) string {
	spec.Updates, spec.Description = nil, ""
	raw, err := json.Marshal(spec)
	if err != nil {
		// A spec the API server stored always encodes.
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:5])
}

// Released tells whether a tenant is among the share of a class's tenants (percent, 0 to 100)
// that a rollout has released: by a hash of its name, so each tenant's turn is fixed and a
// larger share keeps the tenants of a smaller one.
func Released(tenant string, percent int32) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	return int32(h.Sum32()%100) < percent
}

// Choose is the revision of class c that tenant t converges to, and the class's spec at it; ok
// is false while it cannot be told (the class's status has not caught up with a change, and the
// tenant was at no revision the status keeps): the tenant waits, since guessing could move it
// where the change's strategy says not to.
//
// A tenant new to the class, or at the current revision, or at one the status no longer keeps,
// converges to the current revision. One at an earlier revision stays there unless the current
// revision's rollout releases it: Immediate releases every tenant, NewTenants none, Waves those
// Released at its share.
func Choose(t *tenancyv1alpha1.Tenant, c *tenancyv1alpha1.TenantClass) (revision string, spec *tenancyv1alpha1.TenantClassSpec, ok bool) {
	s := &c.Status
	recorded := ""
	if ref := t.Status.Class; ref != nil && ref.Name == c.Name {
		recorded = ref.Revision
	}
	kept := func(name string) *tenancyv1alpha1.TenantClassSpec {
		for i := range s.Revisions {
			if s.Revisions[i].Name == name {
				return &s.Revisions[i].Spec
			}
		}
		return nil
	}
	if s.Revision == "" || s.ObservedGeneration != c.Generation || kept(s.Revision) == nil {
		if old := kept(recorded); recorded != "" && old != nil {
			return recorded, old, true
		}
		return "", nil, false
	}
	current := kept(s.Revision)
	old := kept(recorded)
	if recorded == "" || recorded == s.Revision || old == nil {
		return s.Revision, current, true
	}
	ro := s.Rollout
	switch {
	case ro == nil || ro.Revision != s.Revision || ro.Strategy == tenancyv1alpha1.ClassUpdateImmediate:
		return s.Revision, current, true
	case ro.Strategy == tenancyv1alpha1.ClassUpdateWaves && Released(t.Name, ro.ReleasedPercent):
		return s.Revision, current, true
	}
	return recorded, old, true
}
