// Package activities is the only I/O of the order saga: the Redis Lua reserve/release/confirm scripts
// (RedisStock), the database deduct/restore and order records (Store), and the Temporal activities that call
// them (Activities). Every activity is safe to run twice and out of order: see
// docs/design.md, "The three anomalies".
package activities
