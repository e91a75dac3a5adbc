// Package memredis connects a go-redis client to an embedded miniredis in memory: no socket, and each command
// runs in the goroutine that sends it (Dialer). The local stack's own Redis client uses it, and so do the
// benchmarks that measure the local stack's stores, so that they measure what the stack runs.
//
// May import: miniredis and the standard library (checked by internal/layers).
package memredis
