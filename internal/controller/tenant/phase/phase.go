// Package phase is what a phase of the tenant reconciler, and each engine a phase calls,
// observed: one Result, the same for every phase, which the tenant's status sums into its
// conditions.
package phase

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// Result is what a phase observed. Exactly one of three holds: Done (its concern has
// converged), Stalled (it cannot converge without a person), or neither (in progress, or a
// transient error in Err that is retried with backoff). RequeueAfter, when set, is when the
// phase has more to do that no watched event reports (a maintenance window opening), whatever
// its outcome now.
type Result struct {
	Done         bool
	Stalled      bool
	Reason       string
	Message      string
	Err          error
	RequeueAfter time.Duration
}

// After is r asking to be looked at again after d (RequeueAfter), or sooner if it asked so.
func (r Result) After(d time.Duration) Result {
	r.RequeueAfter = Sooner(r.RequeueAfter, d)
	return r
}

// Sooner is the sooner of two requeue delays, where 0 is none.
func Sooner(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// Done: the phase's concern has converged.
func Done(reason, format string, args ...any) Result {
	return Result{Done: true, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Stalled: the phase cannot converge until a person acts.
func Stalled(reason, format string, args ...any) Result {
	return Result{Stalled: true, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Progressing: work is under way and an event reports its end.
func Progressing(reason, format string, args ...any) Result {
	return Result{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Failed: a transient error, reported with its own message and retried with backoff.
func Failed(reason string, err error) Result {
	return Result{Reason: reason, Message: err.Error(), Err: err}
}

// Failedf is Failed with an error of the formatted message.
func Failedf(reason, format string, args ...any) Result {
	return Failed(reason, fmt.Errorf(format, args...))
}

// ApplyFailed classifies a write of obj the API server refused, records it on the tenant, and
// says what the phase observed: the tenant reconciler's, handed to each engine that writes.
type ApplyFailed func(t *tenancyv1alpha1.Tenant, obj client.Object, err error) Result
