package tenantbackup

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The backup metrics read nothing, and say nothing, while the cache or the schedules' informer
// has not started (a scrape as the operator starts); any other error is one.
func TestBackupMetricsWaitForTheirInformers(t *testing.T) {
	g := NewWithT(t)
	gvk := tenancyv1alpha1.GroupVersion.WithKind("TenantBackupSchedule")
	g.Expect(starting(fmt.Errorf("listing: %w", &cache.ErrResourceNotCached{GVK: gvk}))).To(BeTrue(), "an informer not started yet")
	g.Expect(starting(&cache.ErrCacheNotStarted{})).To(BeTrue(), "the cache not started yet")
	g.Expect(starting(errors.New("connection refused"))).To(BeFalse())
	g.Expect(starting(nil)).To(BeFalse())
}
