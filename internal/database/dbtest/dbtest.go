// Package dbtest runs throwaway PostgreSQL and MariaDB servers for tests, each in its own
// temporary directory and listening on 127.0.0.1 only, and checks what a tenant's login can do
// on them. The servers come from the machine's packages; hack/install-databases.sh installs them.
package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/landlord-dev/landlord/internal/childproc"
	"github.com/landlord-dev/landlord/internal/database"
)

// AdminUser is the administrator every Instance is created with, as Landlord is given on a real
// server: a login with its own password, not the server's built-in superuser.
const AdminUser = "landlord_admin"

const (
	installHint    = "run hack/install-databases.sh"
	initTimeout    = 2 * time.Minute
	startTimeout   = time.Minute
	stopTimeout    = 30 * time.Second
	connectTimeout = 5 * time.Second
	logTailBytes   = 4096
)

// Instance is a database server running in a temporary directory. Its methods are not safe for
// concurrent use.
type Instance struct {
	// Server is how Landlord reaches the instance: 127.0.0.1, its own port, no TLS, and AdminUser
	// with a random password.
	Server database.Server
	// CA is the PEM bundle that verifies the instance's certificate: the server also accepts TLS,
	// with a certificate for 127.0.0.1 and localhost issued by a CA of its own.
	CA []byte

	dir     string
	logPath string
	// queryLogPath, when set, is a log of every statement the server ran, kept apart from logPath.
	queryLogPath string
	bin          string
	args         []string
	cred         *syscall.Credential
	// stopSignal asks the server to shut down cleanly; deathSignal ends it if this process dies.
	stopSignal  syscall.Signal
	deathSignal syscall.Signal
	// ready reports whether the server accepts logins; setup runs once, after the first start.
	ready func(context.Context) error
	setup func(context.Context) error

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// StartPostgres creates a PostgreSQL cluster in a new temporary directory and starts it, from
// the machine's own packages.
func StartPostgres() (*Instance, error) { return Machine.StartPostgres() }

// StartMariaDB is Machine.StartMariaDB.
func StartMariaDB() (*Instance, error) { return Machine.StartMariaDB() }

// StartPostgres creates a PostgreSQL cluster of this release in a new temporary directory and
// starts it.
func (r Release) StartPostgres() (*Instance, error) {
	initdb, server, err := postgresBinaries(r.Root)
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential("postgres", "nobody")
	if err != nil {
		return nil, err
	}
	inst, err := newInstance("landlord-postgres-", cred)
	if err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			_ = inst.Close()
		}
	}()

	password, err := database.GeneratePassword()
	if err != nil {
		return nil, err
	}
	pwfile := filepath.Join(inst.dir, "pwfile")
	if err := inst.writeFile(pwfile, password+"\n"); err != nil {
		return nil, err
	}
	data := filepath.Join(inst.dir, "data")
	err = inst.run(initdb, "-D", data, "-U", AdminUser, "--pwfile="+pwfile,
		"--auth-host=scram-sha-256", "--auth-local=scram-sha-256",
		"--encoding=UTF8", "--no-locale", "--no-sync")
	_ = os.Remove(pwfile)
	if err != nil {
		return nil, err
	}

	inst.Server = database.Server{
		Engine:        database.Postgres,
		Host:          "127.0.0.1",
		TLS:           database.TLSDisable,
		AdminUser:     AdminUser,
		AdminPassword: password,
	}
	certFile, keyFile, ca, err := inst.serverTLS()
	if err != nil {
		return nil, err
	}
	inst.CA = ca
	inst.bin = server
	inst.stopSignal = syscall.SIGINT   // fast shutdown
	inst.deathSignal = syscall.SIGQUIT // immediate shutdown, which also ends the backends
	inst.ready = func(ctx context.Context) error {
		return CanConnect(ctx, inst.Server, inst.Server.AdminUser, inst.Server.AdminPassword, "postgres")
	}
	err = inst.startOnFreePort(func(port int32) []string {
		return []string{
			"-D", data,
			"-k", inst.dir,
			"-p", strconv.Itoa(int(port)),
			"-c", "listen_addresses=127.0.0.1",
			// Durability is worthless for a server that lives as long as a test run.
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
			"-c", "shared_buffers=32MB",
			"-c", "max_connections=100",
			"-c", "ssl=on",
			"-c", "ssl_cert_file=" + certFile,
			"-c", "ssl_key_file=" + keyFile,
			// Every statement is logged, so that tests can prove what never reaches a log.
			"-c", "log_statement=all",
		}
	})
	if err != nil {
		return nil, err
	}
	started = true
	return inst, nil
}

