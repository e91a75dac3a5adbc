// Package schema holds the database schema of ordersaga as numbered SQL migrations, one set per dialect
// (MySQL is the source of truth, SQLite mirrors it for the embedded local stack), embedded in the binary and
// applied by Migrate.
package schema
