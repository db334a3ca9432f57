package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/landlord-dev/landlord/internal/database"
)

// Tools are the paths of the engines' client tools a Job runs. A dump is only as good as the
// tool that reads it back, so Landlord uses each engine's own rather than a format of its own.
type Tools struct {
	PgDump, PgRestore, Psql string
	// MySQLDump and MySQL are MariaDB's clients (mariadb-dump, mariadb): their flags are the ones
	// passed, and MariaDB's clients also speak to MySQL servers.
	MySQLDump, MySQL string
}

// ToolNames are the executables FindTools looks for on PATH: a PATH holding the directories
// of these (localcluster.HostPath) finds the same tools as this machine's.
var ToolNames = []string{"pg_dump", "pg_restore", "psql", "mariadb-dump", "mysqldump", "mariadb", "mysql"}

// FindTools finds the client tools on PATH. Debian's pg_dump on PATH is a wrapper that picks a
// version by the clusters configured on the machine, of which a Job's image has none: the
// newest /usr/lib/postgresql/*/bin is used instead, as a newer pg_dump reads every older server.
func FindTools() Tools {
	debian := newestDebianPostgres()
	return Tools{
		PgDump:    postgresTool("pg_dump", debian),
		PgRestore: postgresTool("pg_restore", debian),
		Psql:      postgresTool("psql", debian),
		MySQLDump: firstOnPath("mariadb-dump", "mysqldump"),
		MySQL:     firstOnPath("mariadb", "mysql"),
	}
}

// need returns the path of a tool, or an error saying which is missing.
func need(path, name, pkg string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%s not found: install %s", name, pkg)
	}
	return path, nil
}

func (t Tools) dumper(engine database.Engine) (string, error) {
	if engine == database.Postgres {
		return need(t.PgDump, "pg_dump", "PostgreSQL's client tools")
	}
	return need(t.MySQLDump, "mariadb-dump", "MariaDB's client tools")
}

func postgresTool(name, debianDir string) string {
	onPath, err := exec.LookPath(name)
	if err == nil && !isDebianWrapper(onPath) {
		return onPath
	}
	if p := filepath.Join(debianDir, name); debianDir != "" && isExecutable(p) {
		return p
	}
	if err == nil {
		return onPath
	}
	return ""
}

func isDebianWrapper(path string) bool {
	resolved, err := filepath.EvalSymlinks(path)
	return err == nil && filepath.Base(resolved) == "pg_wrapper"
}

func newestDebianPostgres() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(dir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return n
	}
	sort.Slice(dirs, func(a, b int) bool { return major(dirs[a]) > major(dirs[b]) })
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "pg_dump")) {
			return d
		}
	}
	return ""
}

func firstOnPath(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// command is one run of a client tool: its arguments never hold a password, which other users
// of the machine could read in the process table; its environment does.
type command struct {
	path string
	args []string
	env  []string
}

// workDir is a private directory for one Job's files (CA bundles, downloaded dumps), and the
// children's HOME, so that no ~/.pgpass, ~/.psqlrc or ~/.my.cnf of the machine's user applies.
type workDir string

func newWorkDir(what string) (workDir, error) {
	dir, err := os.MkdirTemp(os.TempDir(), "landlord-"+what+"-")
	if err != nil {
		return "", fmt.Errorf("creating a working directory: %w", err)
	}
	return workDir(dir), nil
}

func (w workDir) remove() { _ = os.RemoveAll(string(w)) }

// caFile writes a CA bundle where the tools can read it, once per bundle.
func (w workDir) caFile(bundle []byte) (string, error) {
	f, err := os.CreateTemp(string(w), "ca-*.pem")
	if err != nil {
		return "", err
	}
	_, err = f.Write(bundle)
	if err := errors.Join(err, f.Close()); err != nil {
		return "", fmt.Errorf("writing the CA bundle: %w", err)
	}
	return f.Name(), nil
}

// baseEnv is what every child gets of the environment: the parent's whole environment could
// hold anything, the store's and the cloud's credentials among them.
func (w workDir) baseEnv() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{"PATH=" + path, "HOME=" + string(w), "TMPDIR=" + os.TempDir()}
}

// systemRoots are the CA bundles of the common distributions, for libpq under verify-full
// without a bundle of the server's: before PostgreSQL 16 it reads only ~/.postgresql/root.crt.
var systemRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
	"/etc/ssl/cert.pem",                  // Alpine, macOS
}

