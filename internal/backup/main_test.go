package backup_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
	"github.com/landlord-dev/landlord/internal/secret"
	"github.com/landlord-dev/landlord/internal/secret/secrettest"
)

// Everything here is real: the engines' servers (dbtest) and client tools, tenants' databases
// and logins made by Landlord's own provisioner, an S3 server spoken to by the AWS SDK, and
// AWS KMS's API (Local KMS) holding the key-encryption key.

// servers holds one server per engine for the whole package; -short leaves it empty and the
// tests that need one skip.
var servers = map[database.Engine]*dbtest.Instance{}

var engines = []database.Engine{database.Postgres, database.MySQL}

func TestMain(m *testing.M) {
	os.Exit(runWithServers(m))
}

func runWithServers(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	started, stop, err := dbtest.StartEach()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	servers = started
	return m.Run()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// location is a backup's folder, as the controller names it: "<tenant UID>/<backup UID>/".
func location(t *testing.T) string {
	return randomHex(t, 8) + "/" + randomHex(t, 8) + "/"
}

// clientTools are the tools a Job's image carries; a machine without them fails the tests
// rather than skipping them.
func clientTools(t *testing.T) backup.Tools {
	t.Helper()
	if servers[database.Postgres] == nil {
		t.Skip("no test servers in -short mode")
	}
	tools := backup.FindTools()
	if tools.PgDump == "" || tools.PgRestore == "" || tools.Psql == "" || tools.MySQLDump == "" || tools.MySQL == "" {
		t.Fatalf("client tools missing (%+v): install PostgreSQL's client tools and MariaDB's (Debian: postgresql-client, mariadb-client)", tools)
	}
	return tools
}

const (
	bucketName = "backups"
	prefix     = "landlord/"
)

// store is a backup store on a fresh S3 server, under a fresh key of a fresh AWS KMS, with a way
// around it to the objects.
type store struct {
	*backup.Store
	objects, key string
	// tenantUID's data key is what the test's Jobs are handed.
	tenantUID string
	tenantKey []byte
	// bucket is the store's bucket, opened apart from it.
	bucket *blob.Bucket
}

func newStore(t *testing.T) *store {
	t.Helper()
	ctx := testContext(t)
	s3, key := secrettest.StartAWS(t, bucketName)
	var err error
	st := &store{objects: s3.URL(bucketName, prefix), key: key, tenantUID: randomHex(t, 16)}
	if st.Store, err = backup.OpenStore(ctx, st.objects, st.key, ""); err != nil {
		t.Fatal(err)
	}
	if st.tenantKey, err = st.TenantKey(ctx, st.tenantUID, true); err != nil {
		t.Fatal(err)
	}
	if st.bucket, err = secret.OpenBucket(ctx, st.objects); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(); _ = st.bucket.Close() })
	return st
}

// keys lists the objects under location.
func (s *store) keys(t *testing.T, location string) []string {
	t.Helper()
	var keys []string
	it := s.bucket.List(&blob.ListOptions{Prefix: location})
	for {
		obj, err := it.Next(testContext(t))
		if errors.Is(err, io.EOF) {
			return keys
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, obj.Key)
	}
}

