package secrettest

import (
	"bytes"
	"io"
	"net/http"
	"sync/atomic"
)

// Hangable stands in front of a real server's handler and can make it stop answering, as a
// network that drops packets does: a request that arrives while it hangs waits until its
// client gives up (the connection is closed, which ends the request's context) or the hang is
// lifted. It counts the requests a client gave up on.
type Hangable struct {
	next    http.Handler
	hang    atomic.Pointer[chan struct{}]
	gaveUp  atomic.Int32
	arrived atomic.Int32
}

func newHangable(next http.Handler) *Hangable { return &Hangable{next: next} }

// SetHanging makes every request wait, or lets them all through.
func (h *Hangable) SetHanging(hanging bool) {
	if hanging {
		release := make(chan struct{})
		h.hang.Store(&release)
		return
	}
	if release := h.hang.Swap(nil); release != nil {
		close(*release)
	}
}

// GaveUp is how many hanging requests their client abandoned by closing the connection.
func (h *Hangable) GaveUp() int { return int(h.gaveUp.Load()) }

// Hung is how many requests arrived while the server hung.
func (h *Hangable) Hung() int { return int(h.arrived.Load()) }

func (h *Hangable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if release := h.hang.Load(); release != nil {
		h.arrived.Add(1)
		// The server notices a client closing the connection only once the request's body is
		// read: it is read and kept for the handler.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			h.gaveUp.Add(1)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		select {
		case <-r.Context().Done():
			h.gaveUp.Add(1)
			return
		case <-*release:
		}
	}
	h.next.ServeHTTP(w, r)
}
