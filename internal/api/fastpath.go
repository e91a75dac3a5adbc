package api

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
)

// claimsPage is how many idempotency keys one backfill step reads and marks.
const claimsPage = 1000

// checkOrder is the sold-out fast path's one Redis round trip (admission.Gate.CheckOrder). While the
// idempotency markers are not ready (a fresh or wiped Redis) it starts their backfill, and the request takes
// the slow path meanwhile.
func (s *server) checkOrder(ctx context.Context, marker string, lines []ordersaga.Line) (admission.FastCheck, error) {
	c, err := s.Gate.CheckOrder(ctx, marker, lines)
	if err == nil && !c.Ready {
		s.fillClaimsInBackground()
	}
	return c, err
}

// fillClaimsInBackground backfills the idempotency markers from the database unless a backfill of this
// process is running already.
// It runs under the server's background context: Server.Run stops it.
func (s *server) fillClaimsInBackground() {
	if !s.filling.CompareAndSwap(false, true) {
		return
	}
	s.bgMu.Lock()
	if s.bg.Err() != nil {
		s.bgMu.Unlock()
		s.filling.Store(false)
		return
	}
	s.bgWork.Add(1)
	s.bgMu.Unlock()
	go func() {
		defer s.bgWork.Done()
		defer s.filling.Store(false)
		ctx, cancel := context.WithTimeout(s.bg, 10*time.Minute)
		defer cancel()
		if err := s.fillClaims(ctx); err != nil {
			if s.bg.Err() != nil {
				return // stopped by Server.Run
			}
			s.Logger.Warn("sold-out fast path stays off: backfill of the idempotency markers failed; the next order request retries", "error", err)
		}
	}()
}

// fillClaims marks every key of idempotency_keys in Redis, then declares the markers ready if Redis kept its
// data meanwhile (admission.Gate.FinishClaimsBackfill).
func (s *server) fillClaims(ctx context.Context) error {
	if ready, err := s.Gate.ClaimsReady(ctx); err != nil || ready {
		return err
	}
	start := time.Now()
	token, err := s.Gate.BeginClaimsBackfill(ctx)
	if err != nil {
		return err
	}
	var after int64
	marked := 0
	for {
		refs, err := s.Store.IdempotencyKeysAfter(ctx, after, claimsPage)
		if err != nil {
			return err
		}
		if len(refs) == 0 {
			break
		}
		markers := make([]string, len(refs))
		for i, r := range refs {
			markers[i] = OrderID(r.UserID, r.Key, 0)
		}
		if err := s.Gate.MarkClaimed(ctx, markers...); err != nil {
			return err
		}
		after = refs[len(refs)-1].ID
		marked += len(refs)
	}
	ok, err := s.Gate.FinishClaimsBackfill(ctx, token)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("redis lost its data or another backfill began during this one (%d keys marked)", marked)
	}
	s.Logger.Info("sold-out fast path on: idempotency markers backfilled", "keys", marked, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
