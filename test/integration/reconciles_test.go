package integration

import (
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// tenantReconciles counts the tenant controller's finished reconciles per tenant. The
// operator's metrics count reconciles of all tenants together, so a test that resyncs some
// tenants could not tell from them that each one was reached.
var tenantReconciles = &reconcileCounter{byTenant: map[string]int{}}

type reconcileCounter struct {
	mu       sync.Mutex
	byTenant map[string]int
}

// of is how many reconciles of the tenant have finished, whatever their result.
func (c *reconcileCounter) of(tenant string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byTenant[tenant]
}

func (c *reconcileCounter) finished(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byTenant[tenant]++
}

// countingSink passes every log line on to next, and counts the line controller-runtime logs
// at the end of each tenant reconcile, which names the tenant. Those lines are at a verbosity
// tests do not print, so it asks for every level and prints only what next would.
type countingSink struct {
	next    logr.LogSink
	counter *reconcileCounter
	// values are the key/value pairs this logger was given, oldest first.
	values []any
}

func newCountingSink(next logr.LogSink, counter *reconcileCounter) logr.LogSink {
	return &countingSink{next: next, counter: counter}
}

func (s *countingSink) Init(info logr.RuntimeInfo) {
	s.next.Init(logr.RuntimeInfo{CallDepth: info.CallDepth + 1})
}

func (s *countingSink) Enabled(int) bool { return true }

func (s *countingSink) Info(level int, msg string, keysAndValues ...any) {
	if msg == "Reconcile successful" || strings.HasPrefix(msg, "Reconcile done") {
		s.count(keysAndValues)
	}
	if recordedMessages[msg] {
		landlordLogs.add(msg, append(append([]any{}, s.values...), keysAndValues...))
	}
	if s.next.Enabled(level) {
		s.next.Info(level, msg, keysAndValues...)
	}
}

func (s *countingSink) Error(err error, msg string, keysAndValues ...any) {
	if msg == "Reconciler error" {
		s.count(keysAndValues)
	}
	s.next.Error(err, msg, keysAndValues...)
}

func (s *countingSink) count(keysAndValues []any) {
	all := append(append([]any{}, s.values...), keysAndValues...)
	if value(all, "controller") == "tenant" {
		if name, ok := value(all, "name").(string); ok {
			s.counter.finished(name)
		}
	}
}

// value is the last value given for key.
func value(keysAndValues []any, key string) any {
	var found any
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		if keysAndValues[i] == key {
			found = keysAndValues[i+1]
		}
	}
	return found
}

func (s *countingSink) WithValues(keysAndValues ...any) logr.LogSink {
	values := append(append([]any{}, s.values...), keysAndValues...)
	return &countingSink{next: s.next.WithValues(keysAndValues...), counter: s.counter, values: values}
}

func (s *countingSink) WithName(name string) logr.LogSink {
	return &countingSink{next: s.next.WithName(name), counter: s.counter, values: s.values}
}

// WithCallDepth keeps the caller the next sink reports the line's own.
func (s *countingSink) WithCallDepth(depth int) logr.LogSink {
	next := s.next
	if d, ok := next.(logr.CallDepthLogSink); ok {
		next = d.WithCallDepth(depth)
	}
	return &countingSink{next: next, counter: s.counter, values: s.values}
}

// recordedMessages are Landlord's log lines that tests read back (landlordLogs).
var recordedMessages = map[string]bool{
	"tenant stalled": true, "database provisioned": true, "database dropped": true, "drift repaired": true,
}

// landlordLogs keeps the lines of recordedMessages with every key and value they carry, those
// of the loggers they were made from included.
var landlordLogs = &logRecorder{}

type logRecorder struct {
	mu    sync.Mutex
	lines []logLine
}

// logLine is one log line: its message and its values by key (the last value of a key given
// twice, as a JSON reader would keep it; keys counts how often each was given).
type logLine struct {
	msg    string
	values map[string]any
	keys   map[string]int
}

func (r *logRecorder) add(msg string, keysAndValues []any) {
	line := logLine{msg: msg, values: map[string]any{}, keys: map[string]int{}}
	for i := 0; i+1 < len(keysAndValues); i += 2 {
		if k, ok := keysAndValues[i].(string); ok {
			line.values[k] = keysAndValues[i+1]
			line.keys[k]++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
}

// find returns the lines with the message whose values include want.
func (r *logRecorder) find(msg string, want map[string]any) []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logLine
	for _, l := range r.lines {
		if l.msg != msg {
			continue
		}
		match := true
		for k, v := range want {
			match = match && l.values[k] == v
		}
		if match {
			out = append(out, l)
		}
	}
	return out
}
