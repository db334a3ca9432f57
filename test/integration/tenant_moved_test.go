package integration

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/uuid"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/resources"
	"github.com/landlord-dev/landlord/test/testenv"
)

// A move (landlordctl move) marks the source tenant moved-to and archives it before the
// destination, in another cluster, takes the data over by re-marking the databases and rewriting
// the stored records with its own UID. Purging the source in between, at whichever step the move
// stopped, must drop nothing: until the destination has taken it over, the data is the only copy
// the moved customer has.
func TestAMovedAwayTenantsPurgeDropsNothingTheDestinationHasNotTakenOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := NewWithT(t)
	src := createTenant(t, newTenant("moved-src", withAppDatabase))
	app := testenv.AccountOf(credentials(g, src.Name, "app"))
	g.Expect(dbtest.CanUse(ctx, pg.Server, app)).To(Succeed())
	ns := opConfig.NamespaceName(src.Name)

	// The move's first steps: marked, then Archived; the destination has not taken anything over.
	annotate(t, src.Name, tenancyv1alpha1.MovedToAnnotation, "https://eu-2.example.com")
	setState(t, src.Name, tenancyv1alpha1.StateArchived)
	waitReady(t, src.Name)

	t.Run("purged before the destination took the data over, it drops and forgets nothing", func(t *testing.T) {
		g := NewWithT(t)
		setState(t, src.Name, tenancyv1alpha1.StatePurged)
		msg := waitDatabasesCondition(t, src.Name, tenancyv1alpha1.ReasonMovedAway)
		g.Expect(msg).To(ContainSubstring("eu-2.example.com"))
		g.Expect(dbtest.CanUse(ctx, pg.Server, app)).To(Succeed(), "the moved tenant's database was dropped")
		record, err := store.Get(ctx, ns, tenancyv1alpha1.DatabaseSecretName("app"))
		g.Expect(err).NotTo(HaveOccurred(), "the moved tenant's stored credentials were forgotten")
		g.Expect(string(record.Data[tenancyv1alpha1.CredentialsKeyPassword])).To(Equal(app.Password))
	})

	t.Run("once the destination has taken the data over, the purge completes and leaves it to the destination", func(t *testing.T) {
		g := NewWithT(t)
		// What the destination's operator does when it adopts the data: the server's markers and
		// the stored record name it from then on.
		heir := string(uuid.NewUUID())
		taken := app
		taken.Owner, taken.Adopt = heir, string(src.UID)
		prov, err := database.Open(pg.Server)
		g.Expect(err).NotTo(HaveOccurred())
		defer prov.Close()
		g.Expect(prov.Ensure(ctx, taken)).To(Succeed())
		record, err := store.Get(ctx, ns, tenancyv1alpha1.DatabaseSecretName("app"))
		g.Expect(err).NotTo(HaveOccurred())
		c, _, err := resources.ParseStoredCredentials(record, "app")
		g.Expect(err).NotTo(HaveOccurred())
		c.UID, c.Account = heir, taken
		g.Expect(store.Put(ctx, resources.StoredCredentials(ns, c))).To(Succeed())

		requestReconcile(g, src.Name, "taken-over")
		purged := waitReady(t, src.Name)
		g.Expect(condition(purged, tenancyv1alpha1.DatabasesReadyCondition).Reason).To(Equal(tenancyv1alpha1.ReasonDatabasesDropped))
		g.Expect(purged.Status.Databases).To(BeEmpty())
		g.Expect(dbtest.CanUse(ctx, pg.Server, app)).To(Succeed(), "the destination's database was dropped")
		_, err = store.Get(ctx, ns, tenancyv1alpha1.DatabaseSecretName("app"))
		g.Expect(err).NotTo(HaveOccurred(), "the destination's stored credentials were forgotten")
	})
}

// A tenant that adopts another's data (as a move's destination does) finds it through the
// secret store. When the store has no record of a database (another namespacePrefix, another
// store), the data is elsewhere: the tenant stalls rather than create an empty database in its
// place, which would report the move done and strand the data.
func TestATenantAdoptingDataThatTheStoreDoesNotHoldCreatesNothingEmpty(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	tenant := newTenant("adopt-nothing", withAppDatabase)
	tenant.Annotations = map[string]string{tenancyv1alpha1.AdoptDataAnnotation: string(uuid.NewUUID())}
	g.Expect(k8s.Create(ctx, tenant)).To(Succeed())
	t.Cleanup(func() { deleteTenant(t, tenant.Name) })

	msg := waitDatabasesCondition(t, tenant.Name, tenancyv1alpha1.ReasonAdoptedDataMissing)
	g.Expect(msg).To(ContainSubstring("nothing is created empty"))
	_, err := store.Get(ctx, opConfig.NamespaceName(tenant.Name), tenancyv1alpha1.DatabaseSecretName("app"))
	g.Expect(err).To(HaveOccurred(), "credentials were stored for a database the tenant was to adopt")
	for _, prefix := range []string{"", "t_"} {
		name, _ := database.Names(database.Postgres, prefix, tenant.Name, "app")
		g.Expect(dbtest.CanConnect(ctx, pg.Server, pg.Server.AdminUser, pg.Server.AdminPassword, name)).NotTo(Succeed(),
			"an empty database %s was created in place of the adopted one", name)
	}
}
