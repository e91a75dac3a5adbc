package schema

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Dialects understood by Migrate.
const (
	MySQL  = "mysql"
	SQLite = "sqlite"
)

//go:embed mysql/*.sql sqlite/*.sql
var files embed.FS

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the migrations of a dialect in version order.
func Migrations(dialect string) ([]Migration, error) {
	if dialect != MySQL && dialect != SQLite {
		return nil, fmt.Errorf("schema: unknown dialect %q (want %q or %q)", dialect, MySQL, SQLite)
	}
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("schema: read %s: %w", dialect, err)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		if !ok || !strings.HasSuffix(name, ".sql") {
			return nil, fmt.Errorf("schema: migration file %q is not named NNNN_name.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("schema: migration file %q: version: %w", name, err)
		}
		body, err := fs.ReadFile(files, path.Join(dialect, name))
		if err != nil {
			return nil, fmt.Errorf("schema: read %s: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("schema: two migrations with version %d", out[i].Version)
		}
	}
	return out, nil
}

// Migrate applies every migration of the dialect that the database has not seen yet. Concurrent callers
// (a worker and a starter booting together) are serialised by a MySQL advisory lock or SQLite's write lock.
func Migrate(ctx context.Context, db *sql.DB, dialect string) error {
	migs, err := Migrations(dialect)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("schema: connect: %w", err)
	}
	defer conn.Close()

	if dialect == MySQL {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('ordersaga_migrate', 60)").Scan(&got); err != nil {
			return fmt.Errorf("schema: lock: %w", err)
		}
		if !got.Valid || got.Int64 != 1 {
			return errors.New("schema: lock: another migration held the lock for 60s")
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK('ordersaga_migrate')") //nolint:errcheck
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(40) NOT NULL)`); err != nil {
		return fmt.Errorf("schema: create schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return fmt.Errorf("schema: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("schema: read schema_migrations: %w", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("schema: read schema_migrations: %w", err)
	}

	for _, m := range migs {
		if applied[m.Version] {
			continue
		}
		if err := apply(ctx, conn, dialect, m); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one migration. MySQL commits DDL implicitly, so a migration there is not atomic: keep each file
// to statements that can be re-run by hand if one fails halfway. SQLite runs it in a transaction.
func apply(ctx context.Context, conn *sql.Conn, dialect string, m Migration) error {
	stmts := Statements(m.SQL)
	if dialect == SQLite {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("schema: %s: begin: %w", m.Name, err)
		}
		defer tx.Rollback() //nolint:errcheck
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("schema: %s: %w", m.Name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
			m.Version, m.Name, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return fmt.Errorf("schema: %s: record: %w", m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("schema: %s: commit: %w", m.Name, err)
		}
		return nil
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("schema: %s: %w", m.Name, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("schema: %s: record: %w", m.Name, err)
	}
	return nil
}

// Statements splits a migration file into statements: `;` at the end of a line ends one, `--` lines are
// comments. Migrations never put a `;` at a line end inside a string.
func Statements(src string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(trimmed, ";") {
			s := strings.TrimSpace(cur.String())
			out = append(out, strings.TrimSuffix(s, ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
