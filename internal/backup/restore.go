package backup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/landlord-dev/landlord/internal/database"
)

// Restore writes the backup at plan.Location into the plan's databases, each matched by name
// to the manifest's: its two steps (Fetch, then Load) in one process. It changes no database
// until every requested dump has been downloaded, decrypted and checked against the manifest,
// and each target's engine and major version match the dump's. It logs in only as each
// target's own login.
func Restore(ctx context.Context, store *Store, tools Tools, plan Plan) error {
	if err := plan.check(); err != nil {
		return err
	}
	plan.Operation = OpRestore
	fetch, load, err := plan.Steps()
	if err != nil {
		return err
	}
	dir, err := newWorkDir("restore")
	if err != nil {
		return err
	}
	defer dir.remove()
	if err := Fetch(ctx, store, fetch, string(dir)); err != nil {
		return err
	}
	return Load(ctx, tools, load, string(dir))
}

// Fetch is a restore's first step: it downloads each of the plan's databases' dumps into dir,
// decrypting and checking each against the manifest, and writes the record of them last. It
// needs the store and the tenant's key, and no database's login.
func Fetch(ctx context.Context, store *Store, plan Plan, dir string) error {
	if err := plan.checkStep(OpFetch); err != nil {
		return err
	}
	// A backup of format 1 is opened with the store's key alone.
	s := store
	if len(plan.TenantKey) > 0 {
		var err error
		if s, err = store.forTenant(plan.TenantKey); err != nil {
			return err
		}
	}
	m, err := s.Manifest(ctx, plan.Location)
	if err != nil {
		return err
	}
	rec := record{Started: m.Started}
	for _, db := range plan.Databases {
		e, err := manifestEntry(m, db)
		if err != nil {
			return err
		}
		rec.Databases = append(rec.Databases, e)
	}
	for _, e := range rec.Databases {
		file, err := s.download(ctx, workDir(dir), plan.Location, e, plan.Clone)
		if err != nil {
			return fmt.Errorf("database %s: %w", e.Name, err)
		}
		if err := os.Rename(file, filepath.Join(dir, e.Object)); err != nil {
			return fmt.Errorf("database %s: %w", e.Name, err)
		}
	}
	return rec.write(dir)
}

// Load is a restore's second step: it writes the dumps Fetch left in dir into the plan's
// databases. It needs each database's login, and nothing of the store: the client tools that
// run a tenant's dump hold no key and no credential but the tenant's own login. It changes no
// database until each target's engine and major version match its dump's.
func Load(ctx context.Context, tools Tools, plan Plan, dir string) error {
	if err := plan.checkStep(OpLoad); err != nil {
		return err
	}
	rec, err := readRecord(dir, plan)
	if err != nil {
		return err
	}
	for i, db := range plan.Databases {
		if err := checkTarget(ctx, rec.Databases[i], db); err != nil {
			return err
		}
		if err := tools.restorers(db.Target.Engine); err != nil {
			return err
		}
	}
	work, err := newWorkDir("load")
	if err != nil {
		return err
	}
	defer work.remove()
	for i, db := range plan.Databases {
		e, file := rec.Databases[i], filepath.Join(dir, rec.Databases[i].Object)
		var err error
		if db.Target.Engine == database.Postgres {
			err = restorePostgres(ctx, tools, work, db.Target, file, plan.Clone, e.ServerVersion)
		} else {
			err = restoreMySQL(ctx, tools, work, db.Target, file, plan.Clone)
		}
		if err != nil {
			return fmt.Errorf("database %s: restoring into %s: %w", db.Name, db.Target.Database, err)
		}
		// Loaded: the clear copy goes at once rather than with the pod.
		_ = os.Remove(file)
	}
	return nil
}

