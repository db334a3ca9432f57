// Package tenantpool reconciles TenantPools: it keeps each pool's unallocated spare tenants at
// spec.replicas, within spec.maxProvisioning and spec.maxTenants, and lets a deleted pool go once
// its spares are gone. Allocated tenants are counted, never touched.
//
// The shape every reconciler has:
//   - wiring: SetupWithManager (controller.go) and the handlers that map a tenant's event to the
//     pool it can change, keeping the count of allocated tenants on the way (watches.go);
//   - Reconcile, a short list of named steps: get the pool, list its unallocated tenants, finalize
//     a deleted pool, ensure the finalizer, sort the spares by role (poolRoleOf), plan (planPool),
//     create and delete spares, then write the status;
//   - computeStatus (status.go), a pure function of the pool and what the reconcile observed
//     (an observation: its spares by role, its allocated tenants), which the status write
//     writes only when it changed.
package tenantpool
