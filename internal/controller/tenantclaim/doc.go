// Package tenantclaim reconciles TenantClaims: it binds each claim to one Ready spare of its
// pool, by a metadata patch of the spare carrying its resourceVersion, so that of two claims
// racing for a spare exactly one gets it.
//
// The shape every reconciler has:
//   - wiring: SetupWithManager (controller.go) and the handlers that bring a pool's Pending
//     claims back when a spare turns Ready or the pool appears, changes or goes (watches.go);
//   - Reconcile, a short list of named steps: get the claim, settle a Bound one, find a bind an
//     earlier reconcile made (boundBefore), get its pool, ask whether the pool binds it
//     (refusal, allowed.go), bind one of its Ready spares (bindOne), or say why it waits;
//   - computeStatus (status.go), a pure function of the claim and what the reconcile concluded
//     (an observation: bound to a tenant, or pending for a reason), written by setBound,
//     setPending and setRefused.
package tenantclaim
