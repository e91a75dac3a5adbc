package schema_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "modernc.org/sqlite"

	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/schema"
)

// tableShape is what both dialects must agree on for one table: column names with their nullability, and
// the keys as "pk(cols)", "unique(cols)" or "index(cols)" with the columns sorted.
type tableShape struct {
	Columns map[string]bool // column name -> nullable
	Keys    []string
}

type shape map[string]tableShape

func notNull(names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = false
	}
	return out
}

func withNullable(cols map[string]bool, names ...string) map[string]bool {
	for _, n := range names {
		cols[n] = true
	}
	return cols
}

// wantShape is the schema as docs/design.md describes it ("Database tables") plus schema_migrations.
func wantShape() shape {
	return shape{
		"schema_migrations": {
			Columns: notNull("version", "name", "applied_at"),
			Keys:    []string{"pk(version)"},
		},
		"inventory": {
			Columns: notNull("sku", "stock", "price_cents", "updated_at", "per_user_limit", "stock_shards"), // 0004: per_user_limit; 0009: stock_shards
			Keys:    []string{"pk(sku)"},
		},
		"user_units": { // 0004: the units of a SKU one user holds or bought, for SKUs with a per-user limit
			Columns: notNull("sku", "user_id", "units"),
			Keys:    []string{"pk(sku,user_id)"},
		},
		"stock_ledger": {
			Columns: notNull("id", "order_id", "sku", "op", "qty", "created_at"),
			Keys:    []string{"index(sku)", "pk(id)", "unique(op,order_id,sku)"},
		},
		"orders": {
			Columns: withNullable(notNull("id", "order_id", "user_id", "status", "amount_cents", "currency", "created_at", "updated_at"),
				"pay_by", "paid_at", "payment_event_id", "closed_reason"),
			Keys: []string{"index(paid_at)", "index(status)", "pk(id)", "unique(order_id)"}, // 0003: paid_at
		},
		"order_lines": {
			Columns: notNull("id", "order_id", "sku", "qty", "unit_price_cents"),
			Keys:    []string{"index(sku)", "pk(id)", "unique(order_id,sku)"},
		},
		"payments": { // 0003: the refund outbox's columns, the days' index; 0008: the provider's permanent refusal
			Columns: withNullable(notNull("id", "event_id", "order_id", "amount_cents", "currency", "result", "created_at"),
				"detail", "refunded_at", "refund_sent_at", "refund_ref", "refund_refused_at", "refund_refused_reason"),
			Keys: []string{"index(created_at)", "index(order_id)", "index(refund_sent_at,refunded_at)", "pk(id)", "unique(event_id)"},
		},
		"money_anomalies": { // 0003: the money reconciliation's findings, once per (kind, subject)
			Columns: withNullable(notNull("id", "kind", "subject", "day", "run_id", "created_at"),
				"order_id", "event_id", "currency", "expected_cents", "observed_cents", "detail"),
			Keys: []string{"index(day)", "pk(id)", "unique(kind,subject)"},
		},
		"idempotency_keys": { // 0002: the order API's Idempotency-Key rows; 0005: nonce; 0007: the last use's index (the cleanup's)
			Columns: withNullable(notNull("id", "user_id", "idem_key", "fingerprint", "generation", "order_id", "started",
				"created_at", "updated_at"), "status_code", "response_body", "nonce"),
			Keys: []string{"index(created_at)", "index(updated_at)", "pk(id)", "unique(idem_key,user_id)"},
		},
		"marker_fence": { // 0006: the markers' fence of the database-only placement
			Columns: withNullable(notNull("id", "gen", "active"), "active_since"),
			Keys:    []string{"pk(id)"},
		},
		"stock_anomalies": {
			Columns: withNullable(notNull("id", "run_id", "sku", "kind", "action", "created_at"),
				"order_id", "expected", "observed", "detail"),
			Keys: []string{"index(run_id)", "index(sku)", "pk(id)"},
		},
	}
}

func keyName(kind string, cols []string) string {
	cols = slices.Clone(cols)
	sort.Strings(cols)
	return kind + "(" + strings.Join(cols, ",") + ")"
}

// openSQLite returns a migrated SQLite database in a temp file.
func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "schema.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := schema.Migrate(t.Context(), db, schema.SQLite); err != nil {
		t.Fatalf("migrate sqlite: %v", err)
	}
	return db
}

