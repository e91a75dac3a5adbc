package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
)

// IdempotencyRecord is one row of idempotency_keys: what the order API remembers of one (user, Idempotency-Key)
// for the retention (IDEMPOTENCY_RETENTION) after the key's last use (updated_at), and for as long as the key's
// order may be open.
// The order ID is derived from the pair, the row's Nonce and Generation; Generation moves on only when that
// order was rejected, because a rejection is not remembered (the same key may succeed later) while the
// rejected saga's tombstones are final for its order ID.
type IdempotencyRecord struct {
	UserID      string
	Key         string
	Fingerprint string // sha256 of the canonical request: the same key with another body is refused
	// Nonce is random, written when the row was inserted or last renewed ("" for a row from before migration
	// 0005): it names the row's life, and the life's order IDs derive from it.
	Nonce      string
	Generation int64
	OrderID    string
	// Started is set before the order's workflow is started for this generation: from then on a request with
	// the key attaches to that workflow instead of answering from the sold-out fast path.
	Started bool
	// StatusCode and Body are the first answer, kept byte for byte (StatusCode 0 until then).
	StatusCode int
	Body       []byte
	CreatedAt  time.Time
	// UpdatedAt is the key's last use: written by every write of the row, and by a claim that finds it older
	// than half of IdempotencyRefresh (IdempotencyLife).
	UpdatedAt time.Time
	// Age is how long before the read the key was last used (UpdatedAt), by the store's clock.
	Age time.Duration
	// Refreshed: the claim that returned the record wrote its last use (Age 0) into the life it read, which
	// is then the row's current life for at least the retention: its marker must be set to live as long.
	Refreshed bool
}

// Answered reports whether the first answer is kept, so a request with the key replays it.
func (r IdempotencyRecord) Answered() bool { return r.StatusCode != 0 }

// IdempotencyRefresh is the step of a key's last use: a claim writes the last use of a live row again only when
// it is more than half of this old, so a key replayed many times a minute is written about twice a minute at
// most (a minute at the default retention; a sixtieth of a shorter one).
func IdempotencyRefresh(retention time.Duration) time.Duration { return min(retention/60, time.Minute) }

// IdempotencyLife is how long a key's row lives after its last use: the retention and one refresh step. An
// answer follows the claim that read (or refreshed) the row by less than half a step, so the row lives at
// least the retention after every answer the key gives, though the last use it holds may be half a step old.
func IdempotencyLife(retention time.Duration) time.Duration {
	return retention + IdempotencyRefresh(retention)
}

// keyOrderMayBeOpen is the SQL condition on a row k of idempotency_keys whose order may still be open: its
// current order was started and is not recorded final (it is RESERVING or AWAITING_PAYMENT, or not recorded
// yet: its workflow may still deduct). Such a row is never renewed or deleted, whatever its age; its two
// arguments are openOrderStatuses.
const keyOrderMayBeOpen = `(k.started = 1 AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.order_id = k.order_id AND o.status NOT IN (?, ?)))`

var openOrderStatuses = []any{string(ordersaga.StatusReserving), string(ordersaga.StatusAwaitingPayment)}

// IdempotencyClaim is what the first use of a key writes: the request's fingerprint, and the nonce and the
// generation-0 order ID of the new life.
type IdempotencyClaim struct {
	UserID, Key, Fingerprint, Nonce, OrderID string
}

// claimAttempts bounds ClaimIdempotencyKey's rounds: each lost round means another request inserted, renewed
// or deleted the row meanwhile, and the next round sees what it did.
const claimAttempts = 5

