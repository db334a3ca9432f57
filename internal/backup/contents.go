package backup

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/landlord-dev/landlord/internal/database"
)

// TableDigest is what one table holds, in a form two servers can compare: its rows, and a sum
// over its rows of a hash of each row's text. The sum does not depend on the rows' order, so
// the copy of a table on another server, however its rows are stored, has the same digest; a row
// changed, added or lost changes it.
type TableDigest struct {
	// Table is schema.name (PostgreSQL) or name (MySQL), quoted as the engine quotes it.
	Table  string `json:"table"`
	Rows   int64  `json:"rows"`
	Digest string `json:"digest"`
}

// Contents reads every table of the target's database that its login can read, as
// TableDigests in the tables' order. It logs in as the target's own login and reads each table
// once, whole: the cost of a full scan of the database. It is how a copy of a database is
// proved equal to its source, table by table.
func Contents(ctx context.Context, t Target) ([]TableDigest, error) {
	db, err := connect(t)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("logging in to %s: %w", t.Database, err)
	}
	defer conn.Close()

	var tables []string
	if t.Engine == database.Postgres {
		// A row's text is PostgreSQL's own output of the row, its md5's first 15 hex digits a
		// 60-bit number; their sum (numeric: no overflow) is the digest.
		rows, err := conn.QueryContext(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%'
			AND has_table_privilege(c.oid, 'SELECT') ORDER BY 1, 2`)
		if err != nil {
			return nil, fmt.Errorf("listing the tables of %s: %w", t.Database, err)
		}
		for rows.Next() {
			var schema, name string
			if err := rows.Scan(&schema, &name); err != nil {
				_ = rows.Close()
				return nil, err
			}
			tables = append(tables, pgx.Identifier{schema, name}.Sanitize())
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		out := make([]TableDigest, 0, len(tables))
		for _, table := range tables {
			d := TableDigest{Table: table}
			q := "SELECT count(*), coalesce(sum(('x' || substr(md5(r::text), 1, 15))::bit(60)::bigint), 0)::text FROM " + table + " r"
			if err := conn.QueryRowContext(ctx, q).Scan(&d.Rows, &d.Digest); err != nil {
				return nil, fmt.Errorf("reading table %s: %w", table, err)
			}
			out = append(out, d)
		}
		return out, nil
	}

	rows, err := conn.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1")
	if err != nil {
		return nil, fmt.Errorf("listing the tables of %s: %w", t.Database, err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return nil, err
		}
		tables = append(tables, name)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	out := make([]TableDigest, 0, len(tables))
	for _, name := range tables {
		cols, err := columnsOf(ctx, conn, name)
		if err != nil {
			return nil, err
		}
		// A row's text is each column QUOTE()d (NULL as the word NULL, so that ('a', NULL)
		// and (NULL, 'a') differ), joined by commas.
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = "QUOTE(" + quoteMySQL(c) + ")"
		}
		d := TableDigest{Table: quoteMySQL(name)}
		// CONV returns a string, which SUM would add as a DOUBLE, keeping 53 of the 60 bits:
		// cast to an integer, the sum is an exact DECIMAL.
		q := "SELECT COUNT(*), CAST(COALESCE(SUM(CAST(CONV(SUBSTR(MD5(CONCAT_WS(',', " + strings.Join(quoted, ", ") + ")), 1, 15), 16, 10) AS UNSIGNED)), 0) AS CHAR) FROM " + quoteMySQL(name)
		if err := conn.QueryRowContext(ctx, q).Scan(&d.Rows, &d.Digest); err != nil {
			return nil, fmt.Errorf("reading table %s: %w", name, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// columnsOf are a MySQL table's columns, in their order.
func columnsOf(ctx context.Context, conn *sql.Conn, table string) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", table)
	if err != nil {
		return nil, fmt.Errorf("listing the columns of %s: %w", table, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}