// openMySQL returns a migrated MySQL database of the test's own, or nil when MYSQL_DSN is unset.
func openMySQL(t *testing.T) *sql.DB {
	t.Helper()
	if !testenv.RealMySQL() {
		return nil
	}
	db, err := sql.Open("mysql", testenv.MySQLDatabase(t))
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := schema.Migrate(t.Context(), db, schema.MySQL); err != nil {
		t.Fatalf("migrate mysql: %v", err)
	}
	return db
}

type dialectDB struct {
	dialect string
	db      *sql.DB
}

// migratedDBs returns SQLite always and MySQL when MYSQL_DSN is set.
func migratedDBs(t *testing.T) []dialectDB {
	t.Helper()
	out := []dialectDB{{schema.SQLite, openSQLite(t)}}
	if db := openMySQL(t); db != nil {
		out = append(out, dialectDB{schema.MySQL, db})
	}
	return out
}

func queryStrings(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func sqliteShape(ctx context.Context, db *sql.DB) (shape, error) {
	tables, err := queryStrings(ctx, db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	out := shape{}
	for _, table := range tables {
		ts := tableShape{Columns: map[string]bool{}}
		rows, err := db.QueryContext(ctx, "SELECT name, \"notnull\", pk FROM pragma_table_info(?) ORDER BY pk", table)
		if err != nil {
			return nil, fmt.Errorf("table_info %s: %w", table, err)
		}
		var pk []string
		for rows.Next() {
			var name string
			var notnull, pkPos int
			if err := rows.Scan(&name, &notnull, &pkPos); err != nil {
				rows.Close()
				return nil, err
			}
			ts.Columns[name] = notnull == 0
			if pkPos > 0 {
				pk = append(pk, name)
			}
		}
		rows.Close()
		if len(pk) > 0 {
			ts.Keys = append(ts.Keys, keyName("pk", pk))
		}

		type index struct {
			name   string
			unique bool
		}
		var indexes []index
		rows, err = db.QueryContext(ctx, "SELECT name, \"unique\", origin FROM pragma_index_list(?)", table)
		if err != nil {
			return nil, fmt.Errorf("index_list %s: %w", table, err)
		}
		for rows.Next() {
			var name, origin string
			var unique int
			if err := rows.Scan(&name, &unique, &origin); err != nil {
				rows.Close()
				return nil, err
			}
			if origin == "pk" { // already counted from table_info
				continue
			}
			indexes = append(indexes, index{name, unique == 1})
		}
		rows.Close()
		for _, ix := range indexes {
			cols, err := queryStrings(ctx, db, "SELECT name FROM pragma_index_info(?) ORDER BY seqno", ix.name)
			if err != nil {
				return nil, fmt.Errorf("index_info %s: %w", ix.name, err)
			}
			kind := "index"
			if ix.unique {
				kind = "unique"
			}
			ts.Keys = append(ts.Keys, keyName(kind, cols))
		}
		sort.Strings(ts.Keys)
		out[table] = ts
	}
	return out, nil
}

func mysqlShape(ctx context.Context, db *sql.DB) (shape, error) {
	tables, err := queryStrings(ctx, db,
		"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'")
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	out := shape{}
	for _, t := range tables {
		out[t] = tableShape{Columns: map[string]bool{}}
	}
	rows, err := db.QueryContext(ctx,
		"SELECT TABLE_NAME, COLUMN_NAME, IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()")
	if err != nil {
		return nil, fmt.Errorf("columns: %w", err)
	}
	for rows.Next() {
		var table, col, nullable string
		if err := rows.Scan(&table, &col, &nullable); err != nil {
			rows.Close()
			return nil, err
		}
		out[table].Columns[col] = nullable == "YES"
	}
	rows.Close()

	rows, err = db.QueryContext(ctx, `SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`)
	if err != nil {
		return nil, fmt.Errorf("statistics: %w", err)
	}
	type ixKey struct{ table, name string }
	cols := map[ixKey][]string{}
	kinds := map[ixKey]string{}
	for rows.Next() {
		var table, name, col string
		var nonUnique int
		if err := rows.Scan(&table, &name, &nonUnique, &col); err != nil {
			rows.Close()
			return nil, err
		}
		k := ixKey{table, name}
		cols[k] = append(cols[k], col)
		switch {
		case name == "PRIMARY":
			kinds[k] = "pk"
		case nonUnique == 0:
			kinds[k] = "unique"
		default:
			kinds[k] = "index"
		}
	}
	rows.Close()
	for k, c := range cols {
		ts := out[k.table]
		ts.Keys = append(ts.Keys, keyName(kinds[k], c))
		out[k.table] = ts
	}
	for name, ts := range out {
		sort.Strings(ts.Keys)
		out[name] = ts
	}
	return out, nil
}

func shapeOf(t *testing.T, d dialectDB) shape {
	t.Helper()
	var (
		s   shape
		err error
	)
	if d.dialect == schema.MySQL {
		s, err = mysqlShape(t.Context(), d.db)
	} else {
		s, err = sqliteShape(t.Context(), d.db)
	}
	if err != nil {
		t.Fatalf("%s: read schema: %v", d.dialect, err)
	}
	return s
}

// diffShapes lists every difference between two shapes, one line each.
func diffShapes(a, b shape, aName, bName string) []string {
	var out []string
	names := map[string]bool{}
	for n := range a {
		names[n] = true
	}
	for n := range b {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		ta, okA := a[n]
		tb, okB := b[n]
		switch {
		case !okA:
			out = append(out, fmt.Sprintf("table %s: only in %s", n, bName))
			continue
		case !okB:
			out = append(out, fmt.Sprintf("table %s: only in %s", n, aName))
			continue
		}
		for c, nullA := range ta.Columns {
			nullB, ok := tb.Columns[c]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("%s.%s: only in %s", n, c, aName))
			case nullA != nullB:
				out = append(out, fmt.Sprintf("%s.%s: nullable %v in %s, %v in %s", n, c, nullA, aName, nullB, bName))
			}
		}
		for c := range tb.Columns {
			if _, ok := ta.Columns[c]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: only in %s", n, c, bName))
			}
		}
		if !reflect.DeepEqual(ta.Keys, tb.Keys) {
			out = append(out, fmt.Sprintf("%s keys: %s has %v, %s has %v", n, aName, ta.Keys, bName, tb.Keys))
		}
	}
	sort.Strings(out)
	return out
}

