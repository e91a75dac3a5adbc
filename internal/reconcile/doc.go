// Package reconcile keeps Redis in line with the database, which wins (docs/reconciliation.md): the engine
// that compares a SKU's counter, holds and markers with the database's truth and repairs Redis with a
// compare-and-set (Reconciler.SKU), the leaked-order repair (Reconciler.Leaks, CloseGone), the money
// reconciliation (Money), the loads of a counter from the database (the admin stock set SetStock, LoadStock,
// and the cold load of a reserve), the reserve's Redis-down fallback to the database deduct with its breaker
// and re-sync (Reserver), and their metrics. ReconcileWorkflow, which runs it on a Schedule, is in
// workflows/; its activities in activities/; the Schedule and the on-demand run in internal/platform.
//
// May import: the root package, internal/redisstock, internal/sqlstore, the Temporal activity package (its
// logger), Prometheus and the standard library. Must not import go-redis, GORM or database/sql (it goes
// through the stores), nor workflows or the Temporal client, worker or server (checked by internal/layers).
package reconcile
