package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"go.temporal.io/sdk/activity"
)

const (
	// breakerOpen is how long reserves skip Redis after it could not be reached.
	breakerOpen = time.Second
	// MarkEvery bounds the re-sync marks (a DB row and a log line) to one per SKU per process per interval:
	// while a process keeps reserving a SKU through the database, the SKU's newest mark is never older than
	// this.
	MarkEvery = 10 * time.Second
	// ResyncSettle is how long after a SKU's newest re-sync mark reconciliation waits before it clears the
	// mark: a database-only reservation made up to MarkEvery after that mark may still be on its way to its
	// deduct (the workflow's reserve and deduct deadlines, workflows/options.go, bound the way; a test there
	// keeps the sum under this). Until then the SKU is re-synced on every run and the mark stays, so a
	// deduct that lands late is counted (and its order marked) by the next run, as a re-sync.
	ResyncSettle = 2 * time.Minute
	// resyncEvery bounds a process's own re-sync of a SKU (resyncIfDue) to one attempt per interval.
	resyncEvery = time.Second
)

// FallbackState is the process-local state of the cold-start load and the Redis-down fallback: one per
// process (its zero value is ready), shared by every reserve.
type FallbackState struct {
	mu        sync.Mutex
	openUntil time.Time              // Redis is skipped until then
	marked    map[string]time.Time   // last re-sync mark per SKU
	loading   map[string]*sync.Mutex // one cold load per SKU at a time
	// dbOnly is the time of this process's newest database-only reservation of a SKU that its own re-sync
	// has not counted yet; tried is when that re-sync was last attempted.
	dbOnly map[string]time.Time
	tried  map[string]time.Time
	// pending is len(dbOnly), read without the lock: every reserve asks, and almost always none is due.
	pending atomic.Int32
}

// reservedInDB notes a database-only reservation of the SKU made at now.
func (f *FallbackState) reservedInDB(sku string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dbOnly == nil {
		f.dbOnly = map[string]time.Time{}
	}
	f.dbOnly[sku] = now
	f.pending.Store(int32(len(f.dbOnly)))
}

