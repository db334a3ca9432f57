// Package componentrollout reconciles ComponentRollouts: it moves the tenants that let rollouts
// move a component to the rollout's version, wave by wave. It writes only the rollout's status,
// which is its whole record (what was planned and released); a tenant learns that its wave is
// released from it.
//
// The shape every reconciler has:
//   - wiring: SetupWithManager (controller.go) and the handlers that bring a rollout back when a
//     tenant of its component changes, its template is published, or another rollout of its
//     component is deleted;
//   - Reconcile, a short list of named steps: get the rollout, parse its selector, find its
//     template, list the tenants that follow its component and the rollouts above it, choose
//     (rollout.Choose), forget the deleted tenants of finished waves (rollout.Forget), then
//     write the status;
//   - computeStatus (status.go), a pure function of the rollout and what the reconcile observed,
//     clock included: it plans the waves, counts where their tenants stand, releases the next
//     wave while the last is done, and says how long until it must look again.
package componentrollout
