package shutdown_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/landlord-dev/landlord/internal/controller/shutdown"
)

// An event the broadcaster could not write, or a response a reconcile could not read, because the
// operator was stopping is a debug line; any other error, the same message for another cause
// included, is still an error.
func TestQuietLoggerTurnsOnlyWhatAStopCutShortIntoDebugLines(t *testing.T) {
	canceled := fmt.Errorf(`Post "https://127.0.0.1:6443/apis/events.k8s.io/v1/namespaces/default/events": %w`, context.Canceled)
	cases := []struct {
		name string
		err  error
		msg  string
		want string
	}{
		{"an event in flight when the operator stops is logged at debug level", canceled, "Unable to write event (may retry after sleeping)", `"level"=1`},
		{"an event refused for another reason stays an error", errors.New("forbidden"), "Unable to write event (may retry after sleeping)", `"error"="forbidden"`},
		{"a response cut short when the operator stops is logged at debug level", canceled, "Unexpected error when reading response body", `"level"=1`},
		{"a response cut short for another reason stays an error", errors.New("unexpected EOF"), "Unexpected error when reading response body", `"error"="unexpected EOF"`},
		{"another error of a stopping operator stays an error", canceled, "Reconciler error", `"msg"="Reconciler error" "error"=`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			log := shutdown.QuietLogger(funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1}))
			log.WithName("events").WithValues("k", "v").Error(tc.err, tc.msg)
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("logged %q, want one line with %s", lines, tc.want)
			}
		})
	}
	t.Run("at the default verbosity the stopped write logs nothing", func(t *testing.T) {
		var lines []string
		log := shutdown.QuietLogger(funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
		log.Error(canceled, "Unable to write event (may retry after sleeping)")
		if len(lines) != 0 {
			t.Errorf("logged %q, want nothing", lines)
		}
	})
}