// StartMariaDB creates a MariaDB data directory of this release in a new temporary directory,
// starts the server and creates AdminUser with every privilege, as a hosting provider would hand
// it to Landlord.
func (r Release) StartMariaDB() (*Instance, error) {
	install, server, err := mariadbBinaries(r.Root)
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential("mysql", "nobody")
	if err != nil {
		return nil, err
	}
	inst, err := newInstance("landlord-mariadb-", cred)
	if err != nil {
		return nil, err
	}
	// MariaDB logs statements to a file of their own, the general query log.
	inst.queryLogPath = filepath.Join(inst.dir, "queries.log")
	started := false
	defer func() {
		if !started {
			_ = inst.Close()
		}
	}()

	data := filepath.Join(inst.dir, "data")
	tmp := filepath.Join(inst.dir, "tmp")
	if err := inst.mkdir(tmp); err != nil {
		return nil, err
	}
	// Small InnoDB files make the data directory quick to create; native AIO (io_uring) is off
	// because container sandboxes often forbid it.
	innodb := []string{
		"--innodb-buffer-pool-size=32M",
		"--innodb-log-file-size=16M",
		"--innodb-use-native-aio=0",
	}
	// --no-defaults must come first; unknown options are passed on to mariadbd --bootstrap.
	// The bootstrap's temporary tables go to the instance's own directory: in the shared /tmp,
	// two instances set up at once (test packages run side by side) name theirs alike, and one
	// fails with "Could not remove temporary table".
	// A release's server reads its own messages and plugins, not the machine's (whose messages
	// file of another release it refuses).
	var files []string
	if r.Root != "" {
		usr := filepath.Join(r.Root, "usr")
		files = []string{"--basedir=" + usr,
			"--lc-messages-dir=" + filepath.Join(usr, "share", "mariadb"),
			"--plugin-dir=" + filepath.Join(usr, "lib", "mysql", "plugin"),
		}
	}
	innodb = append(innodb, files...)
	if err := inst.run(install, append([]string{"--no-defaults",
		"--datadir=" + data,
		"--tmpdir=" + tmp,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
	}, innodb...)...); err != nil {
		return nil, err
	}

	password, err := database.GeneratePassword()
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(inst.dir, "mysqld.sock")
	inst.Server = database.Server{
		Engine:        database.MySQL,
		Host:          "127.0.0.1",
		TLS:           database.TLSDisable,
		AdminUser:     AdminUser,
		AdminPassword: password,
	}
	certFile, keyFile, ca, err := inst.serverTLS()
	if err != nil {
		return nil, err
	}
	inst.CA = ca
	inst.bin = server
	inst.stopSignal = syscall.SIGTERM
	inst.deathSignal = syscall.SIGKILL

	// Until setup has created the administrator, only root can log in, over the socket and
	// without a password (--auth-root-authentication-method=normal).
	root := mysql.NewConfig()
	root.User = "root"
	root.Net = "unix"
	root.Addr = socket
	root.Timeout = connectTimeout
	root.InterpolateParams = true
	inst.ready = func(ctx context.Context) error { return pingMySQL(ctx, root) }
	inst.setup = func(ctx context.Context) error {
		if err := bootstrapMariaDB(ctx, root, password); err != nil {
			return err
		}
		inst.ready = func(ctx context.Context) error {
			return CanConnect(ctx, inst.Server, inst.Server.AdminUser, inst.Server.AdminPassword, "")
		}
		return inst.ready(ctx)
	}
	err = inst.startOnFreePort(func(port int32) []string {
		return append([]string{"--no-defaults",
			"--datadir=" + data,
			"--socket=" + socket,
			"--port=" + strconv.Itoa(int(port)),
			"--bind-address=127.0.0.1",
			"--skip-name-resolve",
			"--pid-file=" + filepath.Join(inst.dir, "mariadbd.pid"),
			"--tmpdir=" + tmp,
			"--skip-log-bin",
			// Every statement is logged, so that tests can prove what never reaches a log.
			"--general-log=1",
			"--general-log-file=" + inst.queryLogPath,
			"--innodb-flush-log-at-trx-commit=0",
			"--innodb-doublewrite=0",
			"--ssl-cert=" + certFile,
			"--ssl-key=" + keyFile,
		}, innodb...)
	})
	if err != nil {
		return nil, err
	}
	started = true
	return inst, nil
}

