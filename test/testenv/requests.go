package testenv

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// RequestCounter counts the requests a client sends, by verb and resource. Watches are left
// out: they are long-lived streams the informers open once, not per-reconcile work. So are
// PATCHes of events: the event broadcaster sends them on its own clock (every 6 minutes it
// brings the count of each repeated event up to date), and one landing in a test's window
// would be counted against whatever the test measures. A reconcile's own event is a POST, and
// counted.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

// NewRequestCounter returns an empty counter.
func NewRequestCounter() *RequestCounter { return &RequestCounter{counts: map[string]int{}} }

// Wrap is a rest.Config WrapTransport.
func (c *RequestCounter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		key := req.Method + " " + ResourceOf(req.URL.Path)
		if req.URL.Query().Get("watch") != "true" && key != "PATCH events" {
			c.mu.Lock()
			c.counts[key]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// Add counts one request under key ("METHOD resource").
func (c *RequestCounter) Add(key string) {
	c.mu.Lock()
	c.counts[key]++
	c.mu.Unlock()
}

// Snapshot returns the counts so far.
func (c *RequestCounter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Counts maps "METHOD resource" to a number of requests.
type Counts map[string]int

// Sub returns c minus before.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Total is the number of requests.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

func (c Counts) String() string {
	keys := slices.Sorted(maps.Keys(c))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, c[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// ResourceOf reduces an API path to its resource ("/api/v1/namespaces/x/roles/y" → "roles"),
// so the counts do not grow with object names.
func ResourceOf(path string) string {
	parts, ok := apiParts(path)
	switch {
	case !ok || len(parts) == 0:
		return path
	case len(parts) <= 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

// ServerKey is a request's "VERB resource" as the API server counts it: a GET of a collection
// ("/api/v1/namespaces/x/secrets") is a LIST, of one object a GET.
func ServerKey(method, path string) string {
	if parts, ok := apiParts(path); ok && method == http.MethodGet && len(parts) == 1 {
		method = "LIST"
	}
	return method + " " + ResourceOf(path)
}

// apiParts is an API path past its prefix (/api/v1, /apis/group/version) and its namespace
// (namespaces/x, unless the path names the namespace itself): [resource], [resource, name] or
// [resource, name, subresource]. ok is false for a path outside the API.
func apiParts(path string) ([]string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return nil, false
	}
	if len(parts) > 2 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return parts, true
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
