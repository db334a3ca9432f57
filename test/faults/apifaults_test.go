package faults_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// writeFault is one way the API server fails a write, as a busy or failing control plane does.
type writeFault struct {
	name string
	// sent is whether the write reaches the API server first: its answer is then lost, so the
	// operator does not know whether its write happened.
	sent   bool
	code   int
	reason string
}

var writeFaults = []writeFault{
	{name: "conflict", code: http.StatusConflict, reason: "Conflict"},
	{name: "internal error", code: http.StatusInternalServerError, reason: "InternalError"},
	{name: "unavailable", code: http.StatusServiceUnavailable, reason: "ServiceUnavailable"},
	{name: "answer lost after the write", sent: true, code: http.StatusGatewayTimeout, reason: "Timeout"},
}

// faultyWrites fails a share of the writes (POST, PUT, PATCH, DELETE) a client sends, drawing
// the share and the fault from a seeded generator. It sits in the operator's own transport,
// and only a test puts it there. Reads and watches pass untouched.
type faultyWrites struct {
	mu       sync.Mutex
	rng      *rand.Rand
	injected map[string]int
	// drawn is how many writes were drawn for while a share was set: those that could fail.
	drawn int
	// permille of writes failed; 0 lets every write through.
	permille atomic.Int64
}

func newFaultyWrites(seed int) *faultyWrites {
	return &faultyWrites{rng: rand.New(rand.NewPCG(uint64(seed), 1)), injected: map[string]int{}}
}

// setShare fails that share (0 to 1) of the writes from now on.
func (f *faultyWrites) setShare(share float64) { f.permille.Store(int64(share * 1000)) }

// counts is how many writes each fault has failed so far.
func (f *faultyWrites) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.injected {
		out[k] = v
	}
	return out
}

// writes is how many writes could have failed: those sent while a share was set.
func (f *faultyWrites) writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drawn
}

// draw picks the fault for one write, or nil to let it through.
func (f *faultyWrites) draw(method string) *writeFault {
	if !slices.Contains([]string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}, method) {
		return nil
	}
	permille := f.permille.Load()
	if permille == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drawn++
	if f.rng.Int64N(1000) >= permille {
		return nil
	}
	fault := &writeFaults[f.rng.IntN(len(writeFaults))]
	f.injected[fault.name]++
	return fault
}

// Wrap is a rest.Config WrapTransport.
func (f *faultyWrites) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		fault := f.draw(req.Method)
		if fault == nil {
			return rt.RoundTrip(req)
		}
		if fault.sent {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				return nil, err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		} else if req.Body != nil {
			// A RoundTripper closes the body whatever it does with the request.
			req.Body.Close()
		}
		return statusResponse(req, fault), nil
	})
}

// statusResponse is the API server's answer for a failed request: a metav1.Status body, which
// client-go turns into the error it would return for the real failure.
func statusResponse(req *http.Request, fault *writeFault) *http.Response {
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"injected fault: %s","reason":%q,"code":%d}`,
		strings.ReplaceAll(fault.name, `"`, ``), fault.reason, fault.code)
	return &http.Response{
		StatusCode:    fault.code,
		Status:        fmt.Sprintf("%d %s", fault.code, http.StatusText(fault.code)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewBufferString(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
