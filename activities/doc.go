// Package activities is the order saga's Temporal activities (Activities) and their inputs: thin adapters
// that check the input, call a store (internal/redisstock, internal/sqlstore) or the reconciliation engine
// (internal/reconcile), and turn the domain's errors into typed Temporal application errors (errors.go). Every
// activity is safe to run twice and out of order: see docs/design.md, "The three anomalies". The activity
// names (the methods) and their inputs' fields never change: recorded histories replay against them.
//
// May import: the root package, internal/redisstock, internal/sqlstore, internal/reconcile, internal/retention,
// internal/killpoint (the chaos tool's kill points, inert unless set), the Temporal
// activity SDK and the standard library. Must not import go-redis, GORM or database/sql (the stores do),
// internal/api, or the Temporal workflow, client, worker or server packages (checked by internal/layers).
package activities
