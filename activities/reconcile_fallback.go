package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
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
	// markEvery bounds the re-sync marks (a DB row and a log line) to one per SKU per process per interval.
	markEvery = 10 * time.Second
)

// fallbackState is the process-local state of the cold-start load and the Redis-down fallback.
type fallbackState struct {
	mu        sync.Mutex
	openUntil time.Time              // Redis is skipped until then
	marked    map[string]time.Time   // last re-sync mark per SKU
	loading   map[string]*sync.Mutex // one cold load per SKU at a time
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

// shouldMark reports whether this SKU's re-sync mark is due, and notes it as made.
func (f *fallbackState) shouldMark(sku string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.marked == nil {
		f.marked = map[string]time.Time{}
	}
	if last, ok := f.marked[sku]; ok && now.Sub(last) < markEvery {
		return false
	}
	f.marked[sku] = now
	return true
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

// IsUnreachable reports whether a Redis error means the server could not be reached or cannot serve yet
// (refused, reset, timed out, closed, still loading its data), as opposed to an answer.
func IsUnreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		return strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN")
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// reserveInDB is the Redis-down path: take nothing, mark the SKU for re-sync, and let the order's DB deduct
// decide. When the fallback is switched off the Redis error is returned (retryable), as before.
func (a *Activities) reserveInDB(ctx context.Context, in LineInput, cause error) (ReserveOutcome, error) {
	a.Metrics.reserveFallback()
	now := time.Now()
	if a.fallback.shouldMark(in.SKU, now) {
		activity.GetLogger(ctx).Warn("redis unreachable: reserve falls back to the database deduct; sku marked for re-sync",
			"sku", in.SKU, "order_id", in.OrderID, "error", cause)
		detail := "redis unreachable"
		if cause != nil {
			detail += ": " + cause.Error()
		}
		if err := a.Store.RecordAnomalies(ctx, []Anomaly{{RunID: FallbackRunID, SKU: in.SKU, OrderID: in.OrderID,
			Kind: KindRedisDown, Action: ActionDBOnly, Detail: detail}}); err != nil {
			return "", fmt.Errorf("reserve %s in db: mark for re-sync: %w", in.SKU, err)
		}
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
