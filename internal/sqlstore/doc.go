// Package sqlstore is the SQL store: the inventory, the stock ledger (deduct and restore, once each per order
// and SKU, with tombstones), the orders and their lines, the payments with their refund outbox and the money
// ledger, the idempotency keys of the order API, and the stock_anomalies and money_anomalies that
// reconciliation writes. It owns its tables (schema/) and its transactions: every rule that decides under an
// order's or a SKU's row lock lives here (docs/design.md, "The row-lock rules"). MySQL (MariaDB) in
// production, SQLite for a fresh machine and the default tests.
//
// May import: the root package, schema, GORM and the MySQL and SQLite drivers, and the standard library.
// Must not import go-redis, Temporal or anything else of the module (checked by internal/layers).
package sqlstore
