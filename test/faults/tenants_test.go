package faults_test

import (
	"context"
	"fmt"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// scenarioLabel marks the tenants, pools and claims of one scenario, so that its invariants
// are checked on its own objects (and a failed scenario does not fail the next).
const scenarioLabel = "faults.landlord.dev/scenario"

// claimNamespace holds the scenarios' TenantClaims.
const claimNamespace = "default"

// newTenant is a tenant of a scenario with one database, "app", of the engine.
func newTenant(scenario, name string, engine tenancyv1alpha1.DatabaseEngine) *tenancyv1alpha1.Tenant {
	return &tenancyv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{scenarioLabel: scenario}},
		Spec: tenancyv1alpha1.TenantSpec{
			Organization: "Faults Inc.",
			Email:        "ops@faults.example.com",
			Databases:    databasesOf(engine),
		},
	}
}

func databasesOf(engine tenancyv1alpha1.DatabaseEngine) tenancyv1alpha1.Databases {
	if engine == tenancyv1alpha1.EngineMySQL {
		return tenancyv1alpha1.Databases{MySQL: []tenancyv1alpha1.Database{{Name: "app"}}}
	}
	return tenancyv1alpha1.Databases{Postgres: []tenancyv1alpha1.Database{{Name: "app"}}}
}

// newPool is a scenario's pool whose spares each have a PostgreSQL database.
func newPool(scenario, name string, replicas int32) *tenancyv1alpha1.TenantPool {
	return &tenancyv1alpha1.TenantPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{scenarioLabel: scenario}},
		Spec: tenancyv1alpha1.TenantPoolSpec{
			Replicas: replicas,
			Template: tenancyv1alpha1.TenantTemplate{
				Labels: map[string]string{scenarioLabel: scenario},
				Spec:   tenancyv1alpha1.TenantSpec{Databases: databasesOf(tenancyv1alpha1.EnginePostgres)},
			},
		},
	}
}

func newClaim(scenario, name, pool string) *tenancyv1alpha1.TenantClaim {
	return &tenancyv1alpha1.TenantClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: claimNamespace, Name: name, Labels: map[string]string{scenarioLabel: scenario}},
		Spec: tenancyv1alpha1.TenantClaimSpec{
			Pool: pool, Organization: "Claimed " + name, Email: name + "@faults.example.com",
		},
	}
}

// setState moves a tenant to a state; Purged carries the confirmation the API requires.
func setState(ctx context.Context, name string, state tenancyv1alpha1.TenantState) error {
	patch := fmt.Sprintf(`{"spec":{"state":%q}}`, state)
	if state == tenancyv1alpha1.StatePurged {
		patch = fmt.Sprintf(`{"spec":{"state":%q,"purgeConfirmation":%q}}`, state, name)
	}
	return env.AdminClient.Patch(ctx, &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))
}

// confirmedDelete deletes a tenant in whatever state it is, confirming the deletion first as an
// administrator must for an Active or Frozen tenant.
func confirmedDelete(ctx context.Context, name string) error {
	tenant := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}}
	confirm := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tenancyv1alpha1.DeletionConfirmationAnnotation, name)
	if err := env.AdminClient.Patch(ctx, tenant, client.RawPatch(types.MergePatchType, []byte(confirm))); err != nil {
		return err
	}
	return env.AdminClient.Delete(ctx, tenant)
}

// getTenant reads a tenant from the API server.
func getTenant(g Gomega, name string) *tenancyv1alpha1.Tenant {
	tenant := &tenancyv1alpha1.Tenant{}
	g.Expect(env.AdminClient.Get(context.Background(), client.ObjectKey{Name: name}, tenant)).To(Succeed())
	return tenant
}

// namespaceOf is a tenant's namespace name.
func namespaceOf(tenant string) string { return opConfig.NamespaceName(tenant) }

// namespaceExists is whether a tenant's namespace exists and is not on its way out.
func namespaceExists(g Gomega, tenant string) bool {
	ns := &corev1.Namespace{}
	err := env.AdminClient.Get(context.Background(), client.ObjectKey{Name: namespaceOf(tenant)}, ns)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return ns.DeletionTimestamp.IsZero()
}
