// Package api is the order API of the starter process (docs/http-api.md is its contract): placing, reading
// and cancelling orders, the signed payment webhook, inventory admin, health, readiness and metrics.
// NewServer builds the handler from its dependencies; Serve runs it with graceful shutdown, so the starter
// and the local stack run the same server.
package api
