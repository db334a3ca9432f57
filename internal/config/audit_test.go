package config_test

import (
	"strings"
	"testing"

	"github.com/landlord-dev/landlord/internal/config"
)

// isolation.audit is Delete unless set, and nothing but Delete or Report.
func TestTheAuditActionIsDeleteUnlessSetToReport(t *testing.T) {
	cases := map[string]struct {
		document string
		want     config.AuditAction
		invalid  bool
	}{
		"unset, the audit deletes what crosses tenants": {document: "isolation: {}", want: config.AuditDelete},
		"Report only reports":                           {document: "isolation: {audit: Report}", want: config.AuditReport},
		"Delete is accepted as written":                 {document: "isolation: {audit: Delete}", want: config.AuditDelete},
		"anything else is refused, naming the field":    {document: "isolation: {audit: delete}", invalid: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := config.Parse([]byte(tc.document))
			if tc.invalid {
				if err == nil || !strings.Contains(err.Error(), "isolation.audit") {
					t.Fatalf("want an error naming isolation.audit, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Isolation.Audit != tc.want {
				t.Errorf("isolation.audit = %q, want %q", c.Isolation.Audit, tc.want)
			}
		})
	}
}