func TestSchema_DialectsHoldTheSameTablesColumnsAndKeys(t *testing.T) {
	t.Parallel()
	want := wantShape()
	dbs := migratedDBs(t)
	got := map[string]shape{}
	for _, d := range dbs {
		got[d.dialect] = shapeOf(t, d)
		for _, line := range diffShapes(want, got[d.dialect], "spec", d.dialect) {
			t.Errorf("%s", line)
		}
	}
	if !testenv.RealMySQL() {
		t.Log("MYSQL_DSN unset: SQLite checked against the spec only")
		return
	}
	for _, line := range diffShapes(got[schema.MySQL], got[schema.SQLite], schema.MySQL, schema.SQLite) {
		t.Errorf("%s", line)
	}
}

func TestMigrate_TwiceIsANoOp(t *testing.T) {
	t.Parallel()
	for _, d := range migratedDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			// migratedDBs already applied the migrations once.
			if err := schema.Migrate(t.Context(), d.db, d.dialect); err != nil {
				t.Fatalf("second migrate: %v", err)
			}
			migs, err := schema.Migrations(d.dialect)
			if err != nil {
				t.Fatal(err)
			}
			var rows, distinct int
			if err := d.db.QueryRowContext(t.Context(),
				"SELECT COUNT(*), COUNT(DISTINCT version) FROM schema_migrations").Scan(&rows, &distinct); err != nil {
				t.Fatal(err)
			}
			if rows != len(migs) || distinct != len(migs) {
				t.Errorf("schema_migrations holds %d rows (%d versions), want %d", rows, distinct, len(migs))
			}
		})
	}
}

func TestMigrate_UnknownDialectFails(t *testing.T) {
	t.Parallel()
	if _, err := schema.Migrations("postgres"); err == nil {
		t.Error("Migrations(postgres) = nil error, want one")
	}
}

