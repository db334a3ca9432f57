package shutdown_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/landlord-dev/landlord/internal/controller/shutdown"
)

func TestQuiet(t *testing.T) {
	canceled := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	timedOut := func() context.Context {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		t.Cleanup(cancel)
		return ctx
	}
	refused := errors.New("the API server refused the write")
	later := ctrl.Result{RequeueAfter: time.Minute}

	for _, tc := range []struct {
		name       string
		ctx        context.Context
		result     ctrl.Result
		err        error
		wantResult ctrl.Result
		wantErr    error
	}{
		{
			name: "a reconcile cut short because the operator stops is no error",
			ctx:  canceled(), err: fmt.Errorf("patching status: %w", context.Canceled),
		},
		{
			name: "neither is any error of a reconcile whose context the stop cancelled, whatever the client made of it",
			ctx:  canceled(), err: errors.New(`Patch "https://api/tenants/acme/status": context canceled`),
		},
		{
			name: "a reconcile that ran out of its time is an error, retried",
			ctx:  timedOut(), err: fmt.Errorf("listing: %w", context.DeadlineExceeded), wantErr: context.DeadlineExceeded,
		},
		{
			name: "an error while the operator runs is an error",
			ctx:  context.Background(), err: refused, wantErr: refused,
		},
		{
			name: "a cancelled call within a running reconcile is an error too: only the reconcile's own context says the operator stops",
			ctx:  context.Background(), err: context.Canceled, wantErr: context.Canceled,
		},
		{
			name: "a result without an error is passed on as it is",
			ctx:  context.Background(), result: later, wantResult: later,
		},
		{
			name: "and so is one of a reconcile that finished as the operator stopped",
			ctx:  canceled(), result: later, wantResult: later,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return tc.result, tc.err })
			result, err := shutdown.Quiet(inner).Reconcile(tc.ctx, reconcile.Request{})
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if result != tc.wantResult {
				t.Errorf("result %+v, want %+v", result, tc.wantResult)
			}
		})
	}
}
