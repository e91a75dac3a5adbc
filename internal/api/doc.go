// Package api is the order API of the starter process (docs/http-api.md is its contract): placing, reading
// and cancelling orders, the signed payment webhook, inventory admin, health, readiness and metrics.
// NewServer builds the handler from its dependencies; Serve runs it with graceful shutdown, so the starter
// and the local stack run the same server. With Deps.SeparateAdmin, /metrics and the detailed /readyz move
// to Server.Admin (the starter's ADMIN_ADDR) and the API's /readyz says only ready or not.
//
// POST /v1/orders decodes and validates the request, then calls internal/placement (the place-order service,
// which owns the fast path, the admission gate and the idempotency key) and maps its outcome to the contract.
//
// May import: the root package, workflows, the stores' packages (internal/sqlstore, internal/redisstock,
// internal/admission), internal/reconcile (the admin stock set, the close of a gone order), internal/placement,
// internal/orderclient, internal/webhook, the Temporal client and API, Prometheus and the standard
// library (net/http). Must not import go-redis, GORM, database/sql or any driver directly,
// internal/platform, internal/testenv or internal/sagatest, or the Temporal workflow, worker or server
// packages (checked by internal/layers).
package api
