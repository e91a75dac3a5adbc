package placement

import (
	"context"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

// This file is the only non-test file of the package that names the stores' package: when the stores move,
// only it changes (and the tests' helpers).

// The stores' types the service names.
type (
	keyRecord = activities.IdempotencyRecord // one row of idempotency_keys
	fastCheck = activities.FastCheck         // what one Redis round trip says about a request
	admission = activities.Admission         // units counted by the admission gate; Done (nil-safe) gives them back
)

// errNotFound is the stores' "no such row".
var errNotFound = activities.ErrNotFound

// Store is what the service needs of the SQL store (activities.Store): the inventory's SKUs, the orders
// table, and idempotency_keys.
type Store interface {
	KnownSKUs(ctx context.Context, skus []string) (map[string]bool, error)
	Order(ctx context.Context, orderID string) (activities.OrderRecord, error)
	ClaimIdempotencyKey(ctx context.Context, userID, key, fingerprint, orderID string) (activities.IdempotencyRecord, bool, error)
	IdempotencyKey(ctx context.Context, userID, key string) (activities.IdempotencyRecord, error)
	MarkIdempotencyStarted(ctx context.Context, userID, key string, generation int64) error
	KeepIdempotentAnswer(ctx context.Context, userID, key string, generation int64, status int, body []byte) (activities.IdempotencyRecord, bool, error)
	NextIdempotencyGeneration(ctx context.Context, userID, key string, generation int64, nextOrderID string) error
	IdempotencyKeysAfter(ctx context.Context, afterID int64, limit int) ([]activities.IdempotencyKeyRef, error)
}

// Stock is what the service needs of the Redis stock store (activities.RedisStock): the sold-out fast path's
// check, the idempotency markers and their backfill, and the admission gate.
type Stock interface {
	CheckOrder(ctx context.Context, marker string, lines []ordersaga.Line) (activities.FastCheck, error)
	MarkClaimed(ctx context.Context, markers ...string) error
	ClaimsReady(ctx context.Context) (bool, error)
	BeginClaimsBackfill(ctx context.Context) (string, error)
	FinishClaimsBackfill(ctx context.Context, token string) (bool, error)
	Admit(ctx context.Context, lines []ordersaga.Line, ttl time.Duration) (*activities.Admission, string, error)
}

var (
	_ Store = (*activities.Store)(nil)
	_ Stock = (*activities.RedisStock)(nil)
)