// manifestEntry finds a database's dump in the manifest and refuses one of another engine.
func manifestEntry(m *Manifest, db Database) (DumpEntry, error) {
	i := slices.IndexFunc(m.Databases, func(e DumpEntry) bool { return e.Name == db.Name })
	if i < 0 {
		var names []string
		for _, e := range m.Databases {
			names = append(names, e.Name)
		}
		return DumpEntry{}, fmt.Errorf("database %s: the backup holds no dump of it (it holds %s)", db.Name, strings.Join(names, ", "))
	}
	e := m.Databases[i]
	// The manifest is not sealed; the dumps are, each to its object's name. A manifest that
	// pointed one database at another's dump would be followed without this.
	if e.Object != db.Name+dumpSuffix {
		return e, fmt.Errorf("database %s: the manifest names the object %q for it, not %s%s", db.Name, e.Object, db.Name, dumpSuffix)
	}
	if e.Engine != db.Target.Engine {
		return e, fmt.Errorf("database %s: the backup holds a %s dump, which a %s server cannot restore", db.Name, e.Engine, db.Target.Engine)
	}
	return e, nil
}

// checkTarget refuses a target its dump cannot go into: another engine, or another major
// version of the server.
func checkTarget(ctx context.Context, e DumpEntry, db Database) error {
	if e.Engine != db.Target.Engine {
		return fmt.Errorf("database %s: the backup holds a %s dump, which a %s server cannot restore", db.Name, e.Engine, db.Target.Engine)
	}
	want, err := majorVersion(e.Engine, e.ServerVersion)
	if err != nil {
		return fmt.Errorf("database %s: %w", db.Name, err)
	}
	version, err := serverVersion(ctx, db.Target)
	if err != nil {
		return fmt.Errorf("database %s: %w", db.Name, err)
	}
	got, err := majorVersion(db.Target.Engine, version)
	if err != nil {
		return fmt.Errorf("database %s: %w", db.Name, err)
	}
	if got != want {
		return fmt.Errorf("database %s: the dump was taken from server version %s (major %s) and the target runs %s (major %s): a dump restores only into a server of the same major version",
			db.Name, e.ServerVersion, want, version, got)
	}
	return nil
}

func (t Tools) restorers(engine database.Engine) error {
	if engine == database.Postgres {
		_, err1 := need(t.PgRestore, "pg_restore", "PostgreSQL's client tools")
		_, err2 := need(t.Psql, "psql", "PostgreSQL's client tools")
		return errors.Join(err1, err2)
	}
	_, err := need(t.MySQL, "mariadb", "MariaDB's client tools")
	return err
}

// download decrypts a dump into a file of work and checks it against the manifest. A MySQL
// dump's definers are rewritten on the way (rewriteDefiners), so that nothing can fail between
// emptying a database and running the script into it but the script itself.
func (s *Store) download(ctx context.Context, work workDir, location string, e DumpEntry, clone bool) (string, error) {
	key := location + e.Object
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", key, err)
	}
	defer r.Close()
	plain, err := s.open(ctx, r, key)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	f, err := os.CreateTemp(string(work), "*"+dumpSuffix)
	if err != nil {
		return "", err
	}
	digest := sha256.New()
	sum := &counter{w: digest}
	// One byte past the recorded size is enough to tell that the object holds more.
	checked := io.TeeReader(io.LimitReader(plain, e.Size+1), sum)
	if e.Engine == database.MySQL {
		err = rewriteDefiners(f, checked, clone)
	} else {
		_, err = io.Copy(f, checked)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("%s does not decrypt (corrupted, truncated, moved, or encrypted under another key): %w", key, err)
	case sum.n != e.Size:
		return "", fmt.Errorf("%s holds %d bytes, and the manifest says %d", key, sum.n, e.Size)
	case hex.EncodeToString(digest.Sum(nil)) != e.SHA256:
		return "", fmt.Errorf("%s does not match the manifest's SHA-256", key)
	}
	return f.Name(), nil
}

