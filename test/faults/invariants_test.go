package faults_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// convergeTimeout bounds how long a scenario's tenants may take to converge once the faults
// stop: a handful of tenants on a local cluster takes seconds; the rest is slack for a loaded
// two-core machine.
const convergeTimeout = 3 * time.Minute

// keptData is what a tenant deleted without being Purged leaves behind: its databases and
// their stored credentials stay, under its namespace's name and marked with its UID.
type keptData struct {
	tenant    string
	uid       types.UID
	databases []tenancyv1alpha1.DatabaseStatus
}

// checkInvariants waits until the scenario's tenants, pools and claims have converged, then
// checks that no data was lost or taken: the invariant every fault must leave intact.
func checkInvariants(t *testing.T, scenario string, kept ...keptData) {
	t.Helper()
	ctx := context.Background()
	sel := client.MatchingLabels{scenarioLabel: scenario}

	t.Run("every tenant converges to what its spec asks", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			tenants := &tenancyv1alpha1.TenantList{}
			g.Expect(env.AdminClient.List(ctx, tenants, sel)).To(Succeed())
			var notCurrent []string
			for i := range tenants.Items {
				tenant := &tenants.Items[i]
				if res := kstatus(g, tenant); res.Status != status.CurrentStatus {
					notCurrent = append(notCurrent, fmt.Sprintf("%s (%s, %s: %s)", tenant.Name, tenant.Spec.State, res.Status, res.Message))
				}
			}
			g.Expect(notCurrent).To(BeEmpty(), "tenants not Current")
			// What Current means, checked on the namespace itself: present for an Active
			// tenant, gone for an Archived or Purged one.
			for i := range tenants.Items {
				tenant := &tenants.Items[i]
				wantNamespace := tenant.Spec.State == tenancyv1alpha1.StateActive || tenant.Spec.State == tenancyv1alpha1.StateFrozen
				g.Expect(namespaceExists(g, tenant.Name)).To(Equal(wantNamespace), "namespace of %s tenant %s", tenant.Spec.State, tenant.Name)
			}
		}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed())
	})

	t.Run("every pool holds its replicas of unallocated spares", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			pools := &tenancyv1alpha1.TenantPoolList{}
			g.Expect(env.AdminClient.List(ctx, pools, sel)).To(Succeed())
			for _, pool := range pools.Items {
				tenants := &tenancyv1alpha1.TenantList{}
				g.Expect(env.AdminClient.List(ctx, tenants, client.MatchingLabels{tenancyv1alpha1.PoolLabel: pool.Name})).To(Succeed())
				var spares []string
				for i := range tenants.Items {
					if tenant := &tenants.Items[i]; tenant.IsUnallocatedSpare() && tenant.DeletionTimestamp.IsZero() {
						spares = append(spares, tenant.Name)
					}
				}
				g.Expect(spares).To(HaveLen(int(pool.Spec.Replicas)), "unallocated spares of pool %s", pool.Name)
			}
		}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed())
	})

	t.Run("every claim is bound to a tenant of its own", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			claims := &tenancyv1alpha1.TenantClaimList{}
			g.Expect(env.AdminClient.List(ctx, claims, client.InNamespace(claimNamespace), sel)).To(Succeed())
			boundTo := map[string]string{}
			for _, claim := range claims.Items {
				g.Expect(claim.Status.Phase).To(Equal(tenancyv1alpha1.ClaimBound), "claim %s: %s", claim.Name, claim.Status.Message)
				other, taken := boundTo[claim.Status.Tenant]
				g.Expect(taken).To(BeFalse(), "claims %s and %s are bound to the same tenant %s", other, claim.Name, claim.Status.Tenant)
				boundTo[claim.Status.Tenant] = claim.Name
				tenant := &tenancyv1alpha1.Tenant{}
				err := env.AdminClient.Get(ctx, client.ObjectKey{Name: claim.Status.Tenant}, tenant)
				if apierrors.IsNotFound(err) {
					continue // deleted by the scenario since
				}
				g.Expect(err).NotTo(HaveOccurred())
				if claim.Status.BoundTime != nil && tenant.CreationTimestamp.After(claim.Status.BoundTime.Time) {
					continue // the bound tenant was deleted since, and its name taken by a new one
				}
				g.Expect(tenant.IsAllocated()).To(BeTrue(), "tenant %s of claim %s is not allocated", tenant.Name, claim.Name)
				g.Expect(tenant.Labels).To(HaveKeyWithValue(tenancyv1alpha1.ClaimUIDLabel, string(claim.UID)),
					"tenant %s does not name claim %s", tenant.Name, claim.Name)
			}
		}).WithTimeout(convergeTimeout).WithPolling(time.Second).Should(Succeed())
	})

	t.Run("every database of a tenant that is not Purged logs in with its stored password and is the tenant's own", func(t *testing.T) {
		g := NewWithT(t)
		tenants := &tenancyv1alpha1.TenantList{}
		g.Expect(env.AdminClient.List(ctx, tenants, sel)).To(Succeed())
		owners := map[string]string{} // server/database and server/login → tenant
		for i := range tenants.Items {
			tenant := &tenants.Items[i]
			if tenant.Spec.State == tenancyv1alpha1.StatePurged {
				continue
			}
			checkTenantData(t, tenant)
			for _, d := range tenant.Status.Databases {
				for _, key := range []string{d.Server + "/database " + d.Database, d.Server + "/login " + d.Username} {
					if other, ok := owners[key]; ok {
						t.Errorf("tenants %s and %s both have %s", other, tenant.Name, key)
					}
					owners[key] = tenant.Name
				}
			}
		}
	})

	t.Run("a Purged tenant has no stored credentials left", func(t *testing.T) {
		g := NewWithT(t)
		tenants := &tenancyv1alpha1.TenantList{}
		g.Expect(env.AdminClient.List(ctx, tenants, sel)).To(Succeed())
		for i := range tenants.Items {
			tenant := &tenants.Items[i]
			if tenant.Spec.State != tenancyv1alpha1.StatePurged {
				continue
			}
			g.Expect(tenant.Status.Databases).To(BeEmpty(), "tenant %s", tenant.Name)
			for _, c := range storedCredentials(g, tenant.Name) {
				g.Expect(c.UID).NotTo(Equal(string(tenant.UID)), "Purged tenant %s still has stored credentials for %s", tenant.Name, c.Name)
			}
		}
	})

	if len(kept) > 0 {
		t.Run("the data of a tenant deleted without being Purged is kept", func(t *testing.T) {
			for _, k := range kept {
				records := map[string]resources.DatabaseCredentials{}
				for _, c := range storedCredentials(NewWithT(t), k.tenant) {
					if c.UID == string(k.uid) {
						records[c.Name] = c
					}
				}
				for _, d := range k.databases {
					c, ok := records[d.Name]
					if !ok {
						t.Errorf("deleted tenant %s (UID %s): the stored credentials of %s database %s are gone", k.tenant, k.uid, d.Engine, d.Name)
						continue
					}
					if err := canUse(c); err != nil {
						t.Errorf("deleted tenant %s: %s database %s (%s on %s) no longer logs in: %v", k.tenant, d.Engine, d.Name, d.Database, d.Server, err)
					}
				}
			}
		})
	}
}

