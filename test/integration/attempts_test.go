package integration

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// attempt is a request someone makes, and whether the API server lets it through.
type attempt struct {
	name    string
	allowed bool
	do      func() error
}

// expectAttempts runs each attempt as a subtest named for it and its verdict: one allowed must
// succeed; one refused must be Forbidden and, when refusedBy is set, name that admission policy.
func expectAttempts(t *testing.T, attempts []attempt, refusedBy string) {
	t.Helper()
	for _, tc := range attempts {
		verdict := " is refused"
		if tc.allowed {
			verdict = " is allowed"
		}
		t.Run(tc.name+verdict, func(t *testing.T) {
			g := NewWithT(t)
			err := tc.do()
			if tc.allowed {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "expected Forbidden, got %v", err)
			if refusedBy != "" {
				g.Expect(err.Error()).To(ContainSubstring(refusedBy), "the refusal names the policy")
			}
		})
	}
}