// restorePostgres replaces the database's content in one transaction: the login's objects go
// and the dump's come, or nothing changes. DROP OWNED takes everything the login owns in the
// database, objects made after the backup included; the database itself, and the login's
// rights on it as its owner, stay.
//
// psql runs no transaction of its own: at the end of its input it would commit whatever it had
// read, and a pg_restore that failed half-way ends its input too. pg_restore --single-transaction
// ends its script with COMMIT, and writes no other (large objects included), so only a whole
// script commits.
//
// pg_restore 17 and later start every script with SET transaction_timeout, which servers before
// 17 do not know: psql would stop at it. The script of a dump of such a server (the target's
// major version is the dump's) goes through this process, which drops that line of the script's
// preamble.
func restorePostgres(ctx context.Context, tools Tools, work workDir, t Target, file string, clone bool, dumped string) error {
	env, err := work.postgresEnv(t)
	if err != nil {
		return err
	}
	major, err := majorVersion(database.Postgres, dumped)
	if err != nil {
		return err
	}
	args := []string{"--no-owner", "--single-transaction", "--file=-"}
	if clone {
		// The source's privileges name its logins, which the clone's tenant must not be handed.
		args = append(args, "--no-acl")
	}
	script := command{path: tools.PgRestore, args: append(args, "--", file), env: env}
	// The script's own BEGIN would warn, and the warning would lead any error's message; the
	// script raises the level back to warnings right after it.
	psqlEnv := append(slices.Clip(env), "PGOPTIONS=-c client_min_messages=error")
	psql := command{path: tools.Psql, args: []string{"-X", "-q", "-v", "ON_ERROR_STOP=1"}, env: psqlEnv}

	// One pipe, held by the two tools themselves: whichever ends, the other sees it (EOF, or
	// a broken pipe) without this process copying between them.
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	defer w.Close()
	if _, err := io.WriteString(w, "BEGIN;\nDROP OWNED BY CURRENT_USER;\n"); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waitPsql, err := psql.start(ctx, r, nil)
	_ = r.Close()
	if err != nil {
		return err
	}
	// scriptOut is where pg_restore writes: psql's pipe, or the filter's in front of it.
	scriptOut := w
	var filtered chan error
	if n, _ := strconv.Atoi(major); n < 17 {
		sr, sw, err := os.Pipe()
		if err != nil {
			cancel()
			_ = waitPsql()
			return err
		}
		filtered = make(chan error, 1)
		go func() {
			err := dropTransactionTimeout(w, sr)
			_ = sr.Close() // pg_restore sees a broken pipe if psql ended first
			_ = w.Close()
			filtered <- err
		}()
		scriptOut = sw
	}
	waitScript, err := script.start(ctx, nil, scriptOut)
	_ = scriptOut.Close() // pg_restore holds its own
	if err != nil {
		cancel()
		_ = waitPsql()
		return err
	}
	scriptErr := waitScript()
	if filtered != nil {
		if err := <-filtered; err != nil && scriptErr == nil {
			cancel()
			scriptErr = err
		}
	}
	if scriptErr != nil {
		// psql would run the end of a cut script as a statement; it is stopped instead, and the
		// server rolls the transaction back.
		cancel()
	}
	if psqlErr := waitPsql(); psqlErr != nil && !errors.Is(psqlErr, context.Canceled) {
		return psqlErr // the cause: pg_restore then only lost its reader
	}
	return scriptErr
}

// preambleEnd is how pg_restore starts the script's first object: everything before it is
// pg_restore's own settings, nothing of the tenant's.
var preambleEnd = []string{"-- Name: ", "-- Data for Name: ", "-- TOC entry ", "-- Dependencies: "}

