package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// usageOptions are the flags of landlordctl usage.
type usageOptions struct {
	output   string
	selector string
	costCode string
	states   []string
	period   string
	since    string
	until    string
	sortBy   string
}

// usageSortKeys are what --sort-by accepts: names sort A to Z, quantities largest first.
var usageSortKeys = []string{"tenant", "cost-code", "days", "cpu", "memory", "cpu-used", "memory-used", "storage", "database"}

func newUsageCommand(root *rootOptions) *cobra.Command {
	o := &usageOptions{}
	cmd := &cobra.Command{
		Use:   "usage [TENANT...]",
		Short: "Report what each tenant uses, for billing: a table, CSV or JSON.",
		Long: `Report what each tenant uses, as the operator last sampled it (usage.interval): CPU and memory
requested and limited, storage requested by volume claims and object counts (what the tenant
namespace's ResourceQuota counts), CPU and memory its pods use (where the cluster serves the
metrics API: "-" in the table, blank in CSV and null in JSON otherwise), the bytes each database holds on its server, the tenant's cost
code, and the days of the period the tenant existed (for prorating a tenant created during it).

The period is --period (a month, YYYY-MM) or --since and --until (dates or RFC 3339 times), by
default the current month up to now, in UTC. The report covers the tenants that exist when it
runs: a billing job that must also bill tenants deleted during the period runs it daily and keeps
what it printed. -o csv and -o json hold raw numbers (millicores, bytes) for a billing system;
the table is for people.`,
		Example: `  landlordctl usage
  landlordctl usage --period 2026-11 -o csv > usage-2026-11.csv
  landlordctl usage -l plan=enterprise --sort-by database
  landlordctl usage --cost-code cc-1001 --state Active,Frozen -o json`,
		ValidArgsFunction: completeNamesOf(root, kindOf("Tenant"), -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUsage(cmd.Context(), root, o, args, time.Now().UTC())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "table", "Output format: table|csv|json.")
	f.StringVarP(&o.selector, "selector", "l", "", "Only tenants with these labels (a label selector, as kubectl's -l).")
	f.StringVar(&o.costCode, "cost-code", "", "Only tenants with this cost code (spec.costCode).")
	f.StringSliceVar(&o.states, "state", nil, "Only tenants in these states (Active, Frozen, Archived, Purged; comma separated).")
	f.StringVar(&o.period, "period", "", "The month reported, as YYYY-MM (UTC).")
	f.StringVar(&o.since, "since", "", "Start of the period reported: a date (YYYY-MM-DD) or an RFC 3339 time.")
	f.StringVar(&o.until, "until", "", "End of the period reported (not included): a date or an RFC 3339 time; now when in the future.")
	f.StringVar(&o.sortBy, "sort-by", "tenant", "Sort by "+strings.Join(usageSortKeys, "|")+": names A to Z, quantities largest first.")
	_ = cmd.RegisterFlagCompletionFunc("output", completeFrom([]string{"table", "csv", "json"}))
	_ = cmd.RegisterFlagCompletionFunc("sort-by", completeFrom(usageSortKeys))
	_ = cmd.RegisterFlagCompletionFunc("state", completeFrom([]string{"Active", "Frozen", "Archived", "Purged"}))
	return cmd
}

func runUsage(ctx context.Context, root *rootOptions, o *usageOptions, names []string, now time.Time) error {
	q, err := o.query(now)
	if err != nil {
		return asUsage(err)
	}
	c, err := root.client()
	if err != nil {
		return err
	}
	tenants, err := readTenants(ctx, c, q.selector, names)
	if err != nil {
		return err
	}
	return writeUsage(root.out, o.output, usageReport(tenants, q))
}

// usageQuery is what the flags ask for, checked.
type usageQuery struct {
	selector     labels.Selector
	costCode     string
	states       map[tenancyv1alpha1.TenantState]bool
	since, until time.Time
	now          time.Time
	sortBy       string
}

func (o *usageOptions) query(now time.Time) (usageQuery, error) {
	q := usageQuery{costCode: o.costCode, now: now, sortBy: o.sortBy}
	switch o.output {
	case "table", "csv", "json":
	default:
		return q, fmt.Errorf("--output %q: use table, csv or json", o.output)
	}
	if !slices.Contains(usageSortKeys, o.sortBy) {
		return q, fmt.Errorf("--sort-by %q: use one of %s", o.sortBy, strings.Join(usageSortKeys, ", "))
	}
	var err error
	if q.selector, err = labels.Parse(o.selector); err != nil {
		return q, fmt.Errorf("--selector: %w", err)
	}
	for _, s := range o.states {
		state := tenancyv1alpha1.TenantState(s)
		switch state {
		case tenancyv1alpha1.StateActive, tenancyv1alpha1.StateFrozen, tenancyv1alpha1.StateArchived, tenancyv1alpha1.StatePurged:
		default:
			return q, fmt.Errorf("--state %q: use Active, Frozen, Archived or Purged", s)
		}
		if q.states == nil {
			q.states = map[tenancyv1alpha1.TenantState]bool{}
		}
		q.states[state] = true
	}
	switch {
	case o.period != "" && (o.since != "" || o.until != ""):
		return q, fmt.Errorf("--period and --since/--until: give one or the other")
	case o.period != "":
		month, err := time.Parse("2006-01", o.period)
		if err != nil {
			return q, fmt.Errorf("--period %q is not a month such as 2026-11", o.period)
		}
		q.since, q.until = month, month.AddDate(0, 1, 0)
	default:
		q.since = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		q.until = now
		if o.since != "" {
			if q.since, err = parseWhen(o.since); err != nil {
				return q, fmt.Errorf("--since: %w", err)
			}
		}
		if o.until != "" {
			if q.until, err = parseWhen(o.until); err != nil {
				return q, fmt.Errorf("--until: %w", err)
			}
		}
	}
	if !q.until.After(q.since) {
		return q, fmt.Errorf("the period ends (%s) before it starts (%s)", q.until.Format(time.RFC3339), q.since.Format(time.RFC3339))
	}
	return q, nil
}

func parseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a date (YYYY-MM-DD) nor an RFC 3339 time", s)
	}
	return t.UTC(), nil
}

