package databaseserver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/controllertest"
	"github.com/landlord-dev/landlord/internal/database"
)

// Every state a DatabaseServer reports reads the same to kstatus (Flux's health checks,
// kubectl wait, cli-utils) and to the Argo CD health check Landlord ships: a server Landlord
// cannot log in to is a failure to both, whatever the cause, and only a server it logged in to
// is healthy.
func TestADatabaseServersStatusReadsTheSameInKstatusAndArgoCD(t *testing.T) {
	info := database.ServerInfo{Version: "17.2", MaxConnections: 100, Reserved: 3}
	network := tenancyv1alpha1.DatabaseServerSpec{Host: "10.0.0.7"}
	for _, tc := range []struct {
		name    string
		spec    tenancyv1alpha1.DatabaseServerSpec
		obs     observation
		kstatus status.Status
		reason  string
	}{
		{name: "a server Landlord logs in to is Current and Healthy", spec: network, obs: observation{info: info}, kstatus: status.CurrentStatus, reason: tenancyv1alpha1.ReasonReachable},
		{name: "a server without its admin credentials is Failed and Degraded", spec: network, obs: observation{err: fmt.Errorf("secret x: %w", database.ErrAdminCredentialsMissing)}, kstatus: status.FailedStatus, reason: tenancyv1alpha1.ReasonCredentialsMissing},
		{name: "a server its spec cannot log in to is Failed and Degraded", spec: network, obs: observation{err: fmt.Errorf("tls: %w", database.ErrServerUnusable)}, kstatus: status.FailedStatus, reason: tenancyv1alpha1.ReasonServerMisconfigured},
		{name: "a server that does not answer is Failed and Degraded, not Current", spec: network, obs: observation{err: errors.New("dial tcp 10.0.0.7:5432: connect: connection refused")}, kstatus: status.FailedStatus, reason: tenancyv1alpha1.ReasonUnreachable},
		{name: "a server with too high a connection limit is Current and Healthy, and says so", spec: func() tenancyv1alpha1.DatabaseServerSpec {
			s := network
			s.ConnectionLimit = ptr.To[int32](90)
			return s
		}(), obs: observation{info: info, logins: 4}, kstatus: status.CurrentStatus, reason: tenancyv1alpha1.ReasonReachable},
		{name: "a server named without its network is Current and Healthy, and says so", spec: tenancyv1alpha1.DatabaseServerSpec{Host: "pg.example.com"}, obs: observation{info: info}, kstatus: status.CurrentStatus, reason: tenancyv1alpha1.ReasonReachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := &tenancyv1alpha1.DatabaseServer{
				TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.GroupVersion.String(), Kind: "DatabaseServer"},
				ObjectMeta: metav1.ObjectMeta{Name: "pg", Generation: 3},
				Spec:       tc.spec,
				// What an earlier reconcile left: computeStatus starts from it.
				Status: tenancyv1alpha1.DatabaseServerStatus{ObservedGeneration: 2, Conditions: []metav1.Condition{
					{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonReachable, ObservedGeneration: 2},
				}},
			}
			ds.Status = computeStatus(ds, tc.obs)
			if ds.Status.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d, want 3: every reconcile reaches a verdict", ds.Status.ObservedGeneration)
			}
			var ready *metav1.Condition
			for i := range ds.Status.Conditions {
				if ds.Status.Conditions[i].Type == tenancyv1alpha1.ReadyCondition {
					ready = &ds.Status.Conditions[i]
				}
			}
			if ready == nil || ready.Reason != tc.reason {
				t.Fatalf("Ready %+v, want reason %s", ready, tc.reason)
			}
			if got, _ := controllertest.KstatusAgreesWithArgoCD(t, ds); got != tc.kstatus {
				t.Errorf("kstatus %s, want %s", got, tc.kstatus)
			}
		})
	}
}
