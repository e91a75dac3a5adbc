package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/activity"
)

// ReservedInDB is the outcome of a reserve that Redis could not serve: nothing is held, and the order's DB
// deduct (conditional, all lines in one transaction) is the only gate. The deduct that follows is the order's
// single deduction, as on the normal path; there is no second one to undo.
const ReservedInDB ReserveOutcome = "db_only"

// FallbackRunID is the run_id of the stock_anomalies rows the Redis-down fallback writes.
const FallbackRunID = "reserve-fallback"

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

// fallbackState is the process-local state of the cold-start load and the Redis-down fallback.
type fallbackState struct {
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
func (f *fallbackState) reservedInDB(sku string, now time.Time) {
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
func (f *fallbackState) resyncDue(sku string, now time.Time) (time.Time, bool) {
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
func (f *fallbackState) resynced(sku string, since time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dbOnly[sku].Equal(since) {
		delete(f.dbOnly, sku)
		f.pending.Store(int32(len(f.dbOnly)))
	}
}

func (f *fallbackState) breakerIsOpen(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return now.Before(f.openUntil)
}

func (f *fallbackState) trip(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.openUntil = now.Add(breakerOpen)
}

// markDue reports whether this SKU's re-sync mark is due: none written by this process in the last MarkEvery.
func (f *fallbackState) markDue(sku string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	last, ok := f.marked[sku]
	return !ok || now.Sub(last) >= MarkEvery
}

// noteMarked records that the SKU's re-sync mark was written at now (only once its row committed: a failed
// write leaves the mark due, and the next reservation writes it).
func (f *fallbackState) noteMarked(sku string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.marked == nil {
		f.marked = map[string]time.Time{}
	}
	if now.After(f.marked[sku]) {
		f.marked[sku] = now
	}
}

func (f *fallbackState) skuLock(sku string) *sync.Mutex {
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

// redisCallError marks the error of a call to Redis (FromRedis).
type redisCallError struct{ err error }

func (e *redisCallError) Error() string { return e.err.Error() }
func (e *redisCallError) Unwrap() error { return e.err }

// FromRedis marks err as the error of a call to Redis, for IsUnreachable (nil stays nil). Mark it where the
// Redis call returns it, and never an error that may come from the database: the database driver fails with
// the same shapes (the MySQL driver's dial error is a *net.OpError, a lock wait past the deadline a context
// deadline), and only Redis's own failure may switch the reserve to the database.
func FromRedis(err error) error {
	if err == nil {
		return nil
	}
	return &redisCallError{err: err}
}

// IsUnreachable reports whether err holds a Redis call's error (marked by FromRedis) that says the call could
// not reach Redis or Redis cannot serve yet: the connection was refused, reset or closed (EOF), a dial, read
// or write on it failed or timed out, or the server is loading its data or lost its master (LOADING,
// MASTERDOWN, TRYAGAIN). Nothing else is: an error no Redis call marked (a database error), Redis's answers,
// a pool timeout or exhaustion (Redis is serving the connections the pool holds: a flash sale must not switch
// its own gate off), the caller's deadline or cancellation when no connection returned it, and a client that
// this process closed.
func IsUnreachable(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *redisCallError:
		return connectionFailed(e.err)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if IsUnreachable(inner) {
				return true
			}
		}
		return false
	case interface{ Unwrap() error }:
		return IsUnreachable(e.Unwrap())
	}
	return false
}

// connectionFailed is IsUnreachable's reading of one Redis call's error (see go-redis v9: a dial error is the
// dialer's *net.OpError, also when its DialTimeout passes (it then matches context.DeadlineExceeded too); a
// read or write timeout is a *net.OpError "i/o timeout"; waiting for a pool connection fails with
// ErrPoolTimeout, or with the bare ctx.Err() when the caller's context ends first).
func connectionFailed(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false // the caller gave up, also in the middle of a dial
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN")
	}
	var operr *net.OpError
	if errors.As(err, &operr) {
		return true // a dial, read or write on the connection failed: refused, reset, unreachable, timed out
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// The caller's deadline, and no connection returned it (it passed waiting for the pool, or between
		// retries). context.DeadlineExceeded is itself a net.Error (Timeout), so this comes before that check.
		return false
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// reserveInDB is the Redis-down path: take nothing, mark the SKU for re-sync, and let the order's DB deduct
// decide. When the fallback is switched off the Redis error is returned (retryable), as before.
func (a *Activities) reserveInDB(ctx context.Context, in LineInput, cause error) (ReserveOutcome, error) {
	a.Metrics.reserveFallback()
	now := time.Now()
	a.fallback.reservedInDB(in.SKU, now)
	if a.fallback.markDue(in.SKU, now) {
		detail := "redis unreachable"
		if cause != nil {
			detail += ": " + cause.Error()
		}
		if err := a.Store.RecordAnomalies(ctx, []Anomaly{{RunID: FallbackRunID, SKU: in.SKU, OrderID: in.OrderID,
			Kind: KindRedisDown, Action: ActionDBOnly, Detail: detail}}); err != nil {
			// No mark, no database-only reservation: the activity retries, and its next attempt marks first.
			return "", fmt.Errorf("reserve %s in db: mark for re-sync: %w", in.SKU, err)
		}
		a.fallback.noteMarked(in.SKU, now)
		activity.GetLogger(ctx).Warn("redis unreachable: reserve falls back to the database deduct; sku marked for re-sync",
			"sku", in.SKU, "order_id", in.OrderID, "error", cause)
	}
	return ReservedInDB, nil
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
func (a *Activities) coldLoad(ctx context.Context, sku string) (bool, error) {
	lock := a.fallback.skuLock(sku)
	lock.Lock()
	defer lock.Unlock()
	if _, loaded, err := a.Redis.Available(ctx, sku); err != nil || loaded {
		return false, err
	}
	res, err := loadAvail(ctx, a.Redis, a.Store, sku)
	if err != nil {
		return false, err
	}
	if res.code == codeLoaded {
		a.Metrics.coldLoad()
		activity.GetLogger(ctx).Warn("sku was not loaded in redis: loaded from the database", "sku", sku, "avail", res.target)
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
func (a *Activities) resyncIfDue(ctx context.Context, sku string) {
	since, due := a.fallback.resyncDue(sku, time.Now())
	if !due {
		return
	}
	res, err := measureAndRepair(ctx, a.Redis, a.Store, sku, modeRepair)
	if err != nil || res.code == codeRaced {
		activity.GetLogger(ctx).Info("re-sync after the Redis-down fallback left for later", "sku", sku, "error", err)
		return
	}
	a.fallback.resynced(sku, since)
	if res.code != codeInLine {
		activity.GetLogger(ctx).Warn("redis answers again: counter re-synced with the database", "sku", sku,
			"before", res.before, "after", res.target)
	}
}
