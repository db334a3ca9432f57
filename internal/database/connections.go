package database

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/landlord-dev/landlord/api/v1alpha1"
)

// ErrServerUnusable is a DatabaseServer that cannot be logged in to as it stands: it or its
// admin credentials are missing or incomplete, or its spec makes no connection (a CA bundle
// holding no certificate, an unknown TLS mode or engine). A person has to fix it.
var ErrServerUnusable = errors.New("database server is not usable")

// ErrAdminCredentialsMissing is the ErrServerUnusable of a server whose admin credentials Secret
// is missing or lacks its username or password: the Secret is what a person fixes, not the
// server's spec.
var ErrAdminCredentialsMissing = errors.New("admin credentials missing")

// adminCredentialsError is both ErrServerUnusable and ErrAdminCredentialsMissing, and reads as
// the former.
type adminCredentialsError struct{ detail string }

func (e *adminCredentialsError) Error() string { return ErrServerUnusable.Error() + ": " + e.detail }

func (e *adminCredentialsError) Unwrap() []error {
	return []error{ErrServerUnusable, ErrAdminCredentialsMissing}
}

// Connections keeps one administrator connection pool per DatabaseServer, shared by every
// reconcile, and reopens it when the server's spec or its admin credentials change. Servers and
// credentials are read through Client (the operator's cache).
type Connections struct {
	Client    client.Client
	Namespace string
	// Open connects to a server; Open (the function) unless a test substitutes it.
	Open func(Server) (Provisioner, error)

	mu    sync.Mutex
	conns map[string]*dbConn
}

type dbConn struct {
	key     string
	prov    Provisioner
	checked time.Time
	info    ServerInfo
	err     error
}

// landlordSessions is what Landlord itself may hold on a server: its administrator sessions,
// the check's own and the measuring one's.
const landlordSessions = MaxAdminConns + 2

// DerivedConnectionLimit is each tenant login's share of a server's connection slots when
// spec.connectionLimit is unset: the slots left once the superusers' reserved ones and
// Landlord's own sessions are set aside, divided by maxTenants when set. Otherwise it is divided
// by the power of two above the logins placed (logins), and by at least 4, so that the logins
// together leave slots to the rest. A quarter each, which Landlord gave before, let four logins
// take the whole server. It is never below minDerivedLimit sessions (nor the server's slots):
// an application needs a few, and a server with more logins than that leaves room for is
// reported overcommitted rather than made useless to each. The share is given to new logins
// (and at rotations); those in place keep theirs, unless spec.connectionLimit is set.
func DerivedConnectionLimit(info ServerInfo, maxTenants *int32, logins int) int32 {
	share := 4
	if maxTenants != nil && *maxTenants > 0 {
		share = int(*maxTenants)
	} else {
		for share <= logins {
			share *= 2
		}
	}
	slots := info.MaxConnections - info.Reserved - landlordSessions
	return int32(max(1, min(max(slots, 1), max(slots/share, minDerivedLimit))))
}

// minDerivedLimit is the fewest sessions a derived share gives a login.
const minDerivedLimit = 5

// ConnectionLimit is what each tenant login on ds is given: spec.connectionLimit, else the limit
// the last check derived (status.connectionLimit). Before any check it is 1; no tenant is placed
// on a server before the check that makes it Ready has recorded its limit.
func ConnectionLimit(ds *tenancyv1alpha1.DatabaseServer) int32 {
	if ds.Spec.ConnectionLimit != nil {
		return *ds.Spec.ConnectionLimit
	}
	return max(1, ds.Status.ConnectionLimit)
}

// Overcommitted says, when the server's tenant logins could together hold more sessions than it
// has slots for (each at limit, 0 being unlimited), by how much, for a condition's message. The
// logins are those placed on the server, or maxTenants when the server may take more (each
// tenant has at least one). A login at its limit then leaves the others, and Landlord, fewer
// slots than they may ask for.
func Overcommitted(info ServerInfo, limit int32, logins int, maxTenants *int32) (string, bool) {
	slots := info.MaxConnections - info.Reserved - landlordSessions
	if maxTenants != nil && int(*maxTenants) > logins {
		logins = int(*maxTenants)
	}
	if info.MaxConnections == 0 || logins == 0 {
		return "", false
	}
	if limit == 0 {
		return fmt.Sprintf("connectionLimit is 0 (unlimited): any one of the %d tenant logins can take all %d connection slots the server leaves to tenants", logins, slots), true
	}
	if want := int(limit) * logins; want > slots {
		return fmt.Sprintf("%d tenant logins at %d sessions each may hold %d sessions, and the server leaves tenants %d slots (max_connections %d, %d reserved, %d Landlord's)",
			logins, limit, want, slots, info.MaxConnections, info.Reserved, landlordSessions), true
	}
	return "", false
}

