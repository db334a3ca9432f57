package integration

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Invalid tenants are rejected by the API server itself (OpenAPI and CEL rules in the CRD),
// with a message that names the field, before the operator ever sees them.
func TestInvalidTenantsAreRejectedAtAdmission(t *testing.T) {
	cases := map[string]struct {
		tenant *tenancyv1alpha1.Tenant
		want   []string
	}{
		"a name that is not a DNS label": {
			tenant: newTenant("acme.example"),
			want:   []string{"metadata.name must be a DNS label"},
		},
		"a name too long for the namespace prefix": {
			tenant: newTenant(strings.Repeat("a", 51)),
			want:   []string{"metadata.name must be a DNS label of at most 50 characters"},
		},
		"an email address without a domain": {
			tenant: newTenant("bad-email", func(t *tenancyv1alpha1.Tenant) { t.Spec.Email = "ops" }),
			want:   []string{"spec.email", "must be an email address"},
		},
		"an unknown state": {
			tenant: newTenant("bad-state", func(t *tenancyv1alpha1.Tenant) { t.Spec.State = "Deleted" }),
			want:   []string{"spec.state", "Unsupported value"},
		},
		"Purged without confirmation": {
			tenant: newTenant("unconfirmed", func(t *tenancyv1alpha1.Tenant) { t.Spec.State = tenancyv1alpha1.StatePurged }),
			want:   []string{"spec.purgeConfirmation", "must equal the tenant's name"},
		},
		"Purged with another tenant's name as confirmation": {
			tenant: newTenant("misconfirmed", func(t *tenancyv1alpha1.Tenant) {
				t.Spec.State = tenancyv1alpha1.StatePurged
				t.Spec.PurgeConfirmation = "someone-else"
			}),
			want: []string{"spec.purgeConfirmation"},
		},
		"a domain with an underscore": {
			tenant: newTenant("bad-domain", func(t *tenancyv1alpha1.Tenant) {
				t.Spec.Domains = []tenancyv1alpha1.Domain{"ok.example.com", "bad_name.example.com"}
			}),
			want: []string{"spec.domains[1]", "must be a lowercase DNS name"},
		},
		"a node pool that is not a DNS label": {
			tenant: newTenant("bad-pool", func(t *tenancyv1alpha1.Tenant) { t.Spec.NodePool = "Pool A" }),
			want:   []string{"spec.nodePool", "must be a DNS label"},
		},
		"a service account subject without a namespace": {
			tenant: newTenant("bad-subject", func(t *tenancyv1alpha1.Tenant) {
				t.Spec.Access.Admins = []tenancyv1alpha1.Subject{{Kind: "ServiceAccount", Name: "ci"}}
			}),
			want: []string{"spec.access.admins[0]", "namespace is required for a ServiceAccount"},
		},
		"a database name with an underscore": {
			tenant: newTenant("bad-db-name", func(t *tenancyv1alpha1.Tenant) {
				t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "my_db"}}
			}),
			want: []string{"spec.databases.postgres[0].name", "must be a DNS label"},
		},
		"a database name longer than 30 characters": {
			tenant: newTenant("long-db-name", func(t *tenancyv1alpha1.Tenant) {
				t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: strings.Repeat("d", 31)}}
			}),
			want: []string{"spec.databases.mysql[0].name", "may not be more than 30"},
		},
		"one database name for two engines": {
			tenant: newTenant("twin-db", func(t *tenancyv1alpha1.Tenant) {
				t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app"}}
				t.Spec.Databases.MySQL = []tenancyv1alpha1.Database{{Name: "app"}}
			}),
			want: []string{"spec.databases", "may be used by only one engine"},
		},
		"a pgbouncer pool of zero": {
			tenant: newTenant("zero-pool", func(t *tenancyv1alpha1.Tenant) {
				t.Spec.PgBouncer = &tenancyv1alpha1.PgBouncer{DefaultPoolSize: -1}
			}),
			want: []string{"spec.pgbouncer.defaultPoolSize", "greater than or equal to 1"},
		},
		// Organization and email reach templates, where a line break adds fields.
		"an organization with a newline": {
			tenant: newTenant("org-newline", func(t *tenancyv1alpha1.Tenant) { t.Spec.Organization = "Acme\nkind: Role" }),
			want:   []string{"spec.organization", "organization must not contain control characters or line breaks"},
		},
		"an organization with a tab": {
			tenant: newTenant("org-tab", func(t *tenancyv1alpha1.Tenant) { t.Spec.Organization = "Acme\tInc" }),
			want:   []string{"spec.organization", "organization must not contain control characters"},
		},
		"an organization with DEL": {
			tenant: newTenant("org-del", func(t *tenancyv1alpha1.Tenant) { t.Spec.Organization = "Acme\x7f" }),
			want:   []string{"spec.organization", "organization must not contain control characters"},
		},
		"an organization with a Unicode line separator, a line break to YAML": {
			tenant: newTenant("org-lsep", func(t *tenancyv1alpha1.Tenant) { t.Spec.Organization = "Acme\u2028kind: Role" }),
			want:   []string{"spec.organization", "organization must not contain control characters or line breaks"},
		},
		"an email with a newline after a valid address": {
			tenant: newTenant("email-newline", func(t *tenancyv1alpha1.Tenant) { t.Spec.Email = "ops@example.com\nkind: Role" }),
			want:   []string{"spec.email", "email must not contain control characters or line breaks"},
		},
		"an email with a carriage return": {
			tenant: newTenant("email-cr", func(t *tenancyv1alpha1.Tenant) { t.Spec.Email = "ops@example.com\r" }),
			want:   []string{"spec.email", "email must not contain control characters"},
		},
		"an unknown pod security level": {
			tenant: newTenant("bad-psa", func(t *tenancyv1alpha1.Tenant) { t.Spec.PodSecurity = "privileged" }),
			want:   []string{"spec.podSecurity", "Unsupported value"},
		},
	}
	for name, tc := range cases {
		t.Run(name+" is rejected", func(t *testing.T) {
			g := NewWithT(t)
			err := k8s.Create(context.Background(), tc.tenant)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

// An organization may be any printable name, in any script.
func TestPrintableOrganizationsAreAccepted(t *testing.T) {
	for name, org := range map[string]string{
		"punctuation": `Kolide, Inc. ("K" & co.) #1: 'quoted'`,
		"non-ASCII":   "Müller & Söhne GmbH – 東京",
	} {
		t.Run("an organization with "+name+" is accepted", func(t *testing.T) {
			tenant := newTenant("org-"+strings.ToLower(strings.ReplaceAll(name, "-", "")), func(t *tenancyv1alpha1.Tenant) {
				t.Spec.State = tenancyv1alpha1.StateArchived
				t.Spec.Organization = org
			})
			NewWithT(t).Expect(k8s.Create(context.Background(), tenant)).To(Succeed())
			t.Cleanup(func() { deleteTenant(t, tenant.Name) })
		})
	}
}

// A claim's organization and email are stamped on the tenant it binds, and reach
// templates from there; a pool's template would put them on every spare.
func TestClaimsAndPoolsWithControlCharactersAreRejectedAtAdmission(t *testing.T) {
	ctx := context.Background()
	claims := map[string]struct {
		spec tenancyv1alpha1.TenantClaimSpec
		want []string
	}{
		"an organization with a newline": {
			spec: tenancyv1alpha1.TenantClaimSpec{Pool: "p", Organization: "Acme\nkind: Role"},
			want: []string{"spec.organization", "organization must not contain control characters or line breaks"},
		},
		"an organization with a next-line character, a line break to YAML": {
			spec: tenancyv1alpha1.TenantClaimSpec{Pool: "p", Organization: "Acme\u0085kind: Role"},
			want: []string{"spec.organization", "organization must not contain control characters or line breaks"},
		},
		"an email with a newline after a valid address": {
			spec: tenancyv1alpha1.TenantClaimSpec{Pool: "p", Email: "ops@example.com\nkind: Role"},
			want: []string{"spec.email", "email must not contain control characters or line breaks"},
		},
	}
	for name, tc := range claims {
		t.Run("a claim with "+name+" is rejected", func(t *testing.T) {
			g := NewWithT(t)
			claim := &tenancyv1alpha1.TenantClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "control-"}, Spec: tc.spec}
			err := k8s.Create(ctx, claim)
			if err == nil {
				_ = k8s.Delete(ctx, claim)
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
			for _, w := range tc.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}

	t.Run("a pool whose template has an organization with a newline is rejected", func(t *testing.T) {
		g := NewWithT(t)
		pool := &tenancyv1alpha1.TenantPool{
			ObjectMeta: metav1.ObjectMeta{Name: "control-pool"},
			Spec: tenancyv1alpha1.TenantPoolSpec{Template: tenancyv1alpha1.TenantTemplate{
				Spec: tenancyv1alpha1.TenantSpec{Organization: "Acme\nkind: Role"},
			}},
		}
		err := k8s.Create(ctx, pool)
		if err == nil {
			_ = k8s.Delete(ctx, pool)
		}
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
		g.Expect(err.Error()).To(And(ContainSubstring("spec.template.spec.organization"), ContainSubstring("organization must not contain control characters")))
	})
}

func TestStateTransitions(t *testing.T) {
	ctx := context.Background()

	t.Run("a tenant can be purged with its name as confirmation, and then never leaves Purged", func(t *testing.T) {
		g := NewWithT(t)
		tenant := newTenant("purge-me")
		g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, "purge-me") })

		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.State = tenancyv1alpha1.StatePurged
		tenant.Spec.PurgeConfirmation = "purge-me"
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())

		patch = client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.State = tenancyv1alpha1.StateActive
		err := k8s.Patch(ctx, tenant, patch)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.state"))
		g.Expect(err.Error()).To(ContainSubstring("a Purged tenant is final"))
	})

	t.Run("a database's server may be changed in the spec, which moves nothing by itself", func(t *testing.T) {
		// A DatabaseMove moves the data; the spec may name the target first (GitOps), and the
		// tenant waits for the move (DatabaseServerConflict, tested with the databases).
		g := NewWithT(t)
		tenant := newTenant("pinned-db", func(t *tenancyv1alpha1.Tenant) {
			t.Spec.State = tenancyv1alpha1.StateArchived
			t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app", Server: "pg-a"}}
		})
		g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, "pinned-db") })

		patch := client.MergeFrom(tenant.DeepCopy())
		tenant.Spec.Databases.Postgres[0].Server = "pg-b"
		g.Expect(k8s.Patch(ctx, tenant, patch)).To(Succeed())
		g.Expect(tenant.Spec.Databases.Postgres[0].Server).To(Equal("pg-b"))
	})

	t.Run("a new tenant defaults to Active", func(t *testing.T) {
		g := NewWithT(t)
		tenant := newTenant("defaulted")
		g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
		t.Cleanup(func() { deleteTenant(t, "defaulted") })
		g.Expect(tenant.Spec.State).To(Equal(tenancyv1alpha1.StateActive))
	})
}