// ClaimIdempotencyKey returns the live row of (c.UserID, c.Key). When there is none it inserts c at generation
// 0. A row unused for its life (IdempotencyLife) is treated as absent and renewed in place with c (a
// compare-and-set on its nonce and last use: concurrent claims renew it once), unless its order may be open
// (keyOrderMayBeOpen): that row lives on, and its last use is written now (Refreshed), as it is for a live row
// last used more than half a refresh step ago. fresh tells whether this call wrote the row's life. Concurrent
// claims of one key see one row.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, c IdempotencyClaim, retention time.Duration) (rec IdempotencyRecord, fresh bool, err error) {
	if retention <= 0 {
		return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: retention %s is not positive", retention)
	}
	life, step := IdempotencyLife(retention), IdempotencyRefresh(retention)/2
	for range claimAttempts {
		now := s.now()
		err := s.db.WithContext(ctx).Exec(`INSERT INTO idempotency_keys (user_id, idem_key, fingerprint, nonce, generation, order_id, started, created_at, updated_at)
			VALUES (?, ?, ?, ?, 0, ?, 0, ?, ?)`, c.UserID, c.Key, c.Fingerprint, c.Nonce, c.OrderID, now, now).Error
		if err != nil && !isDuplicate(err) {
			return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", err)
		}
		inserted := err == nil
		rec, id, err := s.idempotencyRow(ctx, c.UserID, c.Key)
		switch {
		case errors.Is(err, ordersaga.ErrNotFound):
			continue // deleted by the cleanup since the insert failed: insert again
		case err != nil:
			return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", err)
		case inserted || rec.Age <= step:
			return rec, inserted && rec.Nonce == c.Nonce, nil
		}
		keep := rec.Age <= life
		if !keep {
			keep, err = s.keyOrderOpen(ctx, id)
			if err != nil {
				return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", err)
			}
		}
		if keep {
			// A use of a live key (or of one whose order may be open): its last use is now, unless another
			// request wrote the row since it was read (then the next round reads what it wrote).
			res := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET updated_at = ?
				WHERE id = ? AND COALESCE(nonce, '') = ? AND updated_at < ?`, now, id, rec.Nonce, now.Add(-step))
			if res.Error != nil {
				return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: refresh: %w", res.Error)
			}
			if res.RowsAffected == 1 {
				rec.UpdatedAt, rec.Age, rec.Refreshed = now, 0, true
				return rec, false, nil
			}
			continue
		}
		// Unused for its life and no order open: a new life for the key, in place, unless another request
		// wrote (or the cleanup deleted) the row since it was read.
		res := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET nonce = ?, fingerprint = ?, generation = 0, order_id = ?,
			started = 0, status_code = NULL, response_body = NULL, created_at = ?, updated_at = ?
			WHERE id = ? AND COALESCE(nonce, '') = ? AND updated_at < ?`,
			c.Nonce, c.Fingerprint, c.OrderID, now, now, id, rec.Nonce, now.Add(-life))
		if res.Error != nil {
			return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: renew: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			rec, _, err = s.idempotencyRow(ctx, c.UserID, c.Key)
			if err != nil {
				return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w", err)
			}
			return rec, rec.Nonce == c.Nonce, nil
		}
	}
	return IdempotencyRecord{}, false, fmt.Errorf("claim idempotency key: %w: the row kept changing under %d claims", errRetryTx, claimAttempts)
}