// bootstrapMariaDB creates the administrator and removes the logins that the data directory
// comes with and a real server would not have: root over TCP without a password, and anonymous
// users, which would otherwise match any tenant name that fails to log in.
func bootstrapMariaDB(ctx context.Context, root *mysql.Config, password string) error {
	connector, err := mysql.NewConnector(root)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	for _, stmt := range []string{
		"CREATE USER ?@'%' IDENTIFIED BY ?",
		"GRANT ALL PRIVILEGES ON *.* TO ?@'%' WITH GRANT OPTION",
	} {
		args := []any{AdminUser, password}[:strings.Count(stmt, "?")]
		if _, err := db.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("creating the administrator: %w", err)
		}
	}
	rows, err := db.QueryContext(ctx, "SELECT User, Host FROM mysql.user WHERE (User = 'root' AND Host <> 'localhost') OR User = ''")
	if err != nil {
		return err
	}
	var extra [][2]string
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			_ = rows.Close()
			return err
		}
		extra = append(extra, [2]string{u, h})
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, uh := range extra {
		if _, err := db.ExecContext(ctx, "DROP USER ?@?", uh[0], uh[1]); err != nil {
			return fmt.Errorf("dropping %s@%s: %w", uh[0], uh[1], err)
		}
	}
	return nil
}

// errExited means the server ended before it was ready, which is what losing the race for a
// port looks like.
var errExited = errors.New("server exited")

// startOnFreePort starts the server for the first time. A port that was free when picked can be
// taken before the server binds it, by the servers of test packages running in parallel, so a
// server that exits early gets another port.
func (i *Instance) startOnFreePort(args func(port int32) []string) error {
	var err error
	for range 3 {
		port, perr := freePort()
		if perr != nil {
			return perr
		}
		i.Server.Port = port
		i.args = args(port)
		if err = i.Start(); err == nil || !errors.Is(err, errExited) {
			return err
		}
	}
	return err
}

