package backup_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/landlord-dev/landlord/internal/backup"
)

// A database restored into another tenant's holds the same contents, table by table, as its
// source; a row changed, or a NULL moved from one column to the next, changes that table's
// digest and no other's; a row deleted changes its count too.
func TestContentsProveACopyEqualToItsSource(t *testing.T) {
	for _, engine := range engines {
		t.Run(string(engine), func(t *testing.T) {
			g := NewWithT(t)
			tools := clientTools(t)
			source := newTenant(t, engine)
			source.exec(t, schema[engine]...)
			source.addNoise(t)
			source.exec(t, "CREATE TABLE pairs (id INT PRIMARY KEY, a VARCHAR(8), b VARCHAR(8))",
				"INSERT INTO pairs VALUES (1, 'a', NULL), (2, NULL, 'a'), (3, '', 'b')")
			want, err := backup.Contents(testContext(t), source.target())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(want).To(ContainElement(And(
				HaveField("Rows", BeEquivalentTo(2000)), HaveField("Table", ContainSubstring("noise")))))

			st := newStore(t)
			plan, _ := backupOf(t, st, tools, source)
			copied := newTenant(t, engine)
			restore := st.restorePlan(plan.Location, copied.target())
			restore.Clone = true
			g.Expect(backup.Restore(testContext(t), st.Store, tools, restore)).To(Succeed())
			got, err := backup.Contents(testContext(t), copied.verifiedTarget())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want), "the copy holds what its source does")

			for _, tc := range []struct {
				name, stmt string
				rows       int64
			}{
				{"a NULL moved to the next column", "UPDATE pairs SET a = NULL, b = 'a' WHERE id = 1", 3},
				{"an empty string made NULL", "UPDATE pairs SET a = NULL WHERE id = 3", 3},
				{"a row deleted", "DELETE FROM pairs WHERE id = 2", 2},
			} {
				t.Run(tc.name+" changes that table's digest alone", func(t *testing.T) {
					g := NewWithT(t)
					before, err := backup.Contents(testContext(t), copied.target())
					g.Expect(err).NotTo(HaveOccurred())
					copied.exec(t, tc.stmt)
					after, err := backup.Contents(testContext(t), copied.target())
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(after).To(HaveLen(len(before)))
					for i := range after {
						if after[i].Table != before[i].Table {
							t.Fatalf("table %d is %s, was %s", i, after[i].Table, before[i].Table)
						}
						if strings.Contains(after[i].Table, "pairs") {
							g.Expect(after[i].Digest).NotTo(Equal(before[i].Digest))
							g.Expect(after[i].Rows).To(Equal(tc.rows))
							continue
						}
						g.Expect(after[i]).To(Equal(before[i]), "table %s is untouched", after[i].Table)
					}
				})
			}
		})
	}
}