// postgresEnv is how the PostgreSQL tools reach a target: every connection setting is an
// environment variable, none of which libpq reads as a connection string.
func (w workDir) postgresEnv(t Target) ([]string, error) {
	mode := effectiveTLS(t.TLS)
	env := append(w.baseEnv(),
		"PGHOST="+t.Host,
		"PGPORT="+strconv.Itoa(int(t.Port)),
		"PGUSER="+t.Username,
		"PGDATABASE="+t.Database,
		"PGPASSWORD="+t.Password,
		"PGSSLMODE="+string(mode),
		"PGCONNECT_TIMEOUT=10",
		"PGAPPNAME=landlord-backup",
	)
	if mode != database.TLSVerifyFull {
		return env, nil
	}
	if len(t.CABundle) > 0 {
		ca, err := w.caFile(t.CABundle)
		if err != nil {
			return nil, err
		}
		return append(env, "PGSSLROOTCERT="+ca), nil
	}
	for _, roots := range systemRoots {
		if _, err := os.Stat(roots); err == nil {
			return append(env, "PGSSLROOTCERT="+roots), nil
		}
	}
	return env, nil
}

// mysqlArgs are the connection flags of MariaDB's clients; --no-defaults must come first, and
// keeps the machine's option files out.
func (w workDir) mysqlArgs(t Target) ([]string, []string, error) {
	args := []string{"--no-defaults",
		"--protocol=TCP",
		"--host=" + t.Host,
		"--port=" + strconv.Itoa(int(t.Port)),
		"--user=" + t.Username,
	}
	switch effectiveTLS(t.TLS) {
	case database.TLSDisable:
		args = append(args, "--skip-ssl")
	case database.TLSRequire:
		// MariaDB 11.4's clients verify by default; require encrypts without verifying.
		args = append(args, "--ssl", "--skip-ssl-verify-server-cert")
	default:
		args = append(args, "--ssl", "--ssl-verify-server-cert")
		if len(t.CABundle) > 0 {
			ca, err := w.caFile(t.CABundle)
			if err != nil {
				return nil, nil, err
			}
			args = append(args, "--ssl-ca="+ca)
		}
	}
	return args, append(w.baseEnv(), "MYSQL_PWD="+t.Password), nil
}

// effectiveTLS treats an unset mode as the strictest, as the tenants' URLs do.
func effectiveTLS(m database.TLSMode) database.TLSMode {
	if m == "" {
		return database.TLSVerifyFull
	}
	return m
}

// stderrLimit bounds what a failed tool's error carries: its last words say why.
const stderrLimit = 2048

// tail keeps the last stderrLimit bytes written to it.
type tail struct{ buf []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - stderrLimit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.TrimSpace(string(bytes.ToValidUTF8(t.buf, nil))) }

// start starts c with stdin and stdout as given (nil: the null device); wait returns its error
// with the end of its stderr. The tools print no passwords, which reach them only through the environment.
func (c command) start(ctx context.Context, stdin io.Reader, stdout io.Writer) (wait func() error, err error) {
	cmd := exec.CommandContext(ctx, c.path, c.args...)
	cmd.Env = c.env
	cmd.Stdin = stdin
	cmd.Stdout = stdout
	stderr := &tail{}
	cmd.Stderr = stderr
	// A killed tool's grandchildren could hold its pipes open; Wait gives up on them.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", filepath.Base(c.path), err)
	}
	return func() error {
		err := cmd.Wait()
		if err == nil {
			return nil
		}
		// A tool that ended on its own says why, even when the context ended since.
		var exit *exec.ExitError
		if ctx.Err() != nil && errors.As(err, &exit) && !exit.Exited() {
			return fmt.Errorf("%s: %w", filepath.Base(c.path), context.Cause(ctx))
		}
		if msg := stderr.String(); msg != "" {
			return fmt.Errorf("%s: %w: %s", filepath.Base(c.path), err, msg)
		}
		return fmt.Errorf("%s: %w", filepath.Base(c.path), err)
	}, nil
}

// run runs c to its end.
func (c command) run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	wait, err := c.start(ctx, stdin, stdout)
	if err != nil {
		return err
	}
	return wait()
}