// dropTransactionTimeout copies a pg_restore script from r to w without the line "SET
// transaction_timeout = 0;" of its preamble. The rest is copied as it is.
func dropTransactionTimeout(w io.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if strings.TrimSpace(line) != "SET transaction_timeout = 0;" {
			if _, err := io.WriteString(w, line); err != nil {
				return err
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if slices.ContainsFunc(preambleEnd, func(p string) bool { return strings.HasPrefix(line, p) }) {
			_, err := io.Copy(w, br)
			return err
		}
	}
}

// restoreMySQL empties the database of the login's objects and runs the dump into it, in one
// session of MariaDB's client: a client that cannot log in (the login at its connection limit, a
// network that dropped) changes nothing. MySQL has no transactional DDL: a load that fails
// half-way leaves the database half-restored, and a second restore starts over.
func restoreMySQL(ctx context.Context, tools Tools, work workDir, t Target, file string, clone bool) error {
	args, env, err := work.mysqlArgs(t)
	if err != nil {
		return err
	}
	// The dump is read as the tenant's own data: nothing in it may reach the Job's files
	// (\! and \. of the client, LOAD DATA LOCAL), whatever a crafted object name left in it.
	client := command{path: tools.MySQL, args: append(args, "--sandbox", "--local-infile=0", "--database="+t.Database), env: env}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	drops, err := emptyingMySQL(ctx, t)
	if err != nil {
		return err
	}
	if err := client.run(ctx, io.MultiReader(strings.NewReader(drops), f), nil); err != nil || !clone {
		return err
	}
	// The script made the copy's events disabled (disableEvent); one it did not recognise is
	// disabled here.
	return disableEvents(ctx, t)
}

// disableEvents disables every event of the target's database, as its login.
func disableEvents(ctx context.Context, t Target) error {
	db, err := connect(t)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? AND STATUS <> 'DISABLED'", t.Database)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range names {
		// An event that dropped itself meanwhile (ON COMPLETION NOT PRESERVE) is no error.
		if _, err := db.ExecContext(ctx, "ALTER EVENT "+quoteMySQL(t.Database)+"."+quoteMySQL(n)+" DISABLE"); err != nil && !myIs(err, 1539) {
			return fmt.Errorf("disabling event %s: %w", n, err)
		}
	}
	return nil
}

// emptyingMySQL is the script that drops every table, view, sequence, routine and event of the
// target's database, as listed by its login: what a dump restores, and what a restore must not
// leave behind.
func emptyingMySQL(ctx context.Context, t Target) (string, error) {
	db, err := connect(t)
	if err != nil {
		return "", err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("logging in as %s: %w", t.Username, err)
	}
	defer conn.Close()
	lists := []struct{ query, what string }{
		{"SELECT CASE TABLE_TYPE WHEN 'VIEW' THEN 'VIEW' WHEN 'SEQUENCE' THEN 'SEQUENCE' ELSE 'TABLE' END, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_TYPE = 'VIEW' DESC", "tables"},
		{"SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY ROUTINE_TYPE = 'PACKAGE BODY' DESC", "routines"},
		{"SELECT 'EVENT', EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?", "events"},
	}
	schema := quoteMySQL(t.Database)
	// Tables that refer to each other drop in any order.
	var script strings.Builder
	script.WriteString("SET FOREIGN_KEY_CHECKS = 0;\n")
	for _, l := range lists {
		drops, err := dropStatements(ctx, conn, l.query, t.Database, schema)
		if err != nil {
			return "", fmt.Errorf("listing the %s of %s: %w", l.what, t.Database, err)
		}
		for _, stmt := range drops {
			script.WriteString(stmt + ";\n")
		}
	}
	return script.String(), nil
}

func dropStatements(ctx context.Context, conn *sql.Conn, query, database, schema string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, query, database)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			return nil, err
		}
		out = append(out, "DROP "+kind+" IF EXISTS "+schema+"."+quoteMySQL(name))
	}
	return out, rows.Err()
}

