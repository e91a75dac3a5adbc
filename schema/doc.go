// Package schema holds the database schema of ordersaga as numbered SQL migrations, one set per dialect
// (MySQL is the source of truth, SQLite mirrors it for the embedded local stack), embedded in the binary and
// applied by Migrate.
//
// May import: the standard library only (database/sql; the caller registers the driver); nothing of the
// module (checked by internal/layers).
package schema
