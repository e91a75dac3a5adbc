// Package placement is the place-order service: plain Go, no HTTP. Service.Place takes one order request
// (user, Idempotency-Key, lines) and returns a typed Outcome: reserved, replayed, sold out, in line, pending,
// unknown SKU, key reused, rejected or unavailable. It owns the rules of POST /v1/orders past decoding: the
// sold-out fast path (one Redis round trip), the line and the admission gate, the idempotency claim and its kept first
// answer, the answer from the database for a final order, and Update-with-Start through internal/orderclient.
// Service.Run stops its background work (the backfill of the fast path's idempotency markers). The order API
// (internal/api) decodes a request, calls Place and maps the Outcome to the contract's status and problem.
//
// The stores are reached through the small interfaces of stores.go (sqlstore.Store and admission.Gate satisfy
// them); that file is the only non-test file that names their packages.
//
// May import: the root package, internal/sqlstore and internal/admission (the stores' types), workflows,
// internal/orderclient, the Temporal SDK client and API, golang.org/x/sync and the standard library. Must not import net/http,
// go-redis, GORM, database/sql or any driver, internal/api, or the Temporal workflow, worker or server
// packages (checked by internal/layers).
package placement