// Start starts the server again after Stop, on the same port and with the same data.
func (i *Instance) Start() error {
	if i.running() {
		return errors.New("server is already running")
	}
	logf, err := os.OpenFile(i.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(i.bin, i.args...)
	cmd.Dir = i.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: i.cred, Pdeathsig: i.deathSignal}
	err = childproc.Start(cmd)
	_ = logf.Close() // the server has its own descriptor
	if err != nil {
		return fmt.Errorf("starting %s: %w", i.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		i.waitErr = cmd.Wait()
		close(exited)
	}()
	i.cmd, i.exited = cmd, exited

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	err = i.waitReady(ctx)
	if err == nil && i.setup != nil {
		err = i.setup(ctx)
		i.setup = nil
	}
	if err != nil {
		_ = i.Stop()
		return fmt.Errorf("%s on port %d did not start: %w\nserver log (%s) ends with:\n%s",
			filepath.Base(i.bin), i.Server.Port, err, i.logPath, i.logTail())
	}
	return nil
}

func (i *Instance) waitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		// An attempt can hang on whatever else answers on the port, so the server's exit is
		// watched while it runs, not only between attempts.
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		result := make(chan error, 1)
		go func() { result <- i.ready(attempt) }()
		select {
		case last = <-result:
			cancel()
			if last == nil {
				return nil
			}
		case <-i.exited:
			cancel()
			return fmt.Errorf("%w: %v", errExited, i.waitErr)
		case <-ctx.Done():
			cancel()
			return fmt.Errorf("%w; last attempt: %v", ctx.Err(), last)
		}
		select {
		case <-i.exited:
			return fmt.Errorf("%w: %v", errExited, i.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%w; last attempt: %v", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Stop shuts the server down cleanly and keeps its data, so that a test can see how Landlord
// copes with an outage and then Start it again.
func (i *Instance) Stop() error {
	if i.cmd == nil {
		return nil
	}
	defer func() { i.cmd = nil }()
	select {
	case <-i.exited:
		return fmt.Errorf("server had already exited: %v\nserver log (%s) ends with:\n%s", i.waitErr, i.logPath, i.logTail())
	default:
	}
	if err := i.cmd.Process.Signal(i.stopSignal); err != nil {
		return err
	}
	select {
	case <-i.exited:
		return nil
	case <-time.After(stopTimeout):
		_ = i.cmd.Process.Kill()
		<-i.exited
		return fmt.Errorf("server did not shut down within %s and was killed", stopTimeout)
	}
}

// Close stops the server and removes its directory.
func (i *Instance) Close() error {
	return errors.Join(i.Stop(), os.RemoveAll(i.dir))
}

// Log returns everything the server has written to its logs so far, every statement it ran
// included.
func (i *Instance) Log() (string, error) {
	b, err := os.ReadFile(i.logPath)
	if err != nil || i.queryLogPath == "" {
		return string(b), err
	}
	q, err := os.ReadFile(i.queryLogPath)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return string(b) + string(q), err
}

func (i *Instance) running() bool {
	if i.cmd == nil {
		return false
	}
	select {
	case <-i.exited:
		return false
	default:
		return true
	}
}

func (i *Instance) logTail() string {
	f, err := os.Open(i.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > logTailBytes {
		_, _ = f.Seek(-logTailBytes, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// newInstance makes the instance's directory, owned by the user the server runs as.
func newInstance(prefix string, cred *syscall.Credential) (*Instance, error) {
	base := os.TempDir()
	// Unix socket paths are limited to about 100 bytes, and an unprivileged server must be able
	// to reach its directory.
	if len(base) > 60 || (cred != nil && !searchableByAll(base)) {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		return nil, err
	}
	inst := &Instance{dir: dir, logPath: filepath.Join(dir, "server.log"), cred: cred}
	if err := inst.chown(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return inst, nil
}

func (i *Instance) chown(path string) error {
	if i.cred == nil {
		return nil
	}
	return os.Chown(path, int(i.cred.Uid), int(i.cred.Gid))
}

func (i *Instance) mkdir(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	return i.chown(path)
}

func (i *Instance) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return err
	}
	return i.chown(path)
}

// run runs a setup program as the server's user, appending its output to the server log.
func (i *Instance) run(bin string, args ...string) error {
	logf, err := os.OpenFile(i.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), initTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = i.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: i.cred}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\nlog (%s) ends with:\n%s", filepath.Base(bin), err, i.logPath, i.logTail())
	}
	return nil
}

// serverCredential picks the user a server runs as. PostgreSQL refuses to run as root and
// MariaDB warns against it, so root hands the servers to the first of names that exists.
func serverCredential(names ...string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range names {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root, but none of the users %s exists to run the database server as", strings.Join(names, ", "))
}

func searchableByAll(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func postgresBinaries(root string) (initdb, server string, err error) {
	// Debian installs every major version side by side; the newest is the likeliest match for
	// the servers Landlord manages.
	dirs, _ := filepath.Glob(filepath.Join(root, "/usr/lib/postgresql/*/bin"))
	sort.Slice(dirs, func(a, b int) bool { return pgMajor(dirs[a]) > pgMajor(dirs[b]) })
	for _, d := range dirs {
		initdb, server = filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isExecutable(initdb) && isExecutable(server) {
			return initdb, server, nil
		}
	}
	if root != "" {
		return "", "", fmt.Errorf("no PostgreSQL in %s/usr/lib/postgresql/*/bin: %s", root, installHint)
	}
	initdb, err1 := exec.LookPath("initdb")
	server, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return initdb, server, nil
	}
	return "", "", fmt.Errorf("PostgreSQL's initdb and postgres are neither in /usr/lib/postgresql/*/bin nor on PATH: %s", installHint)
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func mariadbBinaries(root string) (install, server string, err error) {
	if root != "" {
		install, server = filepath.Join(root, "usr/bin/mariadb-install-db"), filepath.Join(root, "usr/sbin/mariadbd")
		if !isExecutable(install) || !isExecutable(server) {
			return "", "", fmt.Errorf("no MariaDB in %s/usr: %s", root, installHint)
		}
		return install, server, nil
	}
	install = lookPath("mariadb-install-db", "/usr/bin/mariadb-install-db")
	server = lookPath("mariadbd", "/usr/sbin/mariadbd")
	if install == "" || server == "" {
		return "", "", fmt.Errorf("MariaDB's mariadb-install-db and mariadbd are neither on PATH nor in /usr/bin and /usr/sbin: %s", installHint)
	}
	return install, server, nil
}

// lookPath also tries the packaged location because sbin is not on every user's PATH.
func lookPath(name, fallback string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if isExecutable(fallback) {
		return fallback
	}
	return ""
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

func freePort() (int32, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port), nil
}

// OpenDB returns a connection pool that logs in to dbname as username over TCP, as a tenant's
// application would. Like sql.Open it does not connect; an empty dbname selects none on MySQL
// and the login's own name on PostgreSQL.
func OpenDB(s database.Server, username, password, dbname string) (*sql.DB, error) {
	switch s.Engine {
	case database.Postgres:
		cfg, err := pgx.ParseConfig(database.URL(s, database.Account{Database: dbname, Username: username}))
		if err != nil {
			return nil, err
		}
		cfg.Password = password
		cfg.ConnectTimeout = connectTimeout
		return stdlib.OpenDB(*cfg), nil
	case database.MySQL:
		cfg := mysql.NewConfig()
		cfg.User = username
		cfg.Passwd = password
		cfg.Net = "tcp"
		cfg.Addr = net.JoinHostPort(s.Host, strconv.Itoa(int(s.Port)))
		cfg.DBName = dbname
		cfg.Timeout = connectTimeout
		cfg.ReadTimeout = 30 * time.Second
		cfg.WriteTimeout = 30 * time.Second
		switch s.TLS {
		case database.TLSDisable:
			cfg.TLSConfig = "false"
		case database.TLSRequire:
			cfg.TLSConfig = "skip-verify"
		default:
			cfg.TLSConfig = "true"
		}
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(connector), nil
	}
	return nil, fmt.Errorf("unknown database engine %q", s.Engine)
}

// CanConnect logs in to dbname as username, which fails when the login does not exist, the
// password is wrong, or the login may not connect to that database.
func CanConnect(ctx context.Context, s database.Server, username, password, dbname string) error {
	db, err := OpenDB(s, username, password, dbname)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.PingContext(ctx)
}

// CanUse logs in as a tenant's account and creates a table if missing, writes a row and reads it
// back: everything an application needs from its database.
func CanUse(ctx context.Context, s database.Server, acct database.Account) error {
	db, err := OpenDB(s, acct.Username, acct.Password, acct.Database)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()

	note, err := database.GeneratePassword()
	if err != nil {
		return err
	}
	var id int64
	switch s.Engine {
	case database.Postgres:
		if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS landlord_probe (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text NOT NULL)"); err != nil {
			return fmt.Errorf("creating a table: %w", err)
		}
		if err := conn.QueryRowContext(ctx, "INSERT INTO landlord_probe (note) VALUES ($1) RETURNING id", note).Scan(&id); err != nil {
			return fmt.Errorf("inserting a row: %w", err)
		}
	case database.MySQL:
		if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS landlord_probe (id BIGINT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(100) NOT NULL)"); err != nil {
			return fmt.Errorf("creating a table: %w", err)
		}
		res, err := conn.ExecContext(ctx, "INSERT INTO landlord_probe (note) VALUES (?)", note)
		if err != nil {
			return fmt.Errorf("inserting a row: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown database engine %q", s.Engine)
	}

	query := "SELECT note FROM landlord_probe WHERE id = ?"
	if s.Engine == database.Postgres {
		query = "SELECT note FROM landlord_probe WHERE id = $1"
	}
	var got string
	if err := conn.QueryRowContext(ctx, query, id).Scan(&got); err != nil {
		return fmt.Errorf("reading the row back: %w", err)
	}
	if got != note {
		return fmt.Errorf("read back %q, wrote %q", got, note)
	}
	return nil
}

func pingMySQL(ctx context.Context, cfg *mysql.Config) error {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	return db.PingContext(ctx)
}

// StartEach starts a PostgreSQL and a MariaDB server side by side, for a package whose tests
// share one of each, and returns them by engine with the function that stops both.
func StartEach() (map[database.Engine]*Instance, func(), error) {
	var (
		wg              sync.WaitGroup
		pg, maria       *Instance
		pgErr, mariaErr error
	)
	wg.Go(func() { pg, pgErr = StartPostgres() })
	wg.Go(func() { maria, mariaErr = StartMariaDB() })
	wg.Wait()
	stop := func() {
		for _, inst := range []*Instance{pg, maria} {
			if inst != nil {
				if err := inst.Close(); err != nil {
					fmt.Fprintln(os.Stderr, "closing test server:", err)
				}
			}
		}
	}
	if err := errors.Join(pgErr, mariaErr); err != nil {
		stop()
		return nil, nil, fmt.Errorf("starting test servers: %w", err)
	}
	return map[database.Engine]*Instance{database.Postgres: pg, database.MySQL: maria}, stop, nil
}