// resyncDue reports whether this process should re-sync the SKU before it reserves it in Redis again (it
// reserved the SKU through the database since its last re-sync, and has not tried for resyncEvery), and
// returns the reservation time that a successful re-sync settles.
func (f *FallbackState) resyncDue(sku string, now time.Time) (time.Time, bool) {
	if f.pending.Load() == 0 {
		return time.Time{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	since, ok := f.dbOnly[sku]
	if !ok || now.Sub(f.tried[sku]) < resyncEvery {
		return time.Time{}, false
	}
	if f.tried == nil {
		f.tried = map[string]time.Time{}
	}
	f.tried[sku] = now
	return since, true
}

// resynced notes that a re-sync counted the database-only reservations made up to since.
func (f *FallbackState) resynced(sku string, since time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dbOnly[sku].Equal(since) {
		delete(f.dbOnly, sku)
		f.pending.Store(int32(len(f.dbOnly)))
	}
}

func (f *FallbackState) breakerIsOpen(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return now.Before(f.openUntil)
}

func (f *FallbackState) trip(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.openUntil = now.Add(breakerOpen)
}

// markDue reports whether this SKU's re-sync mark is due: none written by this process in the last MarkEvery.
func (f *FallbackState) markDue(sku string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	last, ok := f.marked[sku]
	return !ok || now.Sub(last) >= MarkEvery
}

// noteMarked records that the SKU's re-sync mark was written at now (only once its row committed: a failed
// write leaves the mark due, and the next reservation writes it).
func (f *FallbackState) noteMarked(sku string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.marked == nil {
		f.marked = map[string]time.Time{}
	}
	if now.After(f.marked[sku]) {
		f.marked[sku] = now
	}
}

func (f *FallbackState) skuLock(sku string) *sync.Mutex {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loading == nil {
		f.loading = map[string]*sync.Mutex{}
	}
	m, ok := f.loading[sku]
	if !ok {
		m = &sync.Mutex{}
		f.loading[sku] = m
	}
	return m
}

// Reserver holds one line's units in Redis (redisstock.Store.Reserve), loading a SKU whose counter is missing
// from the database first (the cold load) and, when Redis cannot be reached and DBFallback is on, holding
// nothing and letting the order's database deduct decide (ordersaga.ReservedInDB). Build one per call from
// the process's settings; State is the process's, shared.
type Reserver struct {
	Redis      *redisstock.Store
	Store      *sqlstore.Store
	DBFallback bool     // RESERVE_DB_FALLBACK: off, an unreachable Redis fails the reserve retryably
	Metrics    *Metrics // nil: not counted
	State      *FallbackState
}

// Reserve reserves qty units of sku for orderID of userID (counted against the SKU's per-user limit). Besides the store's outcomes it fails with
// ordersaga.ErrNotLoaded (wrapped) when the counter is missing and could not be loaded (fail closed,
// retryable), and with *ordersaga.UnknownSKUError when the SKU does not exist at all. shards is the order's
// shard count of the SKU (redisstock.ReserveIn; 0 or 1: not split).
func (a Reserver) Reserve(ctx context.Context, shards int, orderID, userID, sku string, qty int64) (ordersaga.ReserveOutcome, error) {
	if a.DBFallback && a.State.breakerIsOpen(time.Now()) {
		return a.reserveInDB(ctx, orderID, sku, nil)
	}
	a.resyncIfDue(ctx, sku)
	out, err := a.Redis.ReserveIn(ctx, shards, orderID, userID, sku, qty)
	if errors.Is(err, ordersaga.ErrNotLoaded) {
		if _, ierr := a.Store.Inventory(ctx, sku); errors.Is(ierr, ordersaga.ErrNotFound) {
			return "", fmt.Errorf("reserve %s: %w", sku, &ordersaga.UnknownSKUError{SKU: sku})
		}
		if _, lerr := a.coldLoad(ctx, shards, sku); lerr != nil {
			if a.DBFallback {
				if rerr := a.redisDownAfterColdLoad(ctx, sku, lerr); rerr != nil {
					a.State.trip(time.Now())
					return a.reserveInDB(ctx, orderID, sku, rerr)
				}
			}
			// The database failed, or Redis without being unreachable: fail closed, retryably.
			return "", errors.Join(err, lerr)
		}
		out, err = a.Redis.ReserveIn(ctx, shards, orderID, userID, sku, qty)
	}
	// err is the reserve script's own error: only a Redis call's error may trip the breaker.
	if a.DBFallback && redisstock.IsUnreachable(redisstock.FromRedis(err)) {
		a.State.trip(time.Now())
		return a.reserveInDB(ctx, orderID, sku, err)
	}
	return out, err
}

// redisDownAfterColdLoad tells whether a cold load failed because Redis cannot be reached, and then returns
// the Redis error that says so (nil otherwise). The cold load talks to the database and to Redis, and its
// error does not say which one failed; the shapes do not either (the MySQL driver's dial error is a
// *net.OpError like Redis's). So Redis is asked again, and only its own answer counts: a database error, a
// Redis pool timeout or the activity's deadline leaves the reserve failing closed (NotLoaded, retryable).
// The extra round trip is made only when the cold load's error looks like a connection failure.
func (a Reserver) redisDownAfterColdLoad(ctx context.Context, sku string, lerr error) error {
	if !redisstock.ConnectionFailed(lerr) {
		return nil
	}
	_, _, perr := a.Redis.Available(ctx, sku)
	if !redisstock.IsUnreachable(redisstock.FromRedis(perr)) {
		return nil
	}
	return fmt.Errorf("cold load of %s failed (%v), and redis does not answer: %w", sku, lerr, perr)
}

// reserveInDB is the Redis-down path: take nothing, mark the SKU for re-sync, and let the order's DB deduct
// decide.
func (a Reserver) reserveInDB(ctx context.Context, orderID, sku string, cause error) (ordersaga.ReserveOutcome, error) {
	a.Metrics.reserveFallback()
	now := time.Now()
	a.State.reservedInDB(sku, now)
	if a.State.markDue(sku, now) {
		detail := "redis unreachable"
		if cause != nil {
			detail += ": " + cause.Error()
		}
		if err := a.Store.RecordAnomalies(ctx, []sqlstore.Anomaly{{RunID: sqlstore.FallbackRunID, SKU: sku, OrderID: orderID,
			Kind: sqlstore.KindRedisDown, Action: sqlstore.ActionDBOnly, Detail: detail}}); err != nil {
			// No mark, no database-only reservation: the activity retries, and its next attempt marks first.
			return "", fmt.Errorf("reserve %s in db: mark for re-sync: %w", sku, err)
		}
		a.State.noteMarked(sku, now)
		activity.GetLogger(ctx).Warn("redis unreachable: reserve falls back to the database deduct; sku marked for re-sync",
			"sku", sku, "order_id", orderID, "error", cause)
	}
	return ordersaga.ReservedInDB, nil
}

// coldLoad loads a SKU whose counter is missing (Redis restarted without its data, or the key was lost) from
// the database, the way reconciliation computes it: db.stock minus the units of holds whose DB deduct has not
// landed, minus the units of restores whose release is still to come. The script writes the counter only if it
// is still missing and Redis did not move since the snapshot (loadAvail), so concurrent loads (and
// reconciliation) agree. Loaded reports whether this call wrote it.
//
// What it cannot see: orders that reserved in the Redis that was lost and have not deducted yet. Their holds
// are gone with it and the database has no trace of them until their deduct, so for the moment between the
// load and that deduct Redis promises their units too; the DB's conditional deduct still refuses any oversell
// (I2), and reconciliation brings the counter back to the truth (I3).
func (a Reserver) coldLoad(ctx context.Context, shards int, sku string) (bool, error) {
	lock := a.State.skuLock(sku)
	lock.Lock()
	defer lock.Unlock()
	// A split SKU may miss one shard's counter only (a master that lost its data): the load writes the missing
	// ones (redisstock.RepairStock, load mode).
	if _, loaded, err := a.Redis.Available(ctx, sku); err != nil || loaded && shards <= 1 {
		return false, err
	}
	res, err := loadAvail(ctx, a.Redis, a.Store, sku)
	if err != nil {
		return false, err
	}
	if res.Code == redisstock.Loaded {
		a.Metrics.coldLoad()
		activity.GetLogger(ctx).Warn("sku was not loaded in redis: loaded from the database", "sku", sku, "avail", res.Target)
		return true, nil
	}
	return false, nil
}

// resyncIfDue re-syncs the SKU's counter with the database (reconciliation's compare-and-set, which also marks
// the open orders it counts) when this process reserved it through the database since its last re-sync:
// Redis is answering again and still promises the units those reservations took in the database alone. It
// runs on the first reserve of the SKU after Redis is back instead of waiting for the next reconciliation.
// A failure or a race leaves it due (tried again after resyncEvery) and the reserve goes on; the
// reconciliation's re-sync mark stays either way. A database-only deduct still on its way is counted by a
// later re-sync.
func (a Reserver) resyncIfDue(ctx context.Context, sku string) {
	since, due := a.State.resyncDue(sku, time.Now())
	if !due {
		return
	}
	res, err := measureAndRepair(ctx, a.Redis, a.Store, sku, redisstock.ModeRepair)
	if err != nil || res.Code == redisstock.Raced {
		activity.GetLogger(ctx).Info("re-sync after the Redis-down fallback left for later", "sku", sku, "error", err)
		return
	}
	a.State.resynced(sku, since)
	if res.Code != redisstock.InLine {
		activity.GetLogger(ctx).Warn("redis answers again: counter re-synced with the database", "sku", sku,
			"before", res.Before, "after", res.Target)
	}
}