// checkTenantData checks one tenant that is not Purged: each database its spec asks for is in
// its status (for an Active tenant), each database its status records has a stored record of
// the same server, database and login, marked with the tenant's UID, that logs in; and an
// Active tenant's credentials Secret holds the stored password.
func checkTenantData(t *testing.T, tenant *tenancyv1alpha1.Tenant) {
	t.Helper()
	g := NewWithT(t)
	records := map[string]resources.DatabaseCredentials{}
	for _, c := range storedCredentials(g, tenant.Name) {
		g.Expect(c.UID).To(Equal(string(tenant.UID)),
			"tenant %s (UID %s) has stored credentials for database %s of another tenant", tenant.Name, tenant.UID, c.Name)
		records[c.Name] = c
	}
	placed := map[string]tenancyv1alpha1.DatabaseStatus{}
	for _, d := range tenant.Status.Databases {
		placed[d.Name] = d
	}
	active := tenant.Spec.State == tenancyv1alpha1.StateActive || tenant.Spec.State == tenancyv1alpha1.StateFrozen
	if active {
		var want []string
		for _, d := range slices.Concat(tenant.Spec.Databases.Postgres, tenant.Spec.Databases.MySQL) {
			want = append(want, d.Name)
		}
		g.Expect(sortedKeys(placed)).To(Equal(sorted(want)), "databases in the status of tenant %s", tenant.Name)
		g.Expect(sortedKeys(records)).To(Equal(sorted(want)), "stored credentials of tenant %s", tenant.Name)
	}
	for name, d := range placed {
		c, ok := records[name]
		if !g.Expect(ok).To(BeTrue(), "tenant %s: %s database %s is in place but its stored credentials are gone", tenant.Name, d.Engine, name) {
			continue
		}
		g.Expect([]string{string(c.Engine), c.Server, c.Account.Database, c.Account.Username}).To(
			Equal([]string{string(d.Engine), d.Server, d.Database, d.Username}),
			"tenant %s: the stored credentials of database %s are not what its status records", tenant.Name, name)
		g.Expect(canUse(c)).To(Succeed(), "tenant %s: %s database %s (%s on %s)", tenant.Name, d.Engine, name, d.Database, d.Server)
		if active {
			s := &corev1.Secret{}
			g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{
				Namespace: namespaceOf(tenant.Name), Name: d.SecretName,
			}, s)).To(Succeed())
			g.Expect([]string{string(s.Data[tenancyv1alpha1.CredentialsKeyDatabase]), string(s.Data[tenancyv1alpha1.CredentialsKeyUsername]), string(s.Data[tenancyv1alpha1.CredentialsKeyPassword])}).To(
				Equal([]string{c.Account.Database, c.Account.Username, c.Account.Password}),
				"tenant %s: Secret %s does not hold the stored credentials", tenant.Name, d.SecretName)
		}
	}
	// An Archived tenant may hold a record for a database it never had in place (archived
	// between storing the credentials and creating the database): it is created on restore.
	for name, c := range records {
		if _, ok := placed[name]; !ok && !active {
			t.Logf("tenant %s (%s) has stored credentials for database %s that its status does not place; logging in: %v",
				tenant.Name, tenant.Spec.State, name, canUse(c))
		}
	}
}