func TestMigrations_BothDialectsHaveTheSameVersions(t *testing.T) {
	t.Parallel()
	versions := map[string][]int{}
	for _, d := range []string{schema.MySQL, schema.SQLite} {
		migs, err := schema.Migrations(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(migs) == 0 {
			t.Fatalf("%s: no migrations", d)
		}
		for _, m := range migs {
			versions[d] = append(versions[d], m.Version)
		}
	}
	if !slices.Equal(versions[schema.MySQL], versions[schema.SQLite]) {
		t.Errorf("versions differ: mysql %v, sqlite %v", versions[schema.MySQL], versions[schema.SQLite])
	}
}

func TestCheckConstraints_RejectBadRows(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		sql  string
	}{
		{"negative stock update", "UPDATE inventory SET stock = stock - 2 WHERE sku = 'A'"},
		{"negative stock insert", "INSERT INTO inventory (sku, stock, price_cents) VALUES ('B', -1, 100)"},
		{"negative price", "INSERT INTO inventory (sku, stock, price_cents) VALUES ('C', 1, -1)"},
		{"zero stock shards", "INSERT INTO inventory (sku, stock, price_cents, stock_shards) VALUES ('D', 1, 1, 0)"}, // 0009
		{"stock shards to 0", "UPDATE inventory SET stock_shards = 0 WHERE sku = 'A'"},
		{"unknown ledger op", "INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o1', 'A', 'STEAL', 1)"},
		{"negative ledger qty", "INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o1', 'A', 'DEDUCT', -1)"},
		{"zero order line qty", "INSERT INTO order_lines (order_id, sku, qty, unit_price_cents) VALUES ('o1', 'A', 0, 1)"},
	}
	for _, d := range migratedDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			ctx := t.Context()
			if _, err := d.db.ExecContext(ctx, "INSERT INTO inventory (sku, stock, price_cents) VALUES ('A', 1, 100)"); err != nil {
				t.Fatalf("seed: %v", err)
			}
			for _, c := range cases {
				_, err := d.db.ExecContext(ctx, c.sql)
				if err == nil {
					t.Errorf("%s: accepted, want a CHECK violation", c.name)
					continue
				}
				if !sqlstore.IsCheckViolation(err) {
					t.Errorf("%s: IsCheckViolation(%v) = false", c.name, err)
				}
			}
			var stock int64
			if err := d.db.QueryRowContext(ctx, "SELECT stock FROM inventory WHERE sku = 'A'").Scan(&stock); err != nil {
				t.Fatal(err)
			}
			if stock != 1 {
				t.Errorf("stock after refused update = %d, want 1", stock)
			}
			var n int
			if err := d.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM inventory) + (SELECT COUNT(*) FROM stock_ledger) + (SELECT COUNT(*) FROM order_lines)").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("rows after refused inserts = %d, want only the seed row", n)
			}
		})
	}
}

func TestUniqueKeys_RejectDuplicates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		sql  string
	}{
		{"ledger (order, sku, op)", "INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o1', 'A', 'DEDUCT', 1)"},
		{"orders order_id", "INSERT INTO orders (order_id, user_id, status, currency) VALUES ('o1', 'u1', 'PAID', 'EUR')"},
		{"order_lines (order, sku)", "INSERT INTO order_lines (order_id, sku, qty) VALUES ('o1', 'A', 1)"},
		{"payments event_id", "INSERT INTO payments (event_id, order_id, amount_cents, currency, result) VALUES ('e1', 'o1', 1, 'EUR', 'applied')"},
	}
	for _, d := range migratedDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			for _, c := range cases {
				if _, err := d.db.ExecContext(t.Context(), c.sql); err != nil {
					t.Fatalf("%s: first insert: %v", c.name, err)
				}
				if _, err := d.db.ExecContext(t.Context(), c.sql); err == nil {
					t.Errorf("%s: second insert accepted, want a unique-key violation", c.name)
				}
			}
		})
	}
}

func TestStatements(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"empty", "", nil},
		{"comments and blank lines only", "-- a\n\n   -- b\n", nil},
		{"one statement", "SELECT 1;", []string{"SELECT 1"}},
		{"two on separate lines", "SELECT 1;\nSELECT 2;\n", []string{"SELECT 1", "SELECT 2"}},
		{
			"multi-line statement keeps its lines",
			"CREATE TABLE t (\n    a INT,\n    b INT\n);\n",
			[]string{"CREATE TABLE t (\n    a INT,\n    b INT\n)"},
		},
		{
			"comment lines inside a statement are dropped",
			"CREATE TABLE t (\n  -- the key\n  a INT\n);",
			[]string{"CREATE TABLE t (\n  a INT\n)"},
		},
		{"semicolon mid-line does not split", "SELECT ';' AS x, 1;\n", []string{"SELECT ';' AS x, 1"}},
		{"trailing statement without semicolon", "SELECT 1;\nSELECT 2", []string{"SELECT 1", "SELECT 2"}},
		{"semicolon with trailing spaces", "SELECT 1;   \nSELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"CRLF line ends", "SELECT 1;\r\nSELECT 2;\r\n", []string{"SELECT 1", "SELECT 2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := schema.Statements(c.src)
			if !slices.Equal(got, c.want) {
				t.Errorf("Statements(%q) = %q, want %q", c.src, got, c.want)
			}
		})
	}
}

