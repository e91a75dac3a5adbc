// Package layers holds no code: its test (layers_test.go) reads every package's imports with `go list` and
// fails when a package imports what its layer must not. The layers, as they are today:
//
//   - ordersaga (the root): the domain types; the standard library only, no I/O.
//   - workflows: the saga, deterministic; the root, activities (to name them), the Temporal SDK and API; no
//     Redis, GORM, database/sql, drivers, net, os, randomness or Temporal client.
//   - activities: the only I/O; the root, schema, go-redis, GORM, drivers, the Temporal activity SDK.
//   - schema: the migrations; the standard library only (callers register the driver).
//   - internal/api: HTTP; the root, activities, workflows, orderclient, placement, webhook; no go-redis, GORM,
//     database/sql or drivers (it reaches the stores through activities).
//   - internal/placement: the place-order service, plain Go; the root, activities, workflows, orderclient,
//     the Temporal client and API, golang.org/x/sync; no net/http, go-redis, GORM, database/sql or drivers.
//   - internal/* helpers, each with its own list (see its doc.go); internal/testenv and internal/sagatest are
//     imported by tests only; internal/redislab (a local Redis Cluster's processes) by testenv, bench and chaos; the flash-sale load tool's library (internal/flashsale, or under flashsale/)
//     only by the flashsale command.
//   - commands (package main): worker, starter, localstack, reconcile, paysim, flashsale, bench; nothing
//     imports a main package.
//
// A package that is not in the test's table fails the test: add it there and give it a doc.go that says what
// it may import. Only direct imports are checked: workflows imports activities, which imports go-redis.
//
// calls_test.go reads the source for one rule imports cannot say: tests start the in-process Temporal server
// through sagatest.NewServer, never temporaltest.NewServer directly (sagatest starts it again when a port it
// picked was taken meanwhile).
package layers
