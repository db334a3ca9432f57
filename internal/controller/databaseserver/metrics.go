package databaseserver

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
	"github.com/landlord-dev/landlord/internal/controller/leadermetrics"
)

// The server metrics are read from each DatabaseServer's status when scraped: the reconciler
// already counts the tenants placed on it, and a scrape costs no check of the server.
const (
	serverStatusHelp  = "Always 1 per DatabaseServer: its engine, and its Ready condition's status (True, False, Unknown) and reason."
	serverTenantsHelp = "Tenants with databases placed on a DatabaseServer (status.tenants)."
	maxTenantsHelp    = "How many tenants a DatabaseServer may hold (spec.maxTenants); no series for a server without a limit."
)

var (
	serverLabels       = []string{"server", "engine"}
	serverStatusDesc   = prometheus.NewDesc("landlord_database_server_status", serverStatusHelp, append(serverLabels[:2:2], "ready", "reason"), nil)
	serverTenantsDesc  = prometheus.NewDesc("landlord_database_server_tenants", serverTenantsHelp, serverLabels, nil)
	serverCapacityDesc = prometheus.NewDesc("landlord_database_server_max_tenants", maxTenantsHelp, serverLabels, nil)
	serverDescs        = []*prometheus.Desc{serverStatusDesc, serverTenantsDesc, serverCapacityDesc}
)

// serversCollector serves the server metrics for whichever operator of this process leads.
var serversCollector = leadermetrics.New(collectServers, serverDescs...)

func init() {
	metrics.Registry.MustRegister(serversCollector)
}

// Metrics returns the manager Runnable that reports every DatabaseServer's readiness and
// capacity from reader (the manager's cache) while its operator leads.
func Metrics(reader client.Reader) manager.Runnable { return serversCollector.Source(reader) }

// collectServers reports each server from its spec and status.
func collectServers(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) error {
	list := &tenancyv1alpha1.DatabaseServerList{}
	if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range list.Items {
		ds := &list.Items[i]
		id := []string{ds.Name, string(ds.Spec.Engine)}
		ready, reason := string(metav1.ConditionUnknown), ""
		if c := meta.FindStatusCondition(ds.Status.Conditions, tenancyv1alpha1.ReadyCondition); c != nil {
			ready, reason = string(c.Status), c.Reason
		}
		ch <- prometheus.MustNewConstMetric(serverStatusDesc, prometheus.GaugeValue, 1, append(id, ready, reason)...)
		ch <- prometheus.MustNewConstMetric(serverTenantsDesc, prometheus.GaugeValue, float64(ds.Status.Tenants), id...)
		if m := ds.Spec.MaxTenants; m != nil {
			ch <- prometheus.MustNewConstMetric(serverCapacityDesc, prometheus.GaugeValue, float64(*m), id...)
		}
	}
	return nil
}