// keyOrderOpen reports whether the order of row id of idempotency_keys may be open (keyOrderMayBeOpen).
func (s *Store) keyOrderOpen(ctx context.Context, id int64) (bool, error) {
	var n int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COUNT(*) FROM idempotency_keys k WHERE k.id = ? AND `+keyOrderMayBeOpen,
		append([]any{id}, openOrderStatuses...)...).Scan(&n).Error; err != nil {
		return false, fmt.Errorf("order of the key: %w", err)
	}
	return n > 0, nil
}

// IdempotencyKey reads the row of (userID, key), whatever its age; ordersaga.ErrNotFound when there is none.
func (s *Store) IdempotencyKey(ctx context.Context, userID, key string) (IdempotencyRecord, error) {
	rec, _, err := s.idempotencyRow(ctx, userID, key)
	return rec, err
}

func (s *Store) idempotencyRow(ctx context.Context, userID, key string) (IdempotencyRecord, int64, error) {
	var rows []struct {
		ID           int64
		UserID       string
		IdemKey      string
		Fingerprint  string
		Nonce        sql.NullString
		Generation   int64
		OrderID      string
		Started      int64
		StatusCode   sql.NullInt64
		ResponseBody []byte
		CreatedAt    time.Time
		UpdatedAt    time.Time
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT id, user_id, idem_key, fingerprint, nonce, generation, order_id, started, status_code,
		response_body, created_at, updated_at FROM idempotency_keys WHERE user_id = ? AND idem_key = ?`, userID, key).
		Scan(&rows).Error; err != nil {
		return IdempotencyRecord{}, 0, fmt.Errorf("idempotency key: %w", err)
	}
	if len(rows) == 0 {
		return IdempotencyRecord{}, 0, fmt.Errorf("idempotency key: %w", ordersaga.ErrNotFound)
	}
	r := rows[0]
	return IdempotencyRecord{
		UserID: r.UserID, Key: r.IdemKey, Fingerprint: r.Fingerprint, Nonce: r.Nonce.String, Generation: r.Generation,
		OrderID: r.OrderID, Started: r.Started != 0, StatusCode: int(r.StatusCode.Int64), Body: r.ResponseBody,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Age: s.now().Sub(r.UpdatedAt),
	}, r.ID, nil
}

// The updates of one generation name it by its order ID, which is unique to the row's life and generation:
// a request still busy with a life that expired and was renewed meanwhile can change nothing of the new one.
// Each is a use of the key: it writes its last use (updated_at).

// MarkIdempotencyStarted records that the order orderID (the row's current one) is being placed (its workflow
// started).
func (s *Store) MarkIdempotencyStarted(ctx context.Context, userID, key, orderID string) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET started = 1, updated_at = ?
		WHERE user_id = ? AND idem_key = ? AND order_id = ? AND started = 0`, s.now(), userID, key, orderID).Error
	if err != nil {
		return fmt.Errorf("mark idempotency key started: %w", err)
	}
	return nil
}

// KeepIdempotentAnswer stores the first answer of order orderID while it is the row's current one; an answer
// already kept wins (stored is false then). It returns the row as it now stands, so concurrent requests
// answer with the same bytes.
func (s *Store) KeepIdempotentAnswer(ctx context.Context, userID, key, orderID string, status int, body []byte) (rec IdempotencyRecord, stored bool, err error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET status_code = ?, response_body = ?, updated_at = ?
		WHERE user_id = ? AND idem_key = ? AND order_id = ? AND status_code IS NULL`,
		status, body, s.now(), userID, key, orderID)
	if res.Error != nil {
		return IdempotencyRecord{}, false, fmt.Errorf("keep idempotent answer: %w", res.Error)
	}
	rec, err = s.IdempotencyKey(ctx, userID, key)
	return rec, res.RowsAffected > 0, err
}

// NextIdempotencyGeneration moves the key from a rejected order (orderID, the row's current one) to a new one
// (nextOrderID), once: concurrent requests that saw the same rejection move it one step together.
func (s *Store) NextIdempotencyGeneration(ctx context.Context, userID, key, orderID, nextOrderID string) error {
	err := s.db.WithContext(ctx).Exec(`UPDATE idempotency_keys SET generation = generation + 1, order_id = ?, started = 0, updated_at = ?
		WHERE user_id = ? AND idem_key = ? AND order_id = ? AND status_code IS NULL`,
		nextOrderID, s.now(), userID, key, orderID).Error
	if err != nil {
		return fmt.Errorf("next idempotency generation: %w", err)
	}
	return nil
}

// IdempotencyKeyRef names one row of idempotency_keys and its life, for paging through them.
type IdempotencyKeyRef struct {
	ID     int64
	UserID string
	Key    string
	Nonce  string        // "" for a row from before migration 0005
	Age    time.Duration // since the key's last use when read, by the store's clock
	// Open: the row is past its life but kept, because its order may be open (keyOrderMayBeOpen).
	Open bool
}

