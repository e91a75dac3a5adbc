// Package redisstock is the Redis stock store: per-SKU available counters, holds, per-order markers and
// versions, changed only by its Lua scripts (lua/*.lua, embedded), so every change to a SKU is atomic. The
// key layout is in keys.go (the admission gate's keys too); every key of a SKU shares its hash tag, so the
// scripts run unchanged on Redis Cluster. Its errors are the domain's (ordersaga.SoldOutError,
// ErrNotLoaded, ErrCompensated) and, for a call that could not reach Redis, what IsUnreachable reads.
//
// May import: the root package, go-redis and the standard library. Must not import GORM, database/sql,
// Temporal, miniredis or anything else of the module (checked by internal/layers).
package redisstock
