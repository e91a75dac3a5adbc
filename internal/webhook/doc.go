// Package webhook signs and verifies the payment webhook's Payment-Signature header (docs/http-api.md, "Payments"):
// t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>, several v1 for key rotation, a tolerance
// on the timestamp. The order API verifies with it; the payment simulator, the flash-sale tool and the tests sign with
// it.
//
// May import: the standard library only, without I/O (no net, database/sql or os); nothing of the module
// (checked by internal/layers).
package webhook