// IdempotencyKeysAfter returns up to limit live rows of idempotency_keys with an id above afterID, in id order:
// those used within their life (IdempotencyLife of retention), and those kept because their order may be open.
func (s *Store) IdempotencyKeysAfter(ctx context.Context, afterID int64, limit int, retention time.Duration) ([]IdempotencyKeyRef, error) {
	now, life := s.now(), IdempotencyLife(retention)
	refs, err := s.idempotencyRefs(ctx, `SELECT k.id, k.user_id, k.idem_key, k.nonce, k.updated_at FROM idempotency_keys k
		WHERE k.id > ? AND (k.updated_at >= ? OR `+keyOrderMayBeOpen+`) ORDER BY k.id LIMIT ?`,
		now, append(append([]any{afterID, now.Add(-life)}, openOrderStatuses...), limit)...)
	if err != nil {
		return nil, fmt.Errorf("idempotency keys: %w", err)
	}
	for i := range refs {
		refs[i].Open = refs[i].Age > life
	}
	return refs, nil
}

// ExpiredIdempotencyKeys returns up to limit rows of idempotency_keys unused for their life (IdempotencyLife
// of retention) whose order is not open (not started, or recorded final: keyOrderMayBeOpen), least recently
// used first (through the updated_at index).
func (s *Store) ExpiredIdempotencyKeys(ctx context.Context, retention time.Duration, limit int) ([]IdempotencyKeyRef, error) {
	if retention <= 0 || limit <= 0 {
		return nil, fmt.Errorf("expired idempotency keys: retention %s and limit %d must be positive", retention, limit)
	}
	now := s.now()
	refs, err := s.idempotencyRefs(ctx, `SELECT k.id, k.user_id, k.idem_key, k.nonce, k.updated_at FROM idempotency_keys k
		WHERE k.updated_at < ? AND NOT `+keyOrderMayBeOpen+` ORDER BY k.updated_at, k.id LIMIT ?`,
		now, append(append([]any{now.Add(-IdempotencyLife(retention))}, openOrderStatuses...), limit)...)
	if err != nil {
		return nil, fmt.Errorf("expired idempotency keys: %w", err)
	}
	return refs, nil
}

// idempotencyRefs runs a query of rows (id, user_id, idem_key, nonce, updated_at), their ages as of now.
func (s *Store) idempotencyRefs(ctx context.Context, query string, now time.Time, args ...any) ([]IdempotencyKeyRef, error) {
	var rows []struct {
		ID        int64
		UserID    string
		IdemKey   string
		Nonce     sql.NullString
		UpdatedAt time.Time
	}
	if err := s.db.WithContext(ctx).Raw(query, args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]IdempotencyKeyRef, len(rows))
	for i, r := range rows {
		out[i] = IdempotencyKeyRef{ID: r.ID, UserID: r.UserID, Key: r.IdemKey, Nonce: r.Nonce.String, Age: now.Sub(r.UpdatedAt)}
	}
	return out, nil
}

// DeleteExpiredIdempotencyKeys deletes the rows of refs (from ExpiredIdempotencyKeys) by primary key, each
// only while it is still the expired life that was read (same nonce, still unused for its life: a row used,
// started or renewed meanwhile stays; a row's order cannot open again without a write of the row), in one
// short transaction that touches no other table. It returns the rows deleted.
func (s *Store) DeleteExpiredIdempotencyKeys(ctx context.Context, refs []IdempotencyKeyRef, retention time.Duration) ([]IdempotencyKeyRef, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	var deleted []IdempotencyKeyRef
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		deleted = deleted[:0]
		cutoff := s.now().Add(-IdempotencyLife(retention))
		for _, r := range refs {
			res := tx.Exec(`DELETE FROM idempotency_keys WHERE id = ? AND COALESCE(nonce, '') = ? AND updated_at < ?`,
				r.ID, r.Nonce, cutoff)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				deleted = append(deleted, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete expired idempotency keys: %w", err)
	}
	return deleted, nil
}
