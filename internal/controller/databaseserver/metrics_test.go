package databaseserver

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// direct collects the server metrics from its reader at every scrape, as the collector does
// while its Source runs.
type direct struct{ reader client.Reader }

func (d direct) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range serverDescs {
		ch <- desc
	}
}

func (d direct) Collect(ch chan<- prometheus.Metric) {
	if err := collectServers(context.Background(), d.reader, ch); err != nil {
		ch <- prometheus.NewInvalidMetric(serverDescs[0], err)
	}
}

func TestDatabaseServerMetrics(t *testing.T) {
	server := func(name string, engine tenancyv1alpha1.DatabaseEngine, mutate func(*tenancyv1alpha1.DatabaseServer)) *tenancyv1alpha1.DatabaseServer {
		ds := &tenancyv1alpha1.DatabaseServer{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tenancyv1alpha1.DatabaseServerSpec{Engine: engine}}
		mutate(ds)
		return ds
	}
	nearlyFull := server("main", tenancyv1alpha1.EnginePostgres, func(ds *tenancyv1alpha1.DatabaseServer) {
		ds.Spec.MaxTenants = ptr.To[int32](100)
		ds.Status.Tenants = 95
		ds.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: tenancyv1alpha1.ReasonReachable}}
	})
	unreachable := server("legacy", tenancyv1alpha1.EngineMySQL, func(ds *tenancyv1alpha1.DatabaseServer) {
		ds.Status.Tenants = 7
		ds.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: tenancyv1alpha1.ReasonUnreachable}}
	})

	t.Run("each server reports its Ready status, its tenants, and its capacity only when it has one", func(t *testing.T) {
		registry := prometheus.NewPedanticRegistry()
		registry.MustRegister(direct{fake.NewClientBuilder().WithScheme(tenancyv1alpha1.Scheme()).WithObjects(nearlyFull, unreachable).Build()})
		want := `
# HELP landlord_database_server_max_tenants ` + maxTenantsHelp + `
# TYPE landlord_database_server_max_tenants gauge
landlord_database_server_max_tenants{engine="postgres",server="main"} 100
# HELP landlord_database_server_status ` + serverStatusHelp + `
# TYPE landlord_database_server_status gauge
landlord_database_server_status{engine="mysql",ready="False",reason="Unreachable",server="legacy"} 1
landlord_database_server_status{engine="postgres",ready="True",reason="Reachable",server="main"} 1
# HELP landlord_database_server_tenants ` + serverTenantsHelp + `
# TYPE landlord_database_server_tenants gauge
landlord_database_server_tenants{engine="mysql",server="legacy"} 7
landlord_database_server_tenants{engine="postgres",server="main"} 95
`
		if err := testutil.GatherAndCompare(registry, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	})
}
