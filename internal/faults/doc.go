// Package faults injects the store faults that the reliability tests and a chaos program need, each one a
// small handle with named operations:
//
//   - Proxy: an in-process Toxiproxy in front of a TCP server (Redis, MariaDB): latency with jitter,
//     connection resets (reset_peer, or every open connection at once), a blackhole for a while, and
//     removing every toxic.
//   - RedisServer: a redis-server of its own on a free port, without persistence: Restart (the data is
//     lost, the stack must cold-load), StopFor a duration, ScriptFlush, and a Snapshot taken now to
//     RestartFrom later (the data of then); Comebacks says what each start loaded.
//   - MySQL faults on database/sql: KillConnections of a user on a database, and a Crosser that takes
//     inventory row locks in the opposite order to the store's, so the store's transactions meet deadlocks
//     (1213) and, with a short innodb_lock_wait_timeout, lock wait timeouts (1205).
//
// May import: Toxiproxy and its logger, go-redis, database/sql and the standard library; nothing of the
// module, no Temporal (checked by internal/layers).
package faults
