package placement

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/ordersaga/ordersaga"
)

// The markers' fence (sqlstore.MarkerFence, table marker_fence). While Redis is unreachable and the
// database-only path is on, a placement claims its key in the database but cannot write the key's marker; a
// process whose Redis answers would then take the key for one without state, and could answer a retry of a
// placed order from the sold-out fast path ("sold out") or the admission gate. So a placement that starts an
// order whose key it could not mark raises the fence first, every process keeps the fast path and the gate off
// while the fence is up (or while its copy of it is too old to trust), and once Redis answers a process
// re-marks every key within the retention and lowers the fence, unless it was raised again meanwhile.
const (
	// fenceRefresh is the age of this process's copy of the fence at which a placement reads it again.
	fenceRefresh = 500 * time.Millisecond
	// fenceTrust is the age past which the copy is not trusted: the fast path is off until it is read again.
	fenceTrust = time.Second
	// fenceSettle is how long a raised fence must have been up before its raiser starts the order: every
	// process's copy is then younger than the raise, or untrusted. The margin covers the read's own time.
	fenceSettle = fenceTrust + 250*time.Millisecond
	// fenceLowerEvery spaces this process's attempts at lowering the fence.
	fenceLowerEvery = time.Second
)

// fenceCopy is this process's last read of the fence.
type fenceCopy struct {
	readAt time.Time // when the read began (monotonic)
	active bool
}

// fenceState is the service's copy of the fence and its background lowering.
type fenceState struct {
	copy     atomic.Pointer[fenceCopy]
	lowering atomic.Bool
	lastTry  atomic.Int64 // unix nanoseconds of the last lowering attempt
}

// placesWithoutRedis reports whether a Redis call's error lets the placement go on through the database alone:
// Redis is unreachable (not merely busy or slow) and the database-only path is on (RESERVE_DB_FALLBACK).
func (s *Service) placesWithoutRedis(err error) bool {
	return s.cfg.RedisDownFallback && redisUnreachable(err)
}

// checkOrder is the sold-out fast path's one Redis round trip (Stock.CheckOrder). While the idempotency
// markers are not ready (a fresh or wiped Redis) it starts their backfill, and the request takes the slow
// path meanwhile; while the markers' fence is up (keys claimed while Redis was unreachable may lack their
// markers) the markers count as not ready too, and it starts their re-marking.
func (s *Service) checkOrder(ctx context.Context, marker, userID string, lines []ordersaga.Line) (fastCheck, error) {
	c, err := s.cfg.Stock.CheckOrder(ctx, marker, userID, lines)
	if err != nil {
		return c, err
	}
	if !c.Ready {
		s.Backfill()
	}
	if s.fenced(ctx) {
		c.Ready = false
		s.lowerFence()
	}
	return c, nil
}

// fenced reports whether the fast path and the admission gate must stay off: the fence is up, or this
// process's copy of it is too old to trust and cannot be read now. A copy older than fenceRefresh but still
// trusted is refreshed in the background, so under a steady load no request waits for the read.
func (s *Service) fenced(ctx context.Context) bool {
	c := s.fence.copy.Load()
	switch {
	case c == nil || time.Since(c.readAt) > fenceTrust:
		c = s.readFence(ctx) // nothing to trust: this request waits for the read
	case time.Since(c.readAt) > fenceRefresh:
		s.fenceReads.DoChan("fence", s.fenceRead(ctx)) // the copy is trusted meanwhile
	}
	return c == nil || c.active || time.Since(c.readAt) > fenceTrust
}

// readFence reads the fence into this process's copy (one read at a time; concurrent callers share it) and
// returns the copy (the previous one when the read failed).
func (s *Service) readFence(ctx context.Context) *fenceCopy {
	v, _, _ := s.fenceReads.Do("fence", s.fenceRead(ctx))
	c, _ := v.(*fenceCopy)
	return c
}

// fenceRead is one read of the fence into this process's copy, bounded by fenceTrust and not cancelled with
// ctx (other callers share it); it returns the new copy, or the previous one when the read failed.
func (s *Service) fenceRead(ctx context.Context) func() (any, error) {
	return func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fenceTrust)
		defer cancel()
		start := time.Now()
		f, err := s.cfg.Store.ReadMarkerFence(rctx)
		if err != nil {
			s.cfg.Logger.Warn("read the markers' fence: the sold-out fast path is off until it is read", "error", err)
			return s.fence.copy.Load(), nil
		}
		c := &fenceCopy{readAt: start, active: f.Active}
		for {
			// A read that began before a newer copy (this process's own raise) never replaces it.
			prev := s.fence.copy.Load()
			if prev != nil && prev.readAt.After(start) {
				return prev, nil
			}
			if s.fence.copy.CompareAndSwap(prev, c) {
				return c, nil
			}
		}
	}
}

// raiseFence raises the fence for a key claimed without its marker, and returns once it has been up long
// enough for every process to have seen it.
func (s *Service) raiseFence(ctx context.Context) error {
	f, err := s.cfg.Store.RaiseMarkerFence(ctx)
	if err != nil {
		return err
	}
	s.fence.copy.Store(&fenceCopy{readAt: time.Now(), active: true})
	if wait := fenceSettle - f.ActiveFor; wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return nil
}

// lowerFence starts, in the background, the re-marking of every key within the retention and the lowering of
// the fence (unless one runs already, one began less than fenceLowerEvery ago, or Run has stopped the
// service). A placement that found Redis answering while the fence is up calls it.
func (s *Service) lowerFence() {
	now := time.Now().UnixNano()
	if now-s.fence.lastTry.Load() < int64(fenceLowerEvery) || !s.fence.lowering.CompareAndSwap(false, true) {
		return
	}
	s.fence.lastTry.Store(now)
	if !s.goBackground(func(ctx context.Context) {
		defer s.fence.lowering.Store(false)
		if err := s.remarkAndLower(ctx); err != nil && s.bg.Err() == nil {
			s.cfg.Logger.Warn("sold-out fast path stays off: the markers of keys claimed while Redis was unreachable are not written yet; the next order request retries", "error", err)
		}
	}) {
		s.fence.lowering.Store(false)
	}
}

// errFenceRaisedAgain: a placement raised the fence while the keys were being re-marked.
var errFenceRaisedAgain = errors.New("the fence was raised again while the markers were written")

// remarkAndLower marks every key within the retention (a full backfill, which also declares the markers
// ready) and lowers the fence if nobody raised it since it was read: every key claimed before that read is
// marked, and a placement raises it after its claim.
func (s *Service) remarkAndLower(ctx context.Context) error {
	f, err := s.cfg.Store.ReadMarkerFence(ctx)
	if err != nil || !f.Active {
		return err
	}
	start := time.Now()
	marked, err := s.markAll(ctx)
	if err != nil {
		return err
	}
	ok, err := s.cfg.Store.LowerMarkerFence(ctx, f.Gen)
	switch {
	case err != nil:
		return err
	case !ok:
		return errFenceRaisedAgain
	}
	s.fence.copy.Store(nil) // read it again
	s.cfg.Logger.Info("sold-out fast path on again: the markers of keys claimed while Redis was unreachable are written",
		"keys", marked, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
