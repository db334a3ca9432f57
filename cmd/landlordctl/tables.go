package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// The tables `get` prints. Each has its CRD's printer columns, in the same order and at the same
// priority (wide for priority 1), so `landlordctl get` and `kubectl get` read alike; the extra
// columns say what kubectl's JSONPath columns cannot (the version each component runs, why a
// claim waits). TestGetTablesHaveTheColumnsOfTheCRDs holds them to the CRDs.

// tenantTable is the tenants as `get tenants` shows them; wide adds the organization and the
// Ready message.
func tenantTable(tenants []tenancyv1alpha1.Tenant) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "State", Type: "string"},
		{Name: "Ready", Type: "string"},
		{Name: "Reason", Type: "string"},
		// As kubectl's printer column: the conditions of a suspended tenant are as last observed.
		{Name: "Suspended", Type: "boolean"},
		{Name: "Namespace", Type: "string"},
		{Name: "Versions", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Class", Type: "string", Priority: 1},
		{Name: "Organization", Type: "string", Priority: 1},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, tenants, func(t *tenancyv1alpha1.Tenant) []any {
		state := string(t.Spec.State)
		if state == "" {
			state = string(tenancyv1alpha1.StateActive)
		}
		status, reason, message := readyOf(t.Status.Conditions)
		return []any{t.Name, state, status, orNone(reason), t.Spec.Suspend, orNone(t.Status.Namespace), orNone(versions(t)),
			age(t.CreationTimestamp), orNone(t.Spec.Class), orNone(t.OrganizationName()), orNone(message)}
	})
}

// claimTable is the claims as `get claims` shows them, with why a claim waits (REASON) and how
// long ago it was bound; wide adds the tenant's namespace and the claim's message.
func claimTable(claims []tenancyv1alpha1.TenantClaim) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Pool", Type: "string"},
		{Name: "Phase", Type: "string"},
		{Name: "Tenant", Type: "string"},
		{Name: "Reason", Type: "string"},
		{Name: "Bound", Type: "string"},
		{Name: "Age", Type: "string"},
		{Name: "Tenant Namespace", Type: "string", Priority: 1},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, claims, func(c *tenancyv1alpha1.TenantClaim) []any {
		bound := "<none>"
		if c.Status.BoundTime != nil {
			bound = age(*c.Status.BoundTime)
		}
		return []any{c.Name, c.Spec.Pool, orNone(string(c.Status.Phase)), orNone(c.Status.Tenant), orNone(c.Status.Reason), bound,
			age(c.CreationTimestamp), orNone(c.Status.Namespace), orNone(c.Status.Message)}
	})
}

// poolTable is the pools as `get pools` shows them: how many spares each keeps, and how many are
// Ready, on their way and handed out; wide adds the suspended spares, the cap on the pool's
// tenants and why the pool is not Ready.
func poolTable(pools []tenancyv1alpha1.TenantPool) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Replicas", Type: "integer"},
		{Name: "Ready", Type: "integer"},
		{Name: "Provisioning", Type: "integer"},
		{Name: "Allocated", Type: "integer"},
		{Name: "Suspended", Type: "integer", Priority: 1},
		{Name: "Max", Type: "integer", Priority: 1},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, pools, func(p *tenancyv1alpha1.TenantPool) []any {
		_, _, message := readyOf(p.Status.Conditions)
		var most any = "<none>"
		if p.Spec.MaxTenants != nil {
			most = int64(*p.Spec.MaxTenants)
		}
		return []any{p.Name, int64(p.Spec.Replicas), int64(p.Status.Ready), int64(p.Status.Provisioning), int64(p.Status.Allocated),
			int64(p.Status.Suspended), most, age(p.CreationTimestamp), orNone(message)}
	})
}

// rolloutTable is the rollouts as `get rollouts` shows them; wide adds the tenants left ahead,
// the waves released of all planned, and the Ready message.
func rolloutTable(rollouts []tenancyv1alpha1.ComponentRollout) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Component", Type: "string"},
		{Name: "Version", Type: "string"},
		{Name: "Ready", Type: "string"},
		{Name: "Reason", Type: "string"},
		{Name: "Done", Type: "integer"},
		{Name: "Failed", Type: "integer"},
		{Name: "Ahead", Type: "integer", Priority: 1},
		{Name: "Waves", Type: "string", Priority: 1},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, rollouts, func(r *tenancyv1alpha1.ComponentRollout) []any {
		status, reason, message := readyOf(r.Status.Conditions)
		return []any{r.Name, r.Spec.Component, r.Spec.Version, status, orNone(reason), int64(r.Status.Done), int64(r.Status.Failed),
			int64(r.Status.Ahead), fmt.Sprintf("%d/%d", r.Status.Released, len(r.Status.Waves)), age(r.CreationTimestamp), orNone(message)}
	})
}

// databaseServerTable is the database servers as `get databaseservers` shows them; wide adds the
// version the server reported and the Ready message.
func databaseServerTable(servers []tenancyv1alpha1.DatabaseServer) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Engine", Type: "string"},
		{Name: "Host", Type: "string"},
		{Name: "Ready", Type: "string"},
		{Name: "Tenants", Type: "integer"},
		{Name: "Version", Type: "string", Priority: 1},
		{Name: "Age", Type: "string"},
		{Name: "Message", Type: "string", Priority: 1},
	}}
	return withRows(table, servers, func(s *tenancyv1alpha1.DatabaseServer) []any {
		status, _, message := readyOf(s.Status.Conditions)
		return []any{s.Name, string(s.Spec.Engine), s.Spec.Host, status, int64(s.Status.Tenants), orNone(s.Status.ServerVersion),
			age(s.CreationTimestamp), orNone(message)}
	})
}

// templateTable is the published component templates as `get templates` shows them.
func templateTable(templates []tenancyv1alpha1.ComponentTemplate) *metav1.Table {
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name"},
		{Name: "Component", Type: "string"},
		{Name: "Version", Type: "string"},
		{Name: "Age", Type: "string"},
	}}
	return withRows(table, templates, func(t *tenancyv1alpha1.ComponentTemplate) []any {
		return []any{t.Name, t.Spec.Component, t.Spec.Version, age(t.CreationTimestamp)}
	})
}

// tableOf is one object as a row of its kind's table, for a watch.
func tableOf(k *resourceKind, obj runtime.Object) (*metav1.Table, error) {
	list := k.newList()
	if err := meta.SetList(list, []runtime.Object{obj}); err != nil {
		return nil, err
	}
	return k.table(list), nil
}

// withRows adds a row to table for each item, with its cells and the object itself (what -o
// name, --show-labels and -L read), and returns the table.
func withRows[T any, P interface {
	*T
	runtime.Object
}](table *metav1.Table, items []T, cells func(P) []any) *metav1.Table {
	for i := range items {
		obj := P(&items[i])
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells(obj), Object: runtime.RawExtension{Object: obj}})
	}
	return table
}
