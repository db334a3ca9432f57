package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/landlord-dev/landlord/config/crd"
)

// shippedCRDs are this build's CRDs, as the CLI's kinds must know them.
func shippedCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := crd.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) < 6 {
		t.Fatalf("%d CRDs shipped, want Landlord's six", len(crds))
	}
	return crds
}

// Every Landlord kind answers to the names its CRD declares, as kubectl does: plural, singular,
// short names, the kind itself in any case, and each with the API group; and it has the CRD's
// scope. A kind added to the API fails here until the CLI knows it.
func TestKindsAnswerToTheNamesTheirCRDsDeclare(t *testing.T) {
	for _, c := range shippedCRDs(t) {
		n := c.Spec.Names
		t.Run(n.Kind+" is known by every name its CRD declares", func(t *testing.T) {
			words := append([]string{n.Plural, n.Singular, n.Kind, strings.ToUpper(n.Plural), n.Plural + "." + c.Spec.Group,
				n.Singular + ".v1alpha1." + c.Spec.Group}, n.ShortNames...)
			for _, w := range words {
				k, ok := kindByName(w)
				if !ok || k.kind != n.Kind {
					t.Errorf("%q names %v, want %s", w, k, n.Kind)
				}
			}
			k := kindOf(n.Kind)
			if k.namespaced != (c.Spec.Scope == apiextensionsv1.NamespaceScoped) {
				t.Errorf("namespaced = %t, the CRD's scope is %s", k.namespaced, c.Spec.Scope)
			}
			if !slices.Equal(k.shortNames, n.ShortNames) {
				t.Errorf("short names %v, the CRD's are %v", k.shortNames, n.ShortNames)
			}
		})
	}
}

// `get` shows each kind with its CRD's printer columns, in the same order and at the same
// priority (wide for priority 1), so `landlordctl get` reads like `kubectl get`; it may add
// columns of its own between them.
func TestGetTablesHaveTheColumnsOfTheCRDs(t *testing.T) {
	for _, c := range shippedCRDs(t) {
		t.Run(c.Spec.Names.Plural+" have their CRD's printer columns", func(t *testing.T) {
			table := kindOf(c.Spec.Names.Kind).table(kindOf(c.Spec.Names.Kind).newList())
			var ours []string
			priority := map[string]int32{}
			for _, col := range table.ColumnDefinitions {
				ours = append(ours, strings.ToLower(col.Name))
				priority[strings.ToLower(col.Name)] = col.Priority
			}
			next := 1 // after NAME, which kubectl adds
			for _, col := range c.Spec.Versions[0].AdditionalPrinterColumns {
				name := strings.ToLower(col.Name)
				i := slices.Index(ours[next:], name)
				if i < 0 {
					t.Errorf("column %s missing, or out of the CRD's order; columns %v", col.Name, ours)
					continue
				}
				next += i + 1
				if priority[name] != col.Priority {
					t.Errorf("column %s has priority %d, the CRD's %d", col.Name, priority[name], col.Priority)
				}
			}
		})
	}
}

func TestGetAndDescribeReadKindsAndNamesAsKubectlDoes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		kind  string
		names []string
		err   string
	}{
		{"a kind alone lists them all", []string{"tenants"}, "Tenant", nil, ""},
		{"a kind and names reads those", []string{"tnt", "acme", "globex"}, "Tenant", []string{"acme", "globex"}, ""},
		{"KIND/NAME reads one", []string{"pool/standard"}, "TenantPool", []string{"standard"}, ""},
		{"KIND/NAME may name the kind each way", []string{"componentrollouts.tenancy.landlord.dev/web-1", "cro/web-2"}, "ComponentRollout", []string{"web-1", "web-2"}, ""},
		{"the CLI's own words name claims", []string{"claims", "signup"}, "TenantClaim", []string{"signup"}, ""},
		{"a word that is no kind is refused", []string{"tenats"}, "", nil, `unknown kind "tenats"`},
		{"KIND/NAME of two kinds is refused", []string{"tenant/acme", "pool/standard"}, "", nil, "one kind at a time"},
		{"names after KIND/NAME are refused", []string{"tenants", "tenant/acme"}, "", nil, "not both"},
		{"KIND/ without a name is refused", []string{"tenant/"}, "", nil, "want KIND/NAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, names, err := kindAndNames(tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, new(usageError)) {
					t.Fatalf("err = %v, want a usage error saying %q", err, tc.err)
				}
				return
			}
			if err != nil || k.kind != tc.kind || !slices.Equal(names, tc.names) {
				t.Errorf("got %v %v %v, want %s %v", k, names, err, tc.kind, tc.names)
			}
		})
	}
}
