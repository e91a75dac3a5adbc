package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// Cleaner deletes expired idempotency records through the stores.
type Cleaner struct {
	Store   *sqlstore.Store
	Redis   *redisstock.Store
	Metrics *Metrics // nil: not counted
}

// Batch is what one batch found and deleted.
type Batch struct {
	Expired int // expired rows read (the batch's size; fewer than asked: none left)
	Rows    int // rows deleted (an expired row used or renewed meanwhile by a request stays)
	Markers int // markers deleted (a marker that expired by its TTL, or that a new life of the key set, stays)
}

// Summary adds up the batches of one run.
type Summary struct {
	Batches, Rows, Markers int
}

// Add counts one batch.
func (s *Summary) Add(b Batch) {
	s.Batches++
	s.Rows += b.Rows
	s.Markers += b.Markers
}

// Batch deletes up to limit rows of idempotency_keys unused for their life (the retention and a refresh step:
// sqlstore.IdempotencyLife) whose order is not open, least recently used first, then the markers of the rows
// it deleted. A row whose order may still be open (awaiting payment, or started and not recorded yet) is never
// deleted, whatever its age. The row goes first: a request that comes between finds no row and starts a new life,
// whose marker (another nonce) the marker's compare-and-delete leaves alone. A marker that cannot be
// deleted (Redis down) is an error, but harmless meanwhile: it expires by its TTL shortly after its row's life.
func (c *Cleaner) Batch(ctx context.Context, retention time.Duration, limit int) (Batch, error) {
	if retention <= 0 || limit <= 0 {
		return Batch{}, fmt.Errorf("idempotency cleanup: retention %s and batch %d must be positive", retention, limit)
	}
	expired, err := c.Store.ExpiredIdempotencyKeys(ctx, retention, limit)
	if err != nil {
		return Batch{}, fmt.Errorf("idempotency cleanup: %w", err)
	}
	b := Batch{Expired: len(expired)}
	deleted, err := c.Store.DeleteExpiredIdempotencyKeys(ctx, expired, retention)
	if err != nil {
		return b, fmt.Errorf("idempotency cleanup: %w", err)
	}
	b.Rows = len(deleted)
	c.Metrics.rows(b.Rows)
	markers := make([]redisstock.ClaimMarker, len(deleted))
	for i, r := range deleted {
		markers[i] = redisstock.ClaimMarker{Name: redisstock.ClaimName(r.UserID, r.Key), Nonce: r.Nonce}
	}
	b.Markers, err = c.Redis.ForgetClaims(ctx, markers...)
	if err != nil {
		return b, fmt.Errorf("idempotency cleanup: %d rows deleted, their markers not: %w", b.Rows, err)
	}
	c.Metrics.markers(b.Markers)
	return b, nil
}
