package backup_test

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/landlord-dev/landlord/internal/backup"
	"github.com/landlord-dev/landlord/internal/database"
	"github.com/landlord-dev/landlord/internal/database/dbtest"
)

// copySizes are the database sizes, in MB of table data, BenchmarkCopyBetweenServers copies.
var copySizes = flag.String("copy-sizes-mb", "10,100", "Sizes in MB of the databases BenchmarkCopyBetweenServers copies, comma-separated.")

// BenchmarkCopyBetweenServers measures what a database move's cut-over is made of for databases
// of each size on each engine: the copy of its Job (dump, load, and the comparison of every
// table), from one real server to another of the same release, with the machine's client tools.
// The rest of a cut-over (the fence, the Job's pod starting, the switch reaching the tenant's
// Secret) does not grow with the database. Run it with make bench-moves.
func BenchmarkCopyBetweenServers(b *testing.B) {
	if servers[database.Postgres] == nil {
		b.Skip("no test servers in -short mode")
	}
	tools := backup.FindTools()
	for _, engine := range engines {
		start := dbtest.StartPostgres
		if engine == database.MySQL {
			start = dbtest.StartMariaDB
		}
		second, err := start()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = second.Close() })
		for _, field := range strings.Split(*copySizes, ",") {
			mb, err := strconv.Atoi(strings.TrimSpace(field))
			if err != nil {
				b.Fatalf("-copy-sizes-mb: %v", err)
			}
			b.Run(fmt.Sprintf("%s/%dMB", engine, mb), func(b *testing.B) {
				src := benchAccount(b, servers[engine])
				fill(b, src, mb)
				var last *backup.CopyReport
				for b.Loop() {
					dst := benchAccount(b, second)
					ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
					rep, err := backup.Copy(ctx, tools, src.target(), dst.target(), b.TempDir())
					cancel()
					if err != nil {
						b.Fatal(err)
					}
					last = rep
				}
				b.ReportMetric(float64(last.Bytes)/1e6, "dump-MB")
				b.ReportMetric(last.Dumped.Seconds(), "dump-s")
				b.ReportMetric(last.Loaded.Seconds(), "load-s")
				b.ReportMetric(last.Verified.Seconds(), "verify-s")
			})
		}
	}
}

// benchAccount is a tenant's database and login on inst, dropped when the benchmark ends.
func benchAccount(b *testing.B, inst *dbtest.Instance) tenant {
	b.Helper()
	p, err := database.Open(inst.Server)
	if err != nil {
		b.Fatal(err)
	}
	name, user := database.Names(inst.Server.Engine, "b_", fmt.Sprintf("b%d", time.Now().UnixNano()%1e9), "app")
	pw, err := database.GeneratePassword()
	if err != nil {
		b.Fatal(err)
	}
	acct := database.Account{Database: name, Username: user, Password: pw, Owner: "benchmark"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Ensure(ctx, acct); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = p.Drop(ctx, acct)
		_ = p.Close()
	})
	return tenant{inst: inst, acct: acct}
}

// fill gives the tenant's database a table of about mb MB: rows of 1 KB of random hex (which
// a dump compresses about as much as real data, unlike a repeated string), written by the
// server in batches of 100,000.
func fill(b *testing.B, tn tenant, mb int) {
	b.Helper()
	db, err := dbtest.OpenDB(tn.inst.Server, tn.acct.Username, tn.acct.Password, tn.acct.Database)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE items (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	pgPayload := strings.TrimSuffix(strings.Repeat("md5(random()::text) || ", 32), " || ")
	myPayload := "CONCAT(" + strings.TrimSuffix(strings.Repeat("MD5(RAND()), ", 32), ", ") + ")"
	digits := "(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	rows := mb * 1000
	for from := 0; from < rows; from += 100000 {
		n := min(100000, rows-from)
		stmt := fmt.Sprintf("INSERT INTO items SELECT g, %s FROM generate_series(%d, %d) g", pgPayload, from+1, from+n)
		if tn.inst.Server.Engine == database.MySQL {
			// No generate_series, and a recursive CTE stops at max_recursive_iterations: five
			// tables of ten digits give the numbers 0 to 99,999.
			stmt = fmt.Sprintf("INSERT INTO items SELECT %d + n, %s FROM (SELECT a.d + 10*b.d + 100*c.d + 1000*e.d + 10000*f.d AS n FROM %s a, %s b, %s c, %s e, %s f) s WHERE n < %d",
				from+1, myPayload, digits, digits, digits, digits, digits, n)
		}
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			b.Fatal(err)
		}
	}
}