// usageRow is one tenant's line of the report; its JSON is the report's -o json.
type usageRow struct {
	Tenant       string     `json:"tenant"`
	Organization string     `json:"organization"`
	State        string     `json:"state"`
	CostCode     string     `json:"costCode"`
	Created      time.Time  `json:"created"`
	PeriodStart  time.Time  `json:"periodStart"`
	PeriodEnd    time.Time  `json:"periodEnd"`
	DaysInPeriod float64    `json:"daysInPeriod"`
	Sampled      *time.Time `json:"sampledAt"`
	CPURequests  int64      `json:"cpuRequestsMillicores"`
	MemRequests  int64      `json:"memoryRequestsBytes"`
	CPULimits    int64      `json:"cpuLimitsMillicores"`
	MemLimits    int64      `json:"memoryLimitsBytes"`
	// CPUUsed and MemUsed are nil where the cluster serves no metrics API.
	CPUUsed      *int64          `json:"cpuUsedMillicores"`
	MemUsed      *int64          `json:"memoryUsedBytes"`
	Storage      int64           `json:"storageRequestsBytes"`
	Pods         int64           `json:"pods"`
	Services     int64           `json:"services"`
	Secrets      int64           `json:"secrets"`
	ConfigMaps   int64           `json:"configMaps"`
	Claims       int64           `json:"persistentVolumeClaims"`
	DatabaseSize int64           `json:"databaseBytes"`
	Databases    []usageDatabase `json:"databases"`
}

type usageDatabase struct {
	Engine string `json:"engine"`
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
}

