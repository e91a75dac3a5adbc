// Package activities is the only I/O of the order saga: the Redis Lua reserve/release/confirm scripts
// (RedisStock), the database deduct/restore and order records (Store), and the Temporal activities that call
// them (Activities). Every activity is safe to run twice and out of order: see
// docs/design.md, "The three anomalies".
//
// May import: the root package, schema, go-redis, GORM and the database drivers, the Temporal activity SDK,
// Prometheus and the standard library. Must not import workflows, internal/..., commands, miniredis (tests
// and the local stack bring it), or the Temporal workflow, client, worker or server packages (checked by
// internal/layers).
package activities
