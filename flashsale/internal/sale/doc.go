// Package sale drives a running ordersaga stack through its HTTP API (docs/http-api.md) the way a flash
// sale does: it sets the stock, fires buyers at one or a few SKUs, pays, cancels, duplicates and pays late a
// share of the winners (and, with bots, keeps ordering as the same users against a per-user limit), waits for
// quiet, and judges the run by the invariants (oversold, lost, duplicate deductions, stuck orders, double
// refunds, units held beyond the per-user limit, buyers told sold out while units were provably free). It renders
// the run as JSON and as one self-contained HTML page. Its buyers behave like a shop's client: answered 503
// with Retry-After they wait as told and come back with the same key (--patience), and the report measures the
// line they stand in: its length over time, the waits, and the overtakes (fairness.go).
// It is the flash-sale load tool's code, kept beside its command (flashsale/, a thin main around Run):
// it is not service code. It speaks the API with the service's own wire types (the root package: Order, Line,
// statuses, PaymentEvent, PaymentAnswer, InventoryBody) and signs payments with internal/webhook.
//
// May import: the root package and internal/webhook; the standard library, the MySQL and SQLite drivers (the
// read-only database view); never the server (internal/api), the stores (activities), Redis, GORM or Temporal.
package sale
