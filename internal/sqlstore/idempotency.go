package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga"
)

// IdempotencyRecord is one row of idempotency_keys: what the order API remembers of one (user, Idempotency-Key).
// The order ID is derived from the pair and Generation; Generation moves on only when that order was rejected,
// because a rejection is not remembered (the same key may succeed later) while the rejected saga's tombstones
// are final for its order ID.
type IdempotencyRecord struct {
	UserID      string
	Key         string
	Fingerprint string // sha256 of the canonical request: the same key with another body is refused
	Generation  int64
	OrderID     string
	// Started is set before the order's workflow is started for this generation: from then on a request with
	// the key attaches to that workflow instead of answering from the sold-out fast path.
	Started bool
	// StatusCode and Body are the first answer, kept byte for byte (StatusCode 0 until then).
	StatusCode int
	Body       []byte
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Answered reports whether the first answer is kept, so a request with the key replays it.
func (r IdempotencyRecord) Answered() bool { return r.StatusCode != 0 }

// ClaimIdempotencyKey returns the row of (userID, key), inserting it at generation 0 with orderID when it does
// not exist yet; created tells which. Concurrent claims of one key see one row.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, userID, key, fingerprint, orderID string) (IdempotencyRecord, bool, error) {
	now := s.now()
	err := s.db.WithContext(ctx).Exec(`INSERT INTO idempotency_keys (user_id, idem_key, fingerprint, generation, order_id, started, created_at, updated_at)
		VALUES (?, ?, ?, 0, ?, 0, ?, ?)`, userID, key, fingerprint, orderID, now, now).Error
	if err != nil && !isDuplicate(err) {
		return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	rec, rerr := s.IdempotencyKey(ctx, userID, key)
	if rerr != nil {
		return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", rerr)
	}
	return rec, err == nil, nil
}

// IdempotencyKey reads the row of (userID, key); ordersaga.ErrNotFound when there is none.
func (s *Store) IdempotencyKey(ctx context.Context, userID, key string) (IdempotencyRecord, error) {
	var rows []struct {
		UserID       string
		IdemKey      string
		Fingerprint  string
		Generation   int64
		OrderID      string
		Started      int64
		StatusCode   sql.NullInt64
		ResponseBody []byte
		CreatedAt    time.Time
		UpdatedAt    time.Time
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT user_id, idem_key, fingerprint, generation, order_id, started, status_code,
		response_body, created_at, updated_at FROM idempotency_keys WHERE user_id = ? AND idem_key = ?`, userID, key).
		Scan(&rows).Error; err != nil {
		return IdempotencyRecord{}, fmt.Errorf("idempotency key: %w", err)
	}
	if len(rows) == 0 {
		return IdempotencyRecord{}, fmt.Errorf("idempotency key: %w", ordersaga.ErrNotFound)
	}
	r := rows[0]
	return IdempotencyRecord{
		UserID: r.UserID, Key: r.IdemKey, Fingerprint: r.Fingerprint, Generation: r.Generation, OrderID: r.OrderID,
		Started: r.Started != 0, StatusCode: int(r.StatusCode.Int64), Body: r.ResponseBody,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}

// MarkIdempotencyStarted records that the order of this generation is being placed (its workflow started).
func (s *Store) MarkIdempotencyStarted(ctx context.Context, userID, key string, generation int64) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET started = 1, updated_at = ?
		WHERE user_id = ? AND idem_key = ? AND generation = ? AND started = 0`, s.now(), userID, key, generation).Error
	if err != nil {
		return fmt.Errorf("mark idempotency key started: %w", err)
	}
	return nil
}

// KeepIdempotentAnswer stores the first answer of this generation; an answer already kept wins (stored is
// false then). It returns the row as it now stands, so concurrent requests answer with the same bytes.
func (s *Store) KeepIdempotentAnswer(ctx context.Context, userID, key string, generation int64, status int, body []byte) (rec IdempotencyRecord, stored bool, err error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET status_code = ?, response_body = ?, updated_at = ?
		WHERE user_id = ? AND idem_key = ? AND generation = ? AND status_code IS NULL`,
		status, body, s.now(), userID, key, generation)
	if res.Error != nil {
		return IdempotencyRecord{}, false, fmt.Errorf("keep idempotent answer: %w", res.Error)
	}
	rec, err = s.IdempotencyKey(ctx, userID, key)
	return rec, res.RowsAffected > 0, err
}

// NextIdempotencyGeneration moves the key from a rejected order (generation) to a new one (nextOrderID), once:
// concurrent requests that saw the same rejection move it one step together.
func (s *Store) NextIdempotencyGeneration(ctx context.Context, userID, key string, generation int64, nextOrderID string) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET generation = generation + 1, order_id = ?, started = 0, updated_at = ?
		WHERE user_id = ? AND idem_key = ? AND generation = ? AND status_code IS NULL`,
		nextOrderID, s.now(), userID, key, generation).Error
	if err != nil {
		return fmt.Errorf("next idempotency generation: %w", err)
	}
	return nil
}

// IdempotencyKeyRef names one row of idempotency_keys, for paging through them.
type IdempotencyKeyRef struct {
	ID     int64
	UserID string
	Key    string
}

// IdempotencyKeysAfter returns up to limit rows of idempotency_keys with an id above afterID, in id order.
func (s *Store) IdempotencyKeysAfter(ctx context.Context, afterID int64, limit int) ([]IdempotencyKeyRef, error) {
	var rows []struct {
		ID      int64
		UserID  string
		IdemKey string
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT id, user_id, idem_key FROM idempotency_keys WHERE id > ? ORDER BY id LIMIT ?`,
		afterID, limit).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("idempotency keys: %w", err)
	}
	out := make([]IdempotencyKeyRef, len(rows))
	for i, r := range rows {
		out[i] = IdempotencyKeyRef{ID: r.ID, UserID: r.UserID, Key: r.IdemKey}
	}
	return out, nil
}
