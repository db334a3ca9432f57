package databases

import (
	"context"
	"sync"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

// serverSlots lets as many of this process's statements run on a database server at once as it
// has connections to it (database.MaxAdminConns), and starts a statement's timeout
// (databases.timeout) once it has one. With 32 reconciles creating tenants at once, most would
// otherwise spend their timeout waiting for one of the 4 connections, and a healthy server that
// takes a few seconds per CREATE DATABASE would be reported unavailable.
type serverSlots struct {
	mu       sync.Mutex
	byServer map[string]chan struct{}
}

// run calls fn with a context that times out after timeout, once a slot on server is free. The
// wait is bounded by ctx: the reconcile's own timeout, or the operator stopping.
func (s *serverSlots) run(ctx context.Context, server string, timeout time.Duration, fn func(context.Context) error) error {
	slot := s.slot(server)
	select {
	case slot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-slot }()
	sqlCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(sqlCtx)
}

func (s *serverSlots) slot(server string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byServer == nil {
		s.byServer = map[string]chan struct{}{}
	}
	if s.byServer[server] == nil {
		s.byServer[server] = make(chan struct{}, database.MaxAdminConns)
	}
	return s.byServer[server]
}
