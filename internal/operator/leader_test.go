package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/landlord-dev/landlord/internal/operator"
	"github.com/landlord-dev/landlord/internal/shard"
	"github.com/landlord-dev/landlord/test/testenv"
)

// A process run from a workstation refuses to start while the installed operator holds its
// lease, and names the holder; a lease left by a stopped operator, or none, lets it start.
func TestAProcessRunFromAWorkstationRefusesWhileAnotherHoldsTheLease(t *testing.T) {
	ctx := context.Background()
	testenv.NeedCluster(t)
	env, err := testenv.StartWith(testenv.Options{APIServerOnly: true})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	const ns = "landlord-system"
	NewWithT(t).Expect(client.IgnoreAlreadyExists(env.AdminClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	now := time.Now()

	for _, tc := range []struct {
		name    string
		renewed *time.Time
		holder  string
		refused bool
	}{
		{name: "no lease lets it start"},
		{name: "a lease renewed a moment ago refuses it, naming the holder", renewed: ptr.To(now.Add(-5 * time.Second)), holder: "landlord-controller-manager-7d9f_1a2b", refused: true},
		{name: "a lease that expired lets it start", renewed: ptr.To(now.Add(-time.Minute)), holder: "landlord-controller-manager-7d9f_1a2b"},
		{name: "a lease released on a clean stop lets it start", renewed: ptr.To(now.Add(-time.Second))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: shard.LeaseName("")}}
			_ = env.AdminClient.Delete(ctx, lease)
			if tc.renewed != nil {
				lease.Spec = coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To(tc.holder), LeaseDurationSeconds: ptr.To[int32](15),
					RenewTime: &metav1.MicroTime{Time: *tc.renewed},
				}
				g.Expect(env.AdminClient.Create(ctx, lease)).To(Succeed())
			}
			err := operator.CheckNoLiveLeader(ctx, env.Admin, ns, "", now)
			if !tc.refused {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(And(ContainSubstring(tc.holder), ContainSubstring("another Landlord runs on this cluster"))))
		})
	}
}