// storedCredentials are the database records the store holds under a tenant's namespace.
func storedCredentials(g Gomega, tenant string) []resources.DatabaseCredentials {
	secrets, err := store.List(context.Background(), namespaceOf(tenant))
	g.Expect(err).NotTo(HaveOccurred())
	var out []resources.DatabaseCredentials
	for _, s := range secrets {
		name, _ := tenancyv1alpha1.DatabaseOfSecret(s.Name)
		c, isDB, err := resources.ParseStoredCredentials(s, name)
		if !isDB {
			continue
		}
		g.Expect(err).NotTo(HaveOccurred())
		out = append(out, c)
	}
	return out
}

// canUse logs in with stored credentials and writes and reads a row, as the tenant's
// application would.
func canUse(c resources.DatabaseCredentials) error {
	inst, ok := servers[c.Server]
	if !ok {
		return fmt.Errorf("no test server is registered as DatabaseServer %q", c.Server)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return dbtest.CanUse(ctx, inst.Server, c.Account)
}

// kstatus computes the tenant's status the way kstatus-aware tools (Flux, kubectl wait) do.
func kstatus(g Gomega, tenant *tenancyv1alpha1.Tenant) *status.Result {
	res, err := testenv.KStatus(tenant)
	g.Expect(err).NotTo(HaveOccurred())
	return res
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	if out == nil {
		out = []string{}
	}
	sort.Strings(out)
	return out
}

// describeTenants is one line per tenant of a scenario, for the log of a failed wait.
func describeTenants(scenario string) string {
	tenants := &tenancyv1alpha1.TenantList{}
	if err := env.AdminClient.List(context.Background(), tenants, client.MatchingLabels{scenarioLabel: scenario}); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, tenant := range tenants.Items {
		fmt.Fprintf(&b, "%s %s gen %d/%d:", tenant.Name, tenant.Spec.State, tenant.Status.ObservedGeneration, tenant.Generation)
		for _, c := range tenant.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Reason)
		}
		b.WriteString("\n")
	}
	return b.String()
}
