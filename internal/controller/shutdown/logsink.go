package shutdown

import (
	"context"
	"errors"
	"strings"

	"github.com/go-logr/logr"
)

// QuietLogger is log with two errors of the operator's stop turned into debug lines, each logged
// by client-go at error level with a stack trace when the manager cancels its context: the
// event broadcaster's "Unable to write event" for each event still in flight (the event is
// dropped with the process), and "Unexpected error when reading response body" for each
// response a reconcile was reading (the reconcile stops; the next process does it again).
// Nothing failed. The same messages for any other cause stay errors.
func QuietLogger(log logr.Logger) logr.Logger {
	return log.WithSink(quietSink{log.GetSink()})
}

type quietSink struct{ logr.LogSink }

func (s quietSink) Error(err error, msg string, keysAndValues ...any) {
	if errors.Is(err, context.Canceled) && (strings.HasPrefix(msg, "Unable to write event") || msg == "Unexpected error when reading response body") {
		if s.Enabled(1) {
			s.LogSink.Info(1, msg, append(keysAndValues, "error", err.Error())...)
		}
		return
	}
	s.LogSink.Error(err, msg, keysAndValues...)
}

func (s quietSink) WithValues(keysAndValues ...any) logr.LogSink {
	return quietSink{s.LogSink.WithValues(keysAndValues...)}
}

func (s quietSink) WithName(name string) logr.LogSink { return quietSink{s.LogSink.WithName(name)} }

// WithCallDepth keeps the caller a line names the broadcaster's, not this wrapper's.
func (s quietSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.LogSink.(logr.CallDepthLogSink); ok {
		return quietSink{cd.WithCallDepth(depth)}
	}
	return s
}