// Address is where tenants reach a server: its engine, host, port and TLS mode, without the
// administrator's login.
func Address(ds *tenancyv1alpha1.DatabaseServer) Server {
	s := Server{
		Engine: Engine(ds.Spec.Engine),
		Host:   ds.Spec.Host,
		Port:   ds.Spec.Port,
		TLS:    TLSMode(ds.Spec.TLS),
		// The tenants' logins are capped; the administrator's connection is not a tenant's.
		ConnectionLimit: ConnectionLimit(ds),
	}
	if ds.Spec.CABundle != "" {
		s.CABundle = []byte(ds.Spec.CABundle)
	}
	if s.Port == 0 {
		s.Port = 5432
		if s.Engine == MySQL {
			s.Port = 3306
		}
	}
	if s.TLS == "" {
		s.TLS = TLSVerifyFull
	}
	return s
}

// Server returns the DatabaseServer object from the cache.
func (c *Connections) Server(ctx context.Context, name string) (*tenancyv1alpha1.DatabaseServer, error) {
	ds := &tenancyv1alpha1.DatabaseServer{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, ds); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: DatabaseServer %s not found", ErrServerUnusable, name)
		}
		return nil, err
	}
	return ds, nil
}

// Provisioner returns the administrator connection to the named server.
func (c *Connections) Provisioner(ctx context.Context, name string) (Provisioner, error) {
	conn, err := c.conn(ctx, name)
	if err != nil {
		return nil, err
	}
	return conn.prov, nil
}

func (c *Connections) conn(ctx context.Context, name string) (*dbConn, error) {
	ds, err := c.Server(ctx, name)
	if err != nil {
		return nil, err
	}
	ref := ds.Spec.AdminCredentials.Name
	creds := &corev1.Secret{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref}, creds); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &adminCredentialsError{fmt.Sprintf("admin credentials Secret %s/%s not found", c.Namespace, ref)}
		}
		return nil, err
	}
	user, password := string(creds.Data["username"]), string(creds.Data["password"])
	if user == "" || password == "" {
		return nil, &adminCredentialsError{fmt.Sprintf("admin credentials Secret %s/%s needs the keys username and password", c.Namespace, ref)}
	}
	key := fmt.Sprintf("%s/%d/%d/%s/%s", ds.UID, ds.Generation, ConnectionLimit(ds), creds.UID, creds.ResourceVersion)

	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[name]; ok {
		if conn.key == key {
			return conn, nil
		}
		_ = conn.prov.Close()
		delete(c.conns, name)
	}
	s := Address(ds)
	s.AdminUser, s.AdminPassword = user, password
	open := c.Open
	if open == nil {
		open = Open
	}
	prov, err := open(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrServerUnusable, err)
	}
	if c.conns == nil {
		c.conns = map[string]*dbConn{}
	}
	// Every call through the connection is counted and timed, whoever opened it.
	conn := &dbConn{key: key, prov: Instrumented(name, s.Engine, prov)}
	c.conns[name] = conn
	return conn, nil
}

// Check logs in to the server and returns what it read of it. A result younger than maxAge is
// reused, so the many events that touch a server (tenants placed on it) cost no extra logins.
func (c *Connections) Check(ctx context.Context, name string, maxAge, timeout time.Duration) (ServerInfo, error) {
	conn, err := c.conn(ctx, name)
	if err != nil {
		return ServerInfo{}, err
	}
	c.mu.Lock()
	if !conn.checked.IsZero() && time.Since(conn.checked) < maxAge {
		info, err := conn.info, conn.err
		c.mu.Unlock()
		return info, err
	}
	c.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := conn.prov.Check(ctx)

	c.mu.Lock()
	conn.checked, conn.info, conn.err = time.Now(), info, err
	c.mu.Unlock()
	return info, err
}

// Invalidate forgets the last check of a server, so the next Check logs in again.
func (c *Connections) Invalidate(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[name]; ok {
		conn.checked = time.Time{}
	}
}

// Forget closes the connection to a server that is gone.
func (c *Connections) Forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if conn, ok := c.conns[name]; ok {
		_ = conn.prov.Close()
		delete(c.conns, name)
	}
}

// Close closes every connection.
func (c *Connections) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, conn := range c.conns {
		_ = conn.prov.Close()
		delete(c.conns, name)
	}
}
