// Package priority lets the writes a customer is waiting on go ahead of the operator's
// background writes.
//
// On a control plane busy with a mass create, a signup's bind waits for CPU that the API server
// and etcd spend on Landlord's own background writes (tenants being created, a pool refilling).
// The API server's priority and fairness cannot tell the two apart: both come from the
// operator's one identity, and queue only when a level's seats are all taken, which 32
// reconciles never do. So the operator orders them itself: while a bind is under way, background
// writes start only while fewer than a few are in flight, and never wait longer than a bound, so
// a stream of signups slows tenant creation without stopping it.
package priority

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Gate holds background writes back while urgent work is under way. The zero value is not
// usable; use NewGate.
type Gate struct {
	// inFlight is how many background writes may be in flight while urgent work is under way.
	inFlight int
	// maxWait bounds how long one background write waits.
	maxWait time.Duration

	mu sync.Mutex
	// urgent counts the urgent work under way.
	urgent int
	// background counts the background writes in flight.
	background int
	// waiting counts the background writes waiting.
	waiting int
	// changed is closed, and replaced, when urgent or background falls while writes wait.
	changed chan struct{}
}

// NewGate returns a gate that lets inFlight background writes run while urgent work is under
// way, each waiting at most maxWait. inFlight below 0 disables the gate: nothing ever waits.
func NewGate(inFlight int, maxWait time.Duration) *Gate {
	return &Gate{inFlight: inFlight, maxWait: maxWait, changed: make(chan struct{})}
}

// Urgent marks urgent work under way until release is called; release is idempotent.
func (g *Gate) Urgent() (release func()) {
	if g == nil || g.inFlight < 0 {
		return func() {}
	}
	g.mu.Lock()
	g.urgent++
	urgentWork.Inc()
	g.mu.Unlock()
	return g.ending(&g.urgent, urgentWork.Dec)
}

// ending returns the idempotent function that takes one off *count (and calls also) and wakes
// the waiting writes to look again.
func (g *Gate) ending(count *int, also func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			*count--
			also()
			g.signal()
			g.mu.Unlock()
		})
	}
}

// signal wakes every waiting write to look again. Called with mu held.
func (g *Gate) signal() {
	if g.waiting == 0 {
		return
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

// Background waits until a background write may start (no urgent work, or fewer than the gate's
// in-flight writes, or maxWait passed, or ctx done), counts it in flight, and returns the
// function that ends it. A write whose context ends while waiting still goes: the request then
// fails on its own context, which is the caller's error to see, not the gate's.
func (g *Gate) Background(ctx context.Context) (done func()) {
	if g == nil || g.inFlight < 0 {
		return func() {}
	}
	g.mu.Lock()
	if g.urgent > 0 && g.background >= g.inFlight {
		g.wait(ctx)
	}
	g.background++
	g.mu.Unlock()
	return g.ending(&g.background, func() {})
}

// wait blocks until urgent work is done, or the in-flight writes fall below the gate's count, or
// maxWait passes, or ctx ends. Called with mu held, and returns with it held.
func (g *Gate) wait(ctx context.Context) {
	start := time.Now()
	timer := time.NewTimer(g.maxWait)
	defer timer.Stop()
	g.waiting++
	waitingWrites.Inc()
	defer func() {
		g.waiting--
		waitingWrites.Dec()
		heldWrites.Inc()
		heldSeconds.Add(time.Since(start).Seconds())
	}()
	for g.urgent > 0 && g.background >= g.inFlight {
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
		}
		g.mu.Lock()
		if ctx.Err() != nil || time.Since(start) >= g.maxWait {
			return
		}
	}
}

// Transport returns rt with every background write through it passing the gate first. Reads,
// watches, the leader's lease renewals (held back, one could cost the operator its
// leadership) and reviews (the questions a metrics scrape's authentication asks, sent as
// POSTs) never wait.
func (g *Gate) Transport(rt http.RoundTripper) http.RoundTripper {
	return &gatedTransport{gate: g, next: rt}
}

type gatedTransport struct {
	gate *Gate
	next http.RoundTripper
}

func (t *gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isBackgroundWrite(req) {
		return t.next.RoundTrip(req)
	}
	done := t.gate.Background(req.Context())
	defer done()
	return t.next.RoundTrip(req)
}

// isBackgroundWrite is whether req writes something other than a lease: not a read, not a
// review.
func isBackgroundWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	for _, group := range neverHeld {
		// Anywhere in the path: a proxy in front of the API server (Rancher's, Teleport's,
		// kubectl proxy's) puts a prefix of its own before /apis.
		if strings.Contains(req.URL.Path, group) {
			return false
		}
	}
	return true
}

// neverHeld are the API groups whose requests never wait: leases, and reviews, which write
// nothing.
var neverHeld = []string{
	"/apis/coordination.k8s.io/",
	"/apis/authentication.k8s.io/",
	"/apis/authorization.k8s.io/",
}

// WrappedRoundTripper exposes the transport under the gate, as client-go's own wrappers do.
func (t *gatedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