func quoteMySQL(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// definer is a DEFINER clause as mariadb-dump writes it: a user and host, or a role alone, each
// quoted with backquotes (doubled inside).
var definer = regexp.MustCompile("DEFINER=`(?:[^`]|``)*`(?:@`(?:[^`]|``)*`)?")

// rowsPrefix starts the statements of row data, which are copied as they are: a row may hold
// any text, a definer clause included, and rewriting it would change the tenant's data. Such a
// statement runs to the first ';' outside quotes that ends a line: mariadb-dump escapes every
// line break inside a value, but not inside a backquoted table name, which may hold ";" and a
// line break of the tenant's choosing.
const rowsPrefix = "INSERT INTO "

// rewriteDefiners copies a mariadb-dump script from r to w with every DEFINER clause outside
// row data made DEFINER=CURRENT_USER: views, triggers, routines and events then run as the
// login that restores them, which may not create objects on another login's behalf anyway. For
// a clone, events are made DISABLE: the server would otherwise run the source's code as the
// clone's login on its own schedule; the clone's tenant enables them once it has looked.
func rewriteDefiners(w io.Writer, r io.Reader, clone bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	var rows *sqlScanner
	for {
		head, err := br.Peek(len(rowsPrefix))
		if len(head) == 0 && errors.Is(err, io.EOF) {
			return bw.Flush()
		}
		if rows == nil && string(head) == rowsPrefix {
			rows = &sqlScanner{}
		}
		if rows != nil {
			ended, err := copyLine(bw, br, rows)
			if err != nil {
				return err
			}
			if ended {
				rows = nil
			}
			continue
		}
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if bytes.Contains(line, []byte("DEFINER=")) {
			line = definer.ReplaceAll(line, []byte("DEFINER=CURRENT_USER"))
		}
		if clone {
			line = disableEvent(line)
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
}

// eventHead is how mariadb-dump starts an event's definition, on one line: /*!50106 EVENT
// `name` ON SCHEDULE ... ON COMPLETION [NOT] PRESERVE ENABLE [COMMENT '...'] DO ...; the name is
// matched whole, so one that spells the rest is no match for it.
var eventHead = regexp.MustCompile("^(/\\*!50106 CREATE\\*/ (?:/\\*!50117 DEFINER=[^*]*\\*/ )?/\\*!50106 EVENT `(?:[^`]|``)*` ON SCHEDULE [^`]*? ON COMPLETION (?:NOT )?PRESERVE )(?:ENABLE|DISABLE ON SLAVE)( )")

// disableEvent makes an event's definition DISABLE, leaving any other line as it is.
func disableEvent(line []byte) []byte {
	return eventHead.ReplaceAll(line, []byte("${1}DISABLE${2}"))
}

// sqlScanner follows the quoting of one SQL statement, byte by byte, across lines: whether a
// ';' ends it.
type sqlScanner struct {
	quote   byte // 0, '\'' or '`'
	escaped bool // the byte before was a backslash inside a string
	// last is the last byte outside quotes other than white space, and lastOut whether the
	// line's last byte other than white space was outside quotes.
	last    byte
	lastOut bool
}

func (s *sqlScanner) scan(b []byte) {
	for _, c := range b {
		switch {
		case s.escaped:
			s.escaped = false
		case s.quote == '\'':
			switch c {
			case '\\':
				s.escaped = true
			case '\'':
				s.quote = 0 // '' inside a string reopens it on the next byte
			}
		case s.quote == '`':
			if c == '`' {
				s.quote = 0 // `` inside a name reopens it on the next byte
			}
		case c == '\'' || c == '`':
			s.quote = c
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			s.lastOut = s.quote == 0 && c != '\'' && c != '`'
			if s.lastOut {
				s.last = c
			}
		}
	}
}

// copyLine copies one line of a row statement, however long, without holding it whole, and
// reports whether the statement ends with it.
func copyLine(w io.Writer, br *bufio.Reader, s *sqlScanner) (ended bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if _, werr := w.Write(chunk); werr != nil {
			return false, werr
		}
		s.scan(chunk)
		switch {
		case err == nil, errors.Is(err, io.EOF):
			return s.quote == 0 && s.lastOut && s.last == ';', nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return false, err
		}
	}
}

// myIs reports whether err is a MySQL error of the number (1539: no such event).
func myIs(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}
