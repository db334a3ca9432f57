package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/landlord-dev/landlord/internal/apply"
)

// The comparisons `check` makes between what a cluster has and what this build makes: by
// meaning, not by bytes, so that what the API server fills in by default or the order of a
// role's rules is no difference.

// rbacClusterRole is an installed ClusterRole, compared by the permissions it grants.
type rbacClusterRole struct {
	rbacv1.ClusterRole
}

// differences says which permissions the installed role grants beyond want's and which of want's
// it lacks, each permission one verb on one resource (or URL): rules split, merged or reordered
// grant the same.
func (r *rbacClusterRole) differences(want *rbacv1.ClusterRole) []string {
	have, wanted := grants(r.Rules), grants(want.Rules)
	var extra, lacking []string
	for g := range have {
		if !wanted[g] {
			extra = append(extra, g)
		}
	}
	for g := range wanted {
		if !have[g] {
			lacking = append(lacking, g)
		}
	}
	slices.Sort(extra)
	slices.Sort(lacking)
	var diffs []string
	if len(extra) > 0 {
		diffs = append(diffs, "it grants "+brief(extra)+", which this build's does not")
	}
	if len(lacking) > 0 {
		diffs = append(diffs, "it lacks "+brief(lacking))
	}
	if r.AggregationRule != nil {
		diffs = append(diffs, "it aggregates other ClusterRoles (aggregationRule), which this build's does not")
	}
	return diffs
}

// grants are a role's rules as single permissions: "get secrets", "delete apps/deployments
// named web", "get URL /healthz".
func grants(rules []rbacv1.PolicyRule) map[string]bool {
	out := map[string]bool{}
	for _, r := range rules {
		for _, verb := range r.Verbs {
			for _, url := range r.NonResourceURLs {
				out[verb+" URL "+url] = true
			}
			for _, group := range r.APIGroups {
				for _, resource := range r.Resources {
					what := verb + " " + resource
					if group != "" {
						what = verb + " " + group + "/" + resource
					}
					if len(r.ResourceNames) == 0 {
						out[what] = true
					}
					for _, name := range r.ResourceNames {
						out[what+" named "+name] = true
					}
				}
			}
		}
	}
	return out
}

// differences appends to diffs how live differs from want under path: a field want sets that
// live lacks or holds another value in, and a field live adds, unless it is one the API server
// sets by default. Lists are compared element by element, as the admission types treat them.
func differences(path string, live, want any, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		l, _ := live.(map[string]any)
		for _, k := range sortedKeys(w) {
			lv, ok := l[k]
			if !ok {
				if !apply.IsEmpty(w[k]) {
					*diffs = append(*diffs, fmt.Sprintf("%s.%s is missing (this build sets %s)", path, k, shortJSON(w[k])))
				}
				continue
			}
			differences(path+"."+k, lv, w[k], diffs)
		}
		for _, k := range sortedKeys(l) {
			if _, ok := w[k]; !ok && !serverDefault(k, l[k]) {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s was added: %s", path, k, shortJSON(l[k])))
			}
		}
	case []any:
		l, _ := live.([]any)
		if named(w) && named(l) {
			namedDifferences(path, l, w, diffs)
			return
		}
		scalars := !slices.ContainsFunc(w, func(v any) bool { _, ok := v.(map[string]any); return ok })
		if len(l) != len(w) || scalars {
			if !reflect.DeepEqual(l, w) {
				*diffs = append(*diffs, fmt.Sprintf("%s is %s, this build makes %s", path, shortJSON(live), shortJSON(want)))
			}
			return
		}
		for i := range w {
			differences(fmt.Sprintf("%s[%d]", path, i), l[i], w[i], diffs)
		}
	default:
		if reflect.DeepEqual(live, want) || (live == nil && apply.IsEmpty(want)) {
			return
		}
		ls, lok := live.(string)
		ws, wok := want.(string)
		if lok && wok && (len(ls) > 60 || len(ws) > 60) {
			*diffs = append(*diffs, fmt.Sprintf("%s differs from this build's from character %d: %q, this build makes %q", path, commonPrefix(ls, ws)+1, around(ls, ws), around(ws, ls)))
			return
		}
		*diffs = append(*diffs, fmt.Sprintf("%s is %s, this build makes %s", path, shortJSON(live), shortJSON(want)))
	}
}

// named is whether every element of a list is an object with a name (matchConditions,
// validations' variables, ...): such lists are compared by name.
func named(list []any) bool {
	for _, v := range list {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m["name"].(string); !ok {
			return false
		}
	}
	return len(list) > 0
}

func namedDifferences(path string, live, want []any, diffs *[]string) {
	byName := func(list []any) (map[string]any, []string) {
		m := map[string]any{}
		var names []string
		for _, v := range list {
			n := v.(map[string]any)["name"].(string)
			m[n] = v
			names = append(names, n)
		}
		return m, names
	}
	l, lnames := byName(live)
	w, wnames := byName(want)
	for _, n := range wnames {
		if _, ok := l[n]; !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s lacks %q", path, n))
		}
	}
	for _, n := range lnames {
		if _, ok := w[n]; !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s has %q, which this build does not make: %s", path, n, shortJSON(l[n])))
		}
	}
	for _, n := range wnames {
		if lv, ok := l[n]; ok {
			differences(fmt.Sprintf("%s[%s]", path, n), lv, w[n], diffs)
		}
	}
	if slices.Equal(sortedCopy(lnames), sortedCopy(wnames)) && !slices.Equal(lnames, wnames) {
		*diffs = append(*diffs, fmt.Sprintf("%s is in another order than this build's (%s)", path, strings.Join(wnames, ", ")))
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// around is a's text where it starts to differ from b, with a little before.
func around(a, b string) string {
	start := max(commonPrefix(a, b)-20, 0)
	end := min(start+80, len(a))
	out := a[start:end]
	if start > 0 {
		out = "..." + out
	}
	if end < len(a) {
		out += "..."
	}
	return out
}

// serverDefaults are the values the API server fills in, in admission policies and their
// bindings, where Landlord sets nothing.
var serverDefaults = map[string]any{
	"matchPolicy":        "Equivalent",
	"scope":              "*",
	"reinvocationPolicy": "Never",
	"failurePolicy":      "Fail",
}

func serverDefault(key string, value any) bool {
	if apply.IsEmpty(value) {
		return true
	}
	d, ok := serverDefaults[key]
	return ok && reflect.DeepEqual(d, value)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// shortJSON is a value as JSON, cut to a line.
func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const most = 120
	if s := string(b); len(s) > most {
		return s[:most] + "..."
	}
	return strings.TrimSpace(string(b))
}

// sameJSON is whether a and b are the same once written as JSON and read back: raw JSON values
// (a schema's defaults) compare by meaning, not by their bytes.
func sameJSON(a, b any) bool {
	var x, y any
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil || json.Unmarshal(ab, &x) != nil || json.Unmarshal(bb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
