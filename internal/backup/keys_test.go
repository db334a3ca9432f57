package backup_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
)

// A Job is handed the data key of the tenant it serves and no key-encryption key: given the
// location of another tenant's backup, in the same bucket, it opens nothing of it and changes
// nothing of its own target.
func TestAJobOpensItsOwnTenantsBackupsAndNoOthers(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	engine := database.Postgres
	victim := newTenant(t, engine)
	victim.exec(t, schema[engine]...)
	attacker := newTenant(t, engine)
	attacker.exec(t, "CREATE TABLE mine (id int PRIMARY KEY)", "INSERT INTO mine VALUES (1)")
	before := attacker.contents(t)
	st := newStore(t)
	victims, _ := backupOf(t, st, tools, victim)

	attackerKey, err := st.TenantKey(testContext(t), randomHex(t, 16), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(attackerKey).NotTo(Equal(st.tenantKey), "each tenant has a key of its own")
	plan := backup.Plan{Operation: backup.OpRestore, Objects: st.objects, Location: victims.Location, TenantKey: attackerKey,
		Databases: []backup.Database{{Name: "app", Target: attacker.target()}}, Clone: true}
	g.Expect(plan.Key).To(BeEmpty(), "a Job's plan names no key-encryption key")

	err = backup.RunJob(testContext(t), plan, tools, "", new(nopWriter))
	g.Expect(err).To(MatchError(ContainSubstring("unwrapping the data key")))
	g.Expect(attacker.contents(t)).To(Equal(before), "nothing of the victim's dump reached the attacker's database")

	// The victim's own key opens it.
	plan.TenantKey = st.tenantKey
	g.Expect(backup.RunJob(testContext(t), plan, tools, "", new(nopWriter))).To(Succeed())
	g.Expect(attacker.contents(t)).To(Equal(victim.contents(t)))
}

// Destroying a tenant's key, as its purge does, leaves every copy of its backups unreadable,
// wherever it is kept: here the backup's objects themselves stay where they were, as a
// replica's or an export's would, and the store gives no key that opens them, nor ever makes
// the tenant a key again (a backup started from a stale view of the purged tenant fails).
func TestADestroyedTenantKeyLeavesNoCopyOfItsBackupsReadable(t *testing.T) {
	g := NewWithT(t)
	tools := clientTools(t)
	tn := newTenant(t, database.Postgres)
	tn.exec(t, schema[database.Postgres]...)
	st := newStore(t)
	plan, _ := backupOf(t, st, tools, tn)
	keyObject := "keys/" + st.tenantUID
	g.Expect(st.keys(t, "keys/")).To(ContainElement(keyObject))
	g.Expect(st.raw(t, keyObject)).NotTo(ContainSubstring(string(st.tenantKey)), "the key is kept wrapped")
	g.Expect(backup.Restore(testContext(t), st.Store, tools, st.restorePlan(plan.Location, tn.target()))).To(Succeed(), "the key opens the backup before it is destroyed")

	g.Expect(st.DestroyTenantKey(testContext(t), st.tenantUID)).To(Succeed())
	g.Expect(st.raw(t, keyObject)).NotTo(ContainSubstring(string(st.tenantKey)))
	for _, create := range []bool{false, true} {
		_, err := st.TenantKey(testContext(t), st.tenantUID, create)
		g.Expect(err).To(MatchError(backup.ErrKeyDestroyed), "create %v", create)
	}
	g.Expect(st.keys(t, plan.Location)).To(HaveLen(2), "the backup's objects are still in the store")
	other, err := st.TenantKey(testContext(t), randomHex(t, 16), true)
	g.Expect(err).NotTo(HaveOccurred())
	restore := st.restorePlan(plan.Location, tn.target())
	restore.TenantKey = other
	g.Expect(backup.Restore(testContext(t), st.Store, tools, restore)).To(MatchError(ContainSubstring("unwrapping the data key")))
}

// A tenant's kept key is bound to the tenant: one copied over another tenant's, as anyone who
// may write the bucket could, is refused, never handed to the other tenant's Jobs.
func TestAKeyCopiedOverAnotherTenantsIsRefused(t *testing.T) {
	g := NewWithT(t)
	st := newStore(t)
	victim := randomHex(t, 16)
	_, err := st.TenantKey(testContext(t), victim, true)
	g.Expect(err).NotTo(HaveOccurred())
	st.putRaw(t, "keys/"+victim, st.raw(t, "keys/"+st.tenantUID))

	_, err = st.TenantKey(testContext(t), victim, true)
	g.Expect(err).To(MatchError(ContainSubstring("is not tenant " + victim + "'s")))
	_, err = st.TenantKey(testContext(t), randomHex(t, 16), false)
	g.Expect(err).To(MatchError(backup.ErrNoKey), "a tenant with no key has none made without asking")
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