// A DatabaseServer's connection details are what its tenants' credentials and data belong to:
// swapping them under live tenants would point their logins, and Landlord's purges, at another
// server.
func TestDatabaseServerValidation(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(createDatabaseServer(ctx, "pg-validate", pg, nil)).To(Succeed())
	ds := &tenancyv1alpha1.DatabaseServer{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "pg-validate"}, ds)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, ds) })

	t.Run("the name prefix defaults, and the connection limit is left to the server", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(ds.Spec.NamePrefix).To(Equal("t_"))
		g.Expect(ds.Spec.ConnectionLimit).To(BeNil())
	})

	t.Run("the name prefix never changes", func(t *testing.T) {
		g := NewWithT(t)
		changed := ds.DeepCopy()
		changed.Spec.NamePrefix = "x_"
		err := k8s.Update(ctx, changed)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("namePrefix is immutable"))
	})

	tenant := createTenant(t, newTenant("dbs-validate", func(t *tenancyv1alpha1.Tenant) {
		t.Spec.Databases.Postgres = []tenancyv1alpha1.Database{{Name: "app", Server: "pg-validate"}}
	}))
	t.Cleanup(func() { deleteTenant(t, tenant.Name) })
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: "pg-validate"}, ds)).To(Succeed())
		g.Expect(ds.Status.Tenants).To(Equal(int32(1)))
	}).WithTimeout(timeout).Should(Succeed())

	changes := map[string]func(*tenancyv1alpha1.DatabaseServer){
		"host":             func(ds *tenancyv1alpha1.DatabaseServer) { ds.Spec.Host = "elsewhere.example.com" },
		"port":             func(ds *tenancyv1alpha1.DatabaseServer) { ds.Spec.Port++ },
		"tls":              func(ds *tenancyv1alpha1.DatabaseServer) { ds.Spec.TLS = "require" },
		"adminCredentials": func(ds *tenancyv1alpha1.DatabaseServer) { ds.Spec.AdminCredentials.Name = "someone-else" },
	}
	for field, change := range changes {
		t.Run("its "+field+" cannot change while tenants have databases on it", func(t *testing.T) {
			g := NewWithT(t)
			changed := ds.DeepCopy()
			change(changed)
			err := k8s.Update(ctx, changed)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("cannot change while tenants have databases on the server"))
		})
	}

	t.Run("its capacity may still change", func(t *testing.T) {
		changed := ds.DeepCopy()
		changed.Spec.MaxTenants = ptr.To[int32](5)
		NewWithT(t).Expect(k8s.Update(ctx, changed)).To(Succeed())
	})
}
