package databases

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestLeastLoadedServer(t *testing.T) {
	const pg, my = tenancyv1alpha1.EnginePostgres, tenancyv1alpha1.EngineMySQL
	server := func(name string, engine tenancyv1alpha1.DatabaseEngine, ready bool, maxTenants *int32) tenancyv1alpha1.DatabaseServer {
		ds := tenancyv1alpha1.DatabaseServer{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       tenancyv1alpha1.DatabaseServerSpec{Engine: engine, MaxTenants: maxTenants},
		}
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		ds.Status.Conditions = []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: status}}
		return ds
	}
	deleting := server("pg-deleting", pg, true, nil)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())

	for _, tc := range []struct {
		name    string
		servers []tenancyv1alpha1.DatabaseServer
		tenants map[string]int32
		// placement is the tenant's class's (none when nil).
		placement *tenancyv1alpha1.ClassDatabases
		want      string
	}{
		{
			name:    "the server with the fewest tenants wins",
			servers: []tenancyv1alpha1.DatabaseServer{server("pg-a", pg, true, nil), server("pg-b", pg, true, nil)},
			tenants: map[string]int32{"pg-a": 5, "pg-b": 2},
			want:    "pg-b",
		},
		{
			name:    "a tie goes to the first name",
			servers: []tenancyv1alpha1.DatabaseServer{server("pg-b", pg, true, nil), server("pg-a", pg, true, nil)},
			tenants: map[string]int32{"pg-a": 1, "pg-b": 1},
			want:    "pg-a",
		},
		{
			name:    "servers of another engine are never chosen",
			servers: []tenancyv1alpha1.DatabaseServer{server("my-a", my, true, nil), server("pg-a", pg, true, nil)},
			tenants: map[string]int32{"pg-a": 9},
			want:    "pg-a",
		},
		{
			name:    "a server that is not Ready or is being deleted is skipped",
			servers: []tenancyv1alpha1.DatabaseServer{server("pg-down", pg, false, nil), deleting, server("pg-busy", pg, true, nil)},
			tenants: map[string]int32{"pg-busy": 100},
			want:    "pg-busy",
		},
		{
			name:    "a full server is skipped",
			servers: []tenancyv1alpha1.DatabaseServer{server("pg-full", pg, true, ptr.To[int32](3)), server("pg-roomy", pg, true, ptr.To[int32](10))},
			tenants: map[string]int32{"pg-full": 3, "pg-roomy": 9},
			want:    "pg-roomy",
		},
		{
			name:      "a class's selector leaves out the servers it does not choose, however idle",
			servers:   []tenancyv1alpha1.DatabaseServer{labelled(server("pg-idle", pg, true, nil), "shared"), labelled(server("pg-busy", pg, true, nil), "dedicated")},
			tenants:   map[string]int32{"pg-idle": 0, "pg-busy": 7},
			placement: &tenancyv1alpha1.ClassDatabases{ServerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dedicated"}}},
			want:      "pg-busy",
		},
		{
			name: "a dedicated placement takes only a server no other tenant is on",
			servers: []tenancyv1alpha1.DatabaseServer{labelled(server("pg-a", pg, true, nil), "dedicated"),
				labelled(server("pg-b", pg, true, nil), "dedicated"), labelled(server("pg-c", pg, true, nil), "shared")},
			tenants:   map[string]int32{"pg-a": 1, "pg-b": 0, "pg-c": 0},
			placement: &tenancyv1alpha1.ClassDatabases{Dedicated: true, ServerSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dedicated"}}},
			want:      "pg-b",
		},
		{
			name:      "a dedicated placement with every server taken places nothing",
			servers:   []tenancyv1alpha1.DatabaseServer{server("pg-a", pg, true, nil)},
			tenants:   map[string]int32{"pg-a": 1},
			placement: &tenancyv1alpha1.ClassDatabases{Dedicated: true},
			want:      "",
		},
		{
			name:    "nothing is chosen when no server qualifies",
			servers: []tenancyv1alpha1.DatabaseServer{server("pg-full", pg, true, ptr.To[int32](1)), server("my-a", my, true, nil)},
			tenants: map[string]int32{"pg-full": 1},
			want:    "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fits, err := placementFilter(tc.placement)
			if err != nil {
				t.Fatal(err)
			}
			if got := leastLoadedServer(pg, tc.servers, tc.tenants, fits); got != tc.want {
				t.Errorf("leastLoadedServer = %q, want %q", got, tc.want)
			}
		})
	}
}

// labelled is ds with the label tier=<tier>.
func labelled(ds tenancyv1alpha1.DatabaseServer, tier string) tenancyv1alpha1.DatabaseServer {
	ds.Labels = map[string]string{"tier": tier}
	return ds
}
