package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

func TestUsageReport(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	sampled := metav1.NewTime(now.Add(-10 * time.Minute))
	// What the metrics API reported; crux's pods were never measured.
	used := map[string]corev1.ResourceList{
		"acme": {corev1.ResourceCPU: resource.MustParse("420m"), corev1.ResourceMemory: resource.MustParse("300Mi")},
		"bolt": {corev1.ResourceCPU: resource.MustParse("900m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
	}
	tenant := func(name, costCode string, created time.Time, state tenancyv1alpha1.TenantState, cpu, memory string, db int64) tenancyv1alpha1.Tenant {
		t := tenancyv1alpha1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Labels: map[string]string{"plan": "pro"}},
			Spec:       tenancyv1alpha1.TenantSpec{Organization: strings.ToUpper(name) + " Inc.", CostCode: costCode, State: state},
		}
		if cpu != "" {
			t.Status.Usage = &tenancyv1alpha1.TenantUsage{SampledAt: sampled, Resources: corev1.ResourceList{
				corev1.ResourceRequestsCPU: resource.MustParse(cpu), corev1.ResourceRequestsMemory: resource.MustParse(memory),
				corev1.ResourcePods: resource.MustParse("3"),
			}, Used: used[name], Databases: []tenancyv1alpha1.DatabaseUsage{
				{Engine: tenancyv1alpha1.EngineMySQL, Name: "legacy", Bytes: db / 4},
				{Engine: tenancyv1alpha1.EnginePostgres, Name: "app", Bytes: db - db/4},
			}}
		}
		return t
	}
	fleet := []tenancyv1alpha1.Tenant{
		tenant("acme", "cc-1", time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), "", "1500m", "2Gi", 4_000_000),
		tenant("bolt", "cc-2", time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC), tenancyv1alpha1.StateFrozen, "250m", "8Gi", 1_000),
		tenant("crux", "cc-1", time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), tenancyv1alpha1.StateArchived, "", "", 0),
		tenant("dawn", "cc-3", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "", "1", "1Gi", 5),
	}
	names := func(rows []usageRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.Tenant)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		opts usageOptions
		want []string
	}{
		{"the current month lists every tenant that existed in it, by name", usageOptions{sortBy: "tenant"}, []string{"acme", "bolt", "crux"}},
		{"a cost code selects its tenants", usageOptions{sortBy: "tenant", costCode: "cc-1"}, []string{"acme", "crux"}},
		{"states select their tenants", usageOptions{sortBy: "tenant", states: []string{"Frozen", "Archived"}}, []string{"bolt", "crux"}},
		{"a label selector selects its tenants", usageOptions{sortBy: "tenant", selector: "plan!=pro"}, nil},
		{"sorted by CPU requested, the largest comes first", usageOptions{sortBy: "cpu"}, []string{"acme", "bolt", "crux"}},
		{"sorted by memory requested, the largest comes first", usageOptions{sortBy: "memory"}, []string{"bolt", "acme", "crux"}},
		{"sorted by CPU used, the largest comes first and the unmeasured last", usageOptions{sortBy: "cpu-used"}, []string{"bolt", "acme", "crux"}},
		{"sorted by memory used, the largest comes first and the unmeasured last", usageOptions{sortBy: "memory-used"}, []string{"acme", "bolt", "crux"}},
		{"sorted by days in the period, the oldest tenant comes first", usageOptions{sortBy: "days"}, []string{"acme", "bolt", "crux"}},
		{"a month before a tenant's creation leaves it out", usageOptions{sortBy: "tenant", period: "2026-10"}, []string{"acme"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.output = "table"
			q, err := tc.opts.query(now)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(usageReport(fleet, q)); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("tenants = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("days are prorated from a tenant's creation to now, within the period", func(t *testing.T) {
		q, err := (&usageOptions{output: "csv", sortBy: "tenant", period: "2026-11"}).query(now)
		if err != nil {
			t.Fatal(err)
		}
		days := map[string]float64{}
		for _, r := range usageReport(fleet, q) {
			days[r.Tenant] = r.DaysInPeriod
		}
		// The period runs to the end of November, but nothing is known past now.
		want := map[string]float64{"acme": 26.5, "bolt": 7, "crux": 1}
		for name, d := range want {
			if days[name] != d {
				t.Errorf("%s: %v days in the period, want %v", name, days[name], d)
			}
		}
	})

	t.Run("CSV holds raw numbers, one row per tenant after the header", func(t *testing.T) {
		q, _ := (&usageOptions{output: "csv", sortBy: "tenant"}).query(now)
		var out bytes.Buffer
		if err := writeUsage(&out, "csv", usageReport(fleet, q)); err != nil {
			t.Fatal(err)
		}
		records, err := csv.NewReader(&out).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(records) != 4 {
			t.Fatalf("%d records, want a header and 3 rows:\n%v", len(records), records)
		}
		row := map[string]string{}
		for i, col := range records[0] {
			row[col] = records[1][i]
		}
		for col, want := range map[string]string{
			"tenant": "acme", "cost_code": "cc-1", "cpu_requests_millicores": "1500", "memory_requests_bytes": "2147483648",
			"pods": "3", "database_bytes": "4000000", "sampled_at": "2026-11-27T11:50:00Z", "days_in_period": "26.5000",
			"cpu_used_millicores": "420", "memory_used_bytes": "314572800",
		} {
			if row[col] != want {
				t.Errorf("%s = %q, want %q", col, row[col], want)
			}
		}
		if used := records[3][len(records[3])-2:]; used[0] != "" || used[1] != "" {
			t.Errorf("a tenant whose pods were not measured has used %q, want blanks, not zeros", used)
		}
		if records[3][8] != "" {
			t.Errorf("a tenant never sampled has sampled_at %q, want empty", records[3][8])
		}
	})

	t.Run("JSON lists each database", func(t *testing.T) {
		q, _ := (&usageOptions{output: "json", sortBy: "tenant", costCode: "cc-2"}).query(now)
		var out bytes.Buffer
		if err := writeUsage(&out, "json", usageReport(fleet, q)); err != nil {
			t.Fatal(err)
		}
		var rows []usageRow
		if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || len(rows[0].Databases) != 2 || rows[0].DatabaseSize != 1_000 || rows[0].Databases[1].Name != "app" {
			t.Errorf("rows = %+v", rows)
		}
	})

	for _, tc := range []struct {
		name string
		opts usageOptions
		want string
	}{
		{"an unknown format", usageOptions{output: "xml", sortBy: "tenant"}, "--output"},
		{"an unknown sort key", usageOptions{output: "csv", sortBy: "price"}, "--sort-by"},
		{"an unknown state", usageOptions{output: "csv", sortBy: "tenant", states: []string{"Gone"}}, "--state"},
		{"a month that is not one", usageOptions{output: "csv", sortBy: "tenant", period: "November"}, "--period"},
		{"a period and dates both", usageOptions{output: "csv", sortBy: "tenant", period: "2026-11", since: "2026-11-01"}, "one or the other"},
		{"a period that ends before it starts", usageOptions{output: "csv", sortBy: "tenant", since: "2026-11-20", until: "2026-11-10"}, "ends"},
	} {
		t.Run(tc.name+" is refused, naming the flag", func(t *testing.T) {
			_, err := tc.opts.query(now)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}
