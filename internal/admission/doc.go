// Package admission is the order API's admission gate and the markers of its sold-out fast path, in the
// Redis of the stock store (redisstock's key layout): Gate.CheckOrder answers "sold out" from one round trip,
// Gate.Admit counts the units of the placements in progress under a lease per process, and the idempotency
// key markers say which keys have state in the database. Only the order API uses it; the worker never links
// it.
//
// May import: the root package, internal/redisstock, go-redis and the standard library. Must not import GORM,
// database/sql or Temporal (checked by internal/layers).
package admission
