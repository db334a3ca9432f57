// Package shutdown keeps the operator's stop out of its error log. When the manager stops, it
// cancels the context of every reconcile under way; their requests to the API server then fail
// with "context canceled", and controller-runtime would log each as a "Reconciler error" with a
// stack trace and count it in controller_runtime_reconcile_errors_total. Nothing failed: the
// next process reconciles every object as it starts.
package shutdown

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Quiet wraps a reconciler so that an error it returns once its own context was cancelled (the
// operator stopping, or losing its lease) is logged at debug level and not returned. A context
// that ran out of time (the controller's reconcile timeout) is an error as before, and so is a
// cancelled call inside a reconcile whose own context still runs.
func Quiet(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		result, err := r.Reconcile(ctx, req)
		if err != nil && Stopping(ctx) {
			log.FromContext(ctx).V(1).Info("reconcile cut short: the operator is stopping", "error", err.Error())
			return reconcile.Result{}, nil
		}
		return result, err
	})
}

// Stopping reports whether ctx was cancelled rather than timed out: the operator is stopping.
func Stopping(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled)
}