// raw reads an object as it is stored.
func (s *store) raw(t *testing.T, key string) []byte {
	t.Helper()
	data, err := s.bucket.ReadAll(testContext(t), key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// putRaw writes an object around the backup store, as anyone with access to the bucket could.
func (s *store) putRaw(t *testing.T, key string, data []byte) {
	t.Helper()
	if err := s.bucket.WriteAll(testContext(t), key, data, nil); err != nil {
		t.Fatal(err)
	}
}

// tenant is a tenant's database and login on a test server, made by Landlord's provisioner and
// dropped when the test ends.
type tenant struct {
	inst *dbtest.Instance
	acct database.Account
}

func newTenant(t *testing.T, engine database.Engine) tenant {
	t.Helper()
	inst := servers[engine]
	if inst == nil {
		t.Skip("no test servers in -short mode")
	}
	return newTenantOn(t, inst)
}

// newTenantOn makes the tenant's database and login on the given server.
func newTenantOn(t *testing.T, inst *dbtest.Instance) tenant {
	t.Helper()
	engine := inst.Server.Engine
	p, err := database.Open(inst.Server)
	if err != nil {
		t.Fatal(err)
	}
	name, user := database.Names(engine, "t_", "t"+randomHex(t, 4), "app")
	pw, err := database.GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	acct := database.Account{Database: name, Username: user, Password: pw, Owner: randomHex(t, 16)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.Drop(ctx, acct); err != nil {
			t.Errorf("dropping %s: %v", acct.Database, err)
		}
		_ = p.Close()
	})
	if err := p.Ensure(testContext(t), acct); err != nil {
		t.Fatal(err)
	}
	return tenant{inst: inst, acct: acct}
}

// target is where a Job reaches the tenant's database, as the server is configured (no TLS).
func (tn tenant) target() backup.Target {
	s := tn.inst.Server
	return backup.Target{Engine: s.Engine, Host: s.Host, Port: s.Port, TLS: s.TLS,
		Database: tn.acct.Database, Username: tn.acct.Username, Password: tn.acct.Password}
}

// verifiedTarget reaches it over TLS, verifying the server against its CA.
func (tn tenant) verifiedTarget() backup.Target {
	t := tn.target()
	t.TLS, t.CABundle = database.TLSVerifyFull, tn.inst.CA
	return t
}

func (tn tenant) open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := dbtest.OpenDB(tn.inst.Server, tn.acct.Username, tn.acct.Password, tn.acct.Database)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// exec runs statements as the tenant's login, as its application would.
func (tn tenant) exec(t *testing.T, stmts ...string) {
	t.Helper()
	db := tn.open(t)
	for _, stmt := range stmts {
		if _, err := db.ExecContext(testContext(t), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// strings runs a query as the tenant's login and returns its rows, each row's columns joined.
func (tn tenant) strings(t *testing.T, query string, args ...any) []string {
	t.Helper()
	rows, err := tn.open(t).QueryContext(testContext(t), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			parts = append(parts, fmt.Sprintf("%q", v.String))
		}
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// contents is everything the tenant's database holds, as text: its tables and views, each
// table's rows, and its routines, triggers and events.
func (tn tenant) contents(t *testing.T) []string {
	t.Helper()
	var out []string
	var tables []string
	if tn.inst.Server.Engine == database.Postgres {
		out = tn.strings(t, "SELECT table_schema, table_name, table_type FROM information_schema.tables"+
			" WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2")
		tables = tn.strings(t, "SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables"+
			" WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE' ORDER BY 1")
		out = append(out, tn.strings(t, "SELECT n.nspname, p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"+
			" WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2")...)
		for _, table := range tables {
			name := strings.Trim(table, `"`)
			out = append(out, name+":")
			out = append(out, tn.strings(t, "SELECT r::text FROM "+name+" r ORDER BY 1")...)
		}
		return out
	}
	db := tn.acct.Database
	out = tn.strings(t, "SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY 1", db)
	tables = tn.strings(t, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1", db)
	out = append(out, tn.strings(t, "SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY 2", db)...)
	out = append(out, tn.strings(t, "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY 1", db)...)
	out = append(out, tn.strings(t, "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY 1", db)...)
	for _, table := range tables {
		name := strings.Trim(table, `"`)
		out = append(out, name+":")
		out = append(out, tn.strings(t, "SELECT * FROM `"+name+"` ORDER BY 1")...)
	}
	return out
}

// schema is what each test's tenant starts with: tables that refer to each other, a view, a
// routine, a sequence or a trigger and an event, and a row that reads like a definer clause.
var schema = map[database.Engine][]string{
	database.Postgres: {
		"CREATE SCHEMA reports",
		"CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL)",
		"CREATE TABLE orders (id int PRIMARY KEY, customer int NOT NULL REFERENCES customers (id), total numeric(10, 2) NOT NULL)",
		"CREATE TABLE reports.daily (day date PRIMARY KEY, orders int NOT NULL)",
		"INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'DEFINER=`root`@`%` in a row')",
		"INSERT INTO orders VALUES (1, 1, 12.50), (2, 2, 7.25), (3, 1, 99.00)",
		"INSERT INTO reports.daily VALUES ('2024-01-01', 3)",
		"CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 10",
		"CREATE FUNCTION order_count() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM orders'",
		"CREATE SEQUENCE invoice_numbers",
	},
	database.MySQL: {
		"CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL)",
		"CREATE TABLE orders (id INT PRIMARY KEY, customer INT NOT NULL, total DECIMAL(10, 2) NOT NULL, FOREIGN KEY (customer) REFERENCES customers (id))",
		"INSERT INTO customers VALUES (1, 'Ada'), (2, 'Grace'), (3, 'DEFINER=`root`@`%` in a row')",
		"INSERT INTO orders VALUES (1, 1, 12.50), (2, 2, 7.25), (3, 1, 99.00)",
		"CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 10",
		"CREATE TRIGGER orders_positive BEFORE INSERT ON orders FOR EACH ROW SET NEW.total = GREATEST(NEW.total, 0)",
		"CREATE FUNCTION order_count() RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM orders)",
		"CREATE EVENT tidy ON SCHEDULE EVERY 1 DAY DO DELETE FROM orders WHERE total < 0",
	},
}

// changes are what happens to a database after its backup: a row changed, one deleted, and a
// table added.
var changes = []string{
	"UPDATE customers SET name = 'changed' WHERE id = 1",
	"DELETE FROM orders WHERE id = 2",
	"CREATE TABLE added (id INT PRIMARY KEY)",
	"INSERT INTO added VALUES (1)",
}

// backupOf takes a backup of the tenant's database, named app in the tenant's spec.
func backupOf(t *testing.T, st *store, tools backup.Tools, tn tenant) (backup.Plan, *backup.Manifest) {
	t.Helper()
	plan := backup.Plan{Operation: backup.OpBackup, Location: location(t), Tenant: "acme", TenantUID: st.tenantUID, Backup: "nightly", TenantKey: st.tenantKey,
		Databases: []backup.Database{{Name: "app", Target: tn.target()}}}
	m, err := backup.Backup(testContext(t), st.Store, tools, plan)
	if err != nil {
		t.Fatal(err)
	}
	return plan, m
}

// restorePlan restores the backup at location's app into target, with the store's tenant's key.
func (s *store) restorePlan(location string, target backup.Target) backup.Plan {
	return backup.Plan{Operation: backup.OpRestore, Location: location, TenantKey: s.tenantKey, Databases: []backup.Database{{Name: "app", Target: target}}}
}

// addNoise adds a table of random text, which no dump format compresses much: 2000 rows, some
// 80 KB of dump, more than a pipe holds.
func (tn tenant) addNoise(t *testing.T) {
	t.Helper()
	var rows []string
	for i := range 2000 {
		rows = append(rows, fmt.Sprintf("(%d, '%s')", i, randomHex(t, 16)))
	}
	tn.exec(t, "CREATE TABLE noise (id INT PRIMARY KEY, note VARCHAR(40) NOT NULL)",
		"INSERT INTO noise VALUES "+strings.Join(rows, ", "))
}

// runSteps runs a plan's two steps as a Job's pod does, each its own RunJob with the plan of
// its step alone, the second reading what the first left in the scratch directory.
func runSteps(t *testing.T, plan backup.Plan, tools backup.Tools, log io.Writer) error {
	t.Helper()
	first, second, err := plan.Steps()
	if err != nil {
		return err
	}
	dir := filepath.Join(t.TempDir(), "dumps")
	if err := backup.RunJob(testContext(t), first, tools, dir, log); err != nil {
		return err
	}
	return backup.RunJob(testContext(t), second, tools, dir, log)
}