// usageReport is the rows of the tenants the query selects, sorted as it asks.
func usageReport(tenants []tenancyv1alpha1.Tenant, q usageQuery) []usageRow {
	end := q.until
	if end.After(q.now) {
		end = q.now
	}
	rows := []usageRow{}
	for i := range tenants {
		t := &tenants[i]
		state := cmp.Or(t.Spec.State, tenancyv1alpha1.StateActive)
		if !q.selector.Matches(labels.Set(t.Labels)) || (q.costCode != "" && t.Spec.CostCode != q.costCode) || (q.states != nil && !q.states[state]) {
			continue
		}
		created := t.CreationTimestamp.UTC()
		if !created.Before(q.until) {
			continue
		}
		r := usageRow{
			Tenant: t.Name, Organization: t.Spec.Organization, State: string(state), CostCode: t.Spec.CostCode,
			Created: created, PeriodStart: q.since, PeriodEnd: q.until, Databases: []usageDatabase{},
		}
		if from := maxTime(created, q.since); end.After(from) {
			r.DaysInPeriod = float64(end.Sub(from)/time.Second) / (24 * 60 * 60)
		}
		if u := t.Status.Usage; u != nil {
			sampled := u.SampledAt.UTC()
			r.Sampled = &sampled
			milli := func(name corev1.ResourceName) int64 { q := u.Resources[name]; return q.MilliValue() }
			value := func(name corev1.ResourceName) int64 { q := u.Resources[name]; return q.Value() }
			r.CPURequests, r.CPULimits = milli(corev1.ResourceRequestsCPU), milli(corev1.ResourceLimitsCPU)
			r.MemRequests, r.MemLimits = value(corev1.ResourceRequestsMemory), value(corev1.ResourceLimitsMemory)
			r.Storage = value(corev1.ResourceRequestsStorage)
			if cpu, ok := u.Used[corev1.ResourceCPU]; ok {
				r.CPUUsed = ptr.To(cpu.MilliValue())
			}
			if memory, ok := u.Used[corev1.ResourceMemory]; ok {
				r.MemUsed = ptr.To(memory.Value())
			}
			r.Pods, r.Services, r.Secrets = value(corev1.ResourcePods), value(corev1.ResourceServices), value(corev1.ResourceSecrets)
			r.ConfigMaps, r.Claims = value(corev1.ResourceConfigMaps), value(corev1.ResourcePersistentVolumeClaims)
			for _, d := range u.Databases {
				r.Databases = append(r.Databases, usageDatabase{Engine: string(d.Engine), Name: d.Name, Bytes: d.Bytes})
				r.DatabaseSize += d.Bytes
			}
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b usageRow) int {
		largestFirst := func(x, y int64) int { return cmp.Compare(y, x) }
		var by int
		switch q.sortBy {
		case "cost-code":
			by = cmp.Compare(a.CostCode, b.CostCode)
		case "days":
			by = cmp.Compare(b.DaysInPeriod, a.DaysInPeriod)
		case "cpu":
			by = largestFirst(a.CPURequests, b.CPURequests)
		case "memory":
			by = largestFirst(a.MemRequests, b.MemRequests)
		case "cpu-used":
			by = largestFirst(ptr.Deref(a.CPUUsed, -1), ptr.Deref(b.CPUUsed, -1))
		case "memory-used":
			by = largestFirst(ptr.Deref(a.MemUsed, -1), ptr.Deref(b.MemUsed, -1))
		case "storage":
			by = largestFirst(a.Storage, b.Storage)
		case "database":
			by = largestFirst(a.DatabaseSize, b.DatabaseSize)
		}
		return cmp.Or(by, cmp.Compare(a.Tenant, b.Tenant))
	})
	return rows
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

var usageCSVHeader = []string{
	"tenant", "organization", "state", "cost_code", "created", "period_start", "period_end", "days_in_period", "sampled_at",
	"cpu_requests_millicores", "memory_requests_bytes", "cpu_limits_millicores", "memory_limits_bytes", "storage_requests_bytes",
	"pods", "services", "secrets", "configmaps", "persistentvolumeclaims", "database_bytes",
	"cpu_used_millicores", "memory_used_bytes",
}

func writeUsage(out io.Writer, format string, rows []usageRow) error {
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "csv":
		w := csv.NewWriter(out)
		_ = w.Write(usageCSVHeader)
		for _, r := range rows {
			sampled := ""
			if r.Sampled != nil {
				sampled = r.Sampled.Format(time.RFC3339)
			}
			n := func(v int64) string { return strconv.FormatInt(v, 10) }
			// Blank, not 0, where nothing was measured.
			maybe := func(v *int64) string {
				if v == nil {
					return ""
				}
				return n(*v)
			}
			_ = w.Write([]string{
				r.Tenant, r.Organization, r.State, r.CostCode, r.Created.Format(time.RFC3339),
				r.PeriodStart.Format(time.RFC3339), r.PeriodEnd.Format(time.RFC3339), strconv.FormatFloat(r.DaysInPeriod, 'f', 4, 64), sampled,
				n(r.CPURequests), n(r.MemRequests), n(r.CPULimits), n(r.MemLimits), n(r.Storage),
				n(r.Pods), n(r.Services), n(r.Secrets), n(r.ConfigMaps), n(r.Claims), n(r.DatabaseSize),
				maybe(r.CPUUsed), maybe(r.MemUsed),
			})
		}
		w.Flush()
		return w.Error()
	}
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "TENANT\tSTATE\tCOST CODE\tDAYS\tCPU REQ\tMEMORY REQ\tCPU USED\tMEMORY USED\tSTORAGE REQ\tPODS\tDATABASES\tSAMPLED")
	for _, r := range rows {
		sampled := "<never>"
		if r.Sampled != nil {
			sampled = r.Sampled.Format(time.RFC3339)
		}
		// "-" where the cluster serves no metrics API.
		cpuUsed, memUsed := "-", "-"
		if r.CPUUsed != nil {
			cpuUsed = resource.NewMilliQuantity(*r.CPUUsed, resource.DecimalSI).String()
		}
		if r.MemUsed != nil {
			memUsed = resource.NewQuantity(*r.MemUsed, resource.BinarySI).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Tenant, r.State, cmp.Or(r.CostCode, "<none>"), r.DaysInPeriod,
			resource.NewMilliQuantity(r.CPURequests, resource.DecimalSI), resource.NewQuantity(r.MemRequests, resource.BinarySI),
			cpuUsed, memUsed, resource.NewQuantity(r.Storage, resource.BinarySI), r.Pods, resource.NewQuantity(r.DatabaseSize, resource.BinarySI), sampled)
	}
	return w.Flush()
}
