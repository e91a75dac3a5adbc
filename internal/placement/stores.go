package placement

import (
	"context"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// This file is the only non-test file of the package that names the stores' packages.

// The stores' types the service names.
type (
	keyRecord = sqlstore.IdempotencyRecord // one row of idempotency_keys
	keyClaim  = sqlstore.IdempotencyClaim  // what the first use of a key writes
	marker    = admission.ClaimMarker      // a key's marker in Redis
	fastCheck = admission.FastCheck        // what one Redis round trip says about a request
	admitted  = admission.Admission        // units counted by the admission gate; Done (nil-safe) gives them back
	ticket    = admission.Ticket           // a request's place in its SKUs' lines
)

// Turn is what the lines said of a request (admission.Turn): LineMetrics observes it.
type Turn = admission.Turn

// MarkerName is the name of the key's marker in Redis (the sold-out fast path's idempotency marker), from
// (user, Idempotency-Key) alone (redisstock.ClaimName, through the admission gate that reads the markers).
func MarkerName(userID, key string) string { return admission.ClaimName(userID, key) }

// keyLife is how long a key's row lives after its last use: sqlstore.IdempotencyLife.
func keyLife(retention time.Duration) time.Duration { return sqlstore.IdempotencyLife(retention) }

// errNotFound is the stores' "no such row".
var errNotFound = ordersaga.ErrNotFound

// Store is what the service needs of the SQL store (sqlstore.Store): the inventory's SKUs, the orders
// table, and idempotency_keys.
type Store interface {
	KnownSKUs(ctx context.Context, skus []string) (map[string]bool, error)
	Order(ctx context.Context, orderID string) (ordersaga.OrderRecord, error)
	ClaimIdempotencyKey(ctx context.Context, c sqlstore.IdempotencyClaim, retention time.Duration) (sqlstore.IdempotencyRecord, bool, error)
	IdempotencyKey(ctx context.Context, userID, key string) (sqlstore.IdempotencyRecord, error)
	MarkIdempotencyStarted(ctx context.Context, userID, key, orderID string) error
	KeepIdempotentAnswer(ctx context.Context, userID, key, orderID string, status int, body []byte) (sqlstore.IdempotencyRecord, bool, error)
	NextIdempotencyGeneration(ctx context.Context, userID, key, orderID, nextOrderID string) error
	IdempotencyKeysAfter(ctx context.Context, afterID int64, limit int, retention time.Duration) ([]sqlstore.IdempotencyKeyRef, error)
	ReadMarkerFence(ctx context.Context) (sqlstore.MarkerFence, error)
	RaiseMarkerFence(ctx context.Context) (sqlstore.MarkerFence, error)
	LowerMarkerFence(ctx context.Context, gen int64) (bool, error)
}

// redisUnreachable reports whether a Redis call's error says Redis could not be reached
// (admission.Unreachable): not a busy pool, not the caller's deadline, not Redis's answer.
func redisUnreachable(err error) bool { return admission.Unreachable(err) }

// Stock is what the service needs of the Redis stock store (admission.Gate: the Redis of the stock store): the sold-out fast path's
// check, the idempotency markers and their backfill, and the admission gate.
type Stock interface {
	CheckOrder(ctx context.Context, marker, userID string, lines []ordersaga.Line) (admission.FastCheck, error)
	MarkClaimed(ctx context.Context, markers ...admission.ClaimMarker) error
	ClaimsReady(ctx context.Context) (bool, error)
	BeginClaimsBackfill(ctx context.Context) (string, error)
	FinishClaimsBackfill(ctx context.Context, token string) (bool, error)
	Admit(ctx context.Context, t admission.Ticket, lines []ordersaga.Line, shards map[string]int, ttl time.Duration) (*admission.Admission, admission.Turn, error)
}

var (
	_ Store = (*sqlstore.Store)(nil)
	_ Stock = (*admission.Gate)(nil)
)