func TestStatements_SplitTheShippedMigrations(t *testing.T) {
	t.Parallel()
	tables := map[string][]string{}
	for _, d := range []string{schema.MySQL, schema.SQLite} {
		migs, err := schema.Migrations(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range migs {
			stmts := schema.Statements(m.SQL)
			if len(stmts) == 0 {
				t.Errorf("%s/%s: no statements", d, m.Name)
			}
			for _, s := range stmts {
				if strings.HasSuffix(s, ";") || strings.Contains(s, "--") || strings.Contains(s, ";\n") {
					t.Errorf("%s/%s: badly split statement %q", d, m.Name, s)
				}
				// INSERT: a table of one row (0006's marker_fence) is created with it.
				if !strings.HasPrefix(s, "CREATE ") && !strings.HasPrefix(s, "ALTER TABLE ") && !strings.HasPrefix(s, "INSERT INTO ") {
					t.Errorf("%s/%s: statement does not start with CREATE, ALTER TABLE or INSERT INTO: %q", d, m.Name, s)
				}
				if name, ok := strings.CutPrefix(s, "CREATE TABLE "); ok {
					tables[d] = append(tables[d], strings.Fields(name)[0])
				}
			}
		}
		sort.Strings(tables[d])
	}
	if !slices.Equal(tables[schema.MySQL], tables[schema.SQLite]) {
		t.Errorf("CREATE TABLE statements differ: mysql %v, sqlite %v", tables[schema.MySQL], tables[schema.SQLite])
	}
	if len(tables[schema.MySQL]) != 10 { // 0004: user_units; 0006: marker_fence
		t.Errorf("mysql creates %d tables, want 10: %v", len(tables[schema.MySQL]), tables[schema.MySQL])
	}
}

// unmigratedDBs returns an empty SQLite database always and an empty MySQL one when MYSQL_DSN is set.
func unmigratedDBs(t *testing.T) []dialectDB {
	t.Helper()
	lite, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "upgrade.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { lite.Close() })
	out := []dialectDB{{schema.SQLite, lite}}
	if testenv.RealMySQL() {
		my, err := sql.Open("mysql", testenv.MySQLDatabase(t))
		if err != nil {
			t.Fatalf("open mysql: %v", err)
		}
		t.Cleanup(func() { my.Close() })
		out = append(out, dialectDB{schema.MySQL, my})
	}
	return out
}

// 0009 on a database already in use: the SKUs stocked before it keep today's layout (stock_shards 1), and
// Migrate applies 0009 alone on top of what the database has seen.
func TestMigrate_0009_ExistingSKUsGetOneShard(t *testing.T) {
	t.Parallel()
	for _, d := range unmigratedDBs(t) {
		t.Run(d.dialect, func(t *testing.T) {
			ctx := t.Context()
			migs, err := schema.Migrations(d.dialect)
			if err != nil {
				t.Fatal(err)
			}
			// The database as 0008 left it, recorded as Migrate records it.
			if _, err := d.db.ExecContext(ctx, `CREATE TABLE schema_migrations (
				version INTEGER NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(40) NOT NULL)`); err != nil {
				t.Fatal(err)
			}
			for _, m := range migs {
				if m.Version >= 9 {
					continue
				}
				for _, s := range schema.Statements(m.SQL) {
					if _, err := d.db.ExecContext(ctx, s); err != nil {
						t.Fatalf("%s: %v", m.Name, err)
					}
				}
				if _, err := d.db.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 'test')",
					m.Version, m.Name); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := d.db.ExecContext(ctx, "INSERT INTO inventory (sku, stock, price_cents) VALUES ('OLD', 5, 100)"); err != nil {
				t.Fatal(err)
			}
			if err := schema.Migrate(ctx, d.db, d.dialect); err != nil {
				t.Fatalf("migrate to 0009: %v", err)
			}
			var shards int
			if err := d.db.QueryRowContext(ctx, "SELECT stock_shards FROM inventory WHERE sku = 'OLD'").Scan(&shards); err != nil {
				t.Fatal(err)
			}
			if shards != 1 {
				t.Errorf("stock_shards of a SKU stocked before 0009 = %d, want 1", shards)
			}
			if _, err := d.db.ExecContext(ctx, "INSERT INTO inventory (sku, stock, price_cents) VALUES ('NEW', 5, 100)"); err != nil {
				t.Fatal(err)
			}
			if err := d.db.QueryRowContext(ctx, "SELECT stock_shards FROM inventory WHERE sku = 'NEW'").Scan(&shards); err != nil || shards != 1 {
				t.Errorf("stock_shards of a SKU inserted without it = %d (%v), want the default 1", shards, err)
			}
			var n int
			if err := d.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != len(migs) {
				t.Errorf("schema_migrations holds %d rows after the upgrade, want %d", n, len(migs))
			}
		})
	}
}
