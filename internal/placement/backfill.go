package placement

import (
	"context"
	"fmt"
	"time"
)

// claimsPage is how many idempotency keys one backfill step reads and marks.
const claimsPage = 1000

// backfillTimeout bounds one backfill of the markers.
const backfillTimeout = 10 * time.Minute

// Backfill starts the backfill of the idempotency markers from the database in the background, unless one
// of this service runs already or Run has stopped the service; the backfill returns at once when the markers
// are ready. The process calls it at start; a placement that finds the markers not ready calls it too.
func (s *Service) Backfill() {
	if !s.filling.CompareAndSwap(false, true) {
		return
	}
	if !s.goBackground(func(ctx context.Context) {
		defer s.filling.Store(false)
		if err := s.fillClaims(ctx); err != nil && s.bg.Err() == nil {
			s.cfg.Logger.Warn("sold-out fast path stays off: backfill of the idempotency markers failed; the next order request retries", "error", err)
		}
	}) {
		s.filling.Store(false)
	}
}

// goBackground runs fn in the background under the service's background context (bounded by
// backfillTimeout), unless Run has stopped the service: then it returns false and fn does not run.
func (s *Service) goBackground(fn func(ctx context.Context)) bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bg.Err() != nil {
		return false
	}
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		ctx, cancel := context.WithTimeout(s.bg, backfillTimeout)
		defer cancel()
		fn(ctx)
	}()
	return true
}

// fillClaims marks every key of idempotency_keys within the retention in Redis (markAll), unless the markers
// are ready.
func (s *Service) fillClaims(ctx context.Context) error {
	if ready, err := s.cfg.Stock.ClaimsReady(ctx); err != nil || ready {
		return err
	}
	start := time.Now()
	marked, err := s.markAll(ctx)
	if err != nil {
		return err
	}
	s.cfg.Logger.Info("sold-out fast path on: idempotency markers backfilled", "keys", marked, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// markAll marks every key of idempotency_keys within the retention in Redis (the row's nonce, the TTL its life
// has left), then declares the markers ready if Redis kept its data meanwhile and no other backfill began
// (Stock.FinishClaimsBackfill). It returns how many keys it marked.
func (s *Service) markAll(ctx context.Context) (int, error) {
	rs := s.cfg.Stock
	token, err := rs.BeginClaimsBackfill(ctx)
	if err != nil {
		return 0, err
	}
	var after int64
	marked := 0
	for {
		// Expired rows are skipped: placement treats them as absent, and the cleanup deletes them. A row past
		// its life whose order may be open lives on: its marker gets a full life.
		refs, err := s.cfg.Store.IdempotencyKeysAfter(ctx, after, claimsPage, s.cfg.Retention)
		if err != nil {
			return marked, err
		}
		if len(refs) == 0 {
			break
		}
		markers := make([]marker, len(refs))
		for i, r := range refs {
			age := r.Age
			if r.Open {
				age = 0
			}
			markers[i] = s.markerOf(MarkerName(r.UserID, r.Key), r.Nonce, age, false) // never over a life written since the read
		}
		if err := rs.MarkClaimed(ctx, markers...); err != nil {
			return marked, err
		}
		after = refs[len(refs)-1].ID
		marked += len(refs)
	}
	ok, err := rs.FinishClaimsBackfill(ctx, token)
	if err != nil {
		return marked, err
	}
	if !ok {
		return marked, fmt.Errorf("redis lost its data or another backfill began during this one (%d keys marked)", marked)
	}
	return marked, nil
}
