package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// enterpriseClass is a class of dedicated nodes and servers, whose tenants may set their quota.
func enterpriseClass() *tenancyv1alpha1.TenantClass {
	return &tenancyv1alpha1.TenantClass{
		ObjectMeta: metav1.ObjectMeta{Name: "enterprise"},
		Spec: tenancyv1alpha1.TenantClassSpec{
			Description: "Own nodes, own database server.",
			Quota:       corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("12"), corev1.ResourceMemory: resource.MustParse("48Gi")},
			NodePool:    &tenancyv1alpha1.ClassNodePool{Dedicated: true},
			Databases: &tenancyv1alpha1.ClassDatabases{Dedicated: true,
				ServerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "enterprise"}}},
			CostCode:  "ent",
			Overrides: []tenancyv1alpha1.ClassField{tenancyv1alpha1.ClassFieldQuota},
		},
	}
}

func TestSetClassSetsTheClassOfATenantOnlyToAClassThatExists(t *testing.T) {
	for _, tc := range []struct {
		name, tenant, class string
		wantClass, err      string
	}{
		{name: "an existing class is set", tenant: "acme", class: "enterprise", wantClass: "enterprise"},
		{name: "a class that does not exist is said so, and the tenant keeps its class",
			tenant: "acme", class: "platinum", wantClass: "standard", err: `class "platinum" not found`},
		{name: "a tenant that does not exist is said so", tenant: "globex", class: "enterprise", wantClass: "standard", err: `tenant "globex" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(
				&tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: tenancyv1alpha1.TenantSpec{Class: "standard"}},
				enterpriseClass(),
			).Build()
			var out bytes.Buffer
			err := runSetClass(context.Background(), c, tc.tenant, tc.class, &out)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if got := out.String(); got != "tenant/acme class set to enterprise\n" {
				t.Errorf("output %q", got)
			}
			acme := &tenancyv1alpha1.Tenant{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: "acme"}, acme); err != nil {
				t.Fatal(err)
			}
			if acme.Spec.Class != tc.wantClass {
				t.Errorf("acme's class is %q, want %q", acme.Spec.Class, tc.wantClass)
			}
		})
	}
}

func TestDescribeClassSaysWhatTheTierGivesAndWhoIsOnIt(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(
		&tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: tenancyv1alpha1.TenantSpec{Class: "enterprise"}},
		&tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "globex"}, Spec: tenancyv1alpha1.TenantSpec{Class: "standard"}},
	).Build()
	var out bytes.Buffer
	d := newDescriber(&out)
	d.ctx, d.reader = context.Background(), c
	describeClass(d, enterpriseClass())
	if err := d.flush(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Node pool:", "dedicated (one per tenant: dedicated-<tenant>)",
		"Databases:", "dedicated, servers tier=enterprise",
		"Quota:", "cpu=12,memory=48Gi",
		"Cost code:", "ent",
		"Tenants may set:", "quota",
		"Tenants (1):", "acme",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the description lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "globex") {
		t.Errorf("the description lists a tenant of another class:\n%s", got)
	}
}

func TestGetClassesShowsEachTiersPoolDatabasesAndQuota(t *testing.T) {
	table := classTable([]tenancyv1alpha1.TenantClass{*enterpriseClass()})
	if len(table.Rows) != 1 {
		t.Fatalf("rows %v", table.Rows)
	}
	row := table.Rows[0].Cells
	want := []any{"enterprise", "dedicated (one per tenant: dedicated-<tenant>)", "dedicated, servers tier=enterprise", "cpu=12,memory=48Gi", "ent"}
	for i, w := range want {
		if row[i] != w {
			t.Errorf("column %s is %v, want %v", table.ColumnDefinitions[i].Name, row[i], w)
		}
	}
}
