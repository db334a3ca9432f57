package usage

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestDatabasesKeepTheirLastFigureWhereTheServerCouldNotBeAsked(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{
		Databases: []tenancyv1alpha1.DatabaseStatus{
			{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg", Database: "t_acme_app"},
			{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Server: "my", Database: "t_acme_legacy"},
			{Engine: tenancyv1alpha1.EnginePostgres, Name: "new", Server: "down", Database: "t_acme_new"},
		},
		Usage: &tenancyv1alpha1.TenantUsage{Databases: []tenancyv1alpha1.DatabaseUsage{
			{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Bytes: 700},
			{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: 100},
		}},
	}}
	sizes := serverSizes{
		byServer: map[string]map[string]int64{"pg": {"t_acme_app": 150, "t_other_app": 9}},
		failed:   map[string]bool{"my": true, "down": true},
	}
	got, unmeasured := databases(tenant, sizes)
	if unmeasured != 0 {
		t.Errorf("%d databases counted unmeasured; every server that answered reported its database", unmeasured)
	}
	want := []tenancyv1alpha1.DatabaseUsage{
		// Listed by engine, then name.
		{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Bytes: 700},
		{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: 150},
	}
	if len(got) != len(want) {
		t.Fatalf("databases = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("databases[%d] = %+v, want %+v (a server that failed keeps the last figure; a database never measured is left out)", i, got[i], want[i])
		}
	}
}

func TestADatabaseItsServerDidNotReportIsCounted(t *testing.T) {
	tenant := &tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{
		Databases: []tenancyv1alpha1.DatabaseStatus{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Server: "pg", Database: "t_acme_app"}},
		Usage:     &tenancyv1alpha1.TenantUsage{Databases: []tenancyv1alpha1.DatabaseUsage{{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: 100}}},
	}}
	got, unmeasured := databases(tenant, serverSizes{byServer: map[string]map[string]int64{"pg": {}}})
	if unmeasured != 1 || len(got) != 1 || got[0].Bytes != 100 {
		t.Errorf("databases = %+v, %d unmeasured; want the last figure kept, and 1 unmeasured", got, unmeasured)
	}
}

func TestTheSamplerCoversTheTenantsItsShardWrites(t *testing.T) {
	reconciled := []metav1.Condition{{Type: tenancyv1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		shard  string
		tenant tenancyv1alpha1.Tenant
		want   bool
	}{
		{"an Active tenant of the default shard is sampled", "", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, true},
		{"an Archived tenant is sampled: its databases are kept", "", tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{State: tenancyv1alpha1.StateArchived}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, true},
		{"a Purged tenant is sampled, to nothing: what it used is gone", "", tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{State: tenancyv1alpha1.StatePurged}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, true},
		{"a suspended tenant is not: nothing of it is written", "", tenancyv1alpha1.Tenant{Spec: tenancyv1alpha1.TenantSpec{Suspend: true}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, false},
		{"a tenant being deleted is not", "", tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: tenancyv1alpha1.TenantStatus{Conditions: reconciled}}, false},
		{"a tenant never reconciled is not yet", "", tenancyv1alpha1.Tenant{}, false},
		{"another shard's tenant is not", "", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Shard: "b", Conditions: reconciled}}, false},
		{"a shard samples its own", "b", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Shard: "b", Conditions: reconciled}}, true},
		{"a tenant being handed over is not", "b", tenancyv1alpha1.Tenant{Status: tenancyv1alpha1.TenantStatus{Shard: "b", HandoverTo: ptr.To("c"), Conditions: reconciled}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sampler{Shard: tc.shard}
			if got := s.covers(&tc.tenant); got != tc.want {
				t.Errorf("covers = %v, want %v", got, tc.want)
			}
		})
	}
}
