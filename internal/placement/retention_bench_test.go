package placement_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/retention"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// BenchmarkCleanupWhilePlacing measures the idempotency cleanup against the order path, on the test's stores
// (SQLite and miniredis, or MYSQL_DSN and REDIS_ADDR) and the in-process Temporal server: it seeds
// cleanupRows expired rows with their markers, places orders from placers concurrent requests for
// placeWindow without the cleanup, then again while the cleanup deletes every expired row in batches of
// workflows.DefaultIdempotencyCleanupBatch. It reports the cleanup's rows deleted per second and the placement rate without
// and with it, for two paces of the cleanup: batches back to back (pause_0s, the worst case) and with the
// workflow's rest between batches (workflows.DefaultIdempotencyCleanupPause). Run once:
//
//	go test -run '^$' -bench CleanupWhilePlacing -benchtime 1x ./internal/placement/
func BenchmarkCleanupWhilePlacing(b *testing.B) {
	for _, pause := range []time.Duration{0, workflows.DefaultIdempotencyCleanupPause} {
		b.Run("pause_"+pause.String(), func(b *testing.B) { benchCleanupWhilePlacing(b, pause) })
	}
}

func benchCleanupWhilePlacing(b *testing.B, pause time.Duration) {
	const (
		cleanupRows = 30000
		placers     = 16
		placeWindow = 5 * time.Second
	)
	for range b.N {
		se := sagatest.Start(b)
		clk := testenv.NewClock()
		se.Store.SetClock(clk.Now)
		svc := placement.New(placement.Config{Temporal: se.Client, Store: se.Store, Stock: admission.New(se.Redis),
			Currency: "CNY", PaymentTimeout: time.Minute, PlaceTimeout: 2 * time.Minute, KeepAs: keepAs, Retention: testRetention})
		ctx := context.Background()
		se.Stock(b, "BENCH-CLEAN", 10_000_000, 100)
		seedExpired(b, se, clk, cleanupRows)

		var seq atomic.Int64
		place := func(stop <-chan struct{}) int64 {
			var placed atomic.Int64
			var wg sync.WaitGroup
			for range placers {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						key := fmt.Sprintf("k-bench-%d", seq.Add(1))
						out, err := svc.Place(ctx, placement.Request{UserID: "u-bench", Key: key, Lines: []ordersaga.Line{{SKU: "BENCH-CLEAN", Qty: 1}}})
						if err != nil || out.Kind != placement.Reserved {
							b.Errorf("place %s: %s %v", key, out.Kind, err)
							return
						}
						placed.Add(1)
					}
				})
			}
			wg.Wait()
			return placed.Load()
		}
		// Warm up, then the placement rate alone.
		stop := make(chan struct{})
		time.AfterFunc(time.Second, func() { close(stop) })
		place(stop)
		stop = make(chan struct{})
		start := time.Now()
		time.AfterFunc(placeWindow, func() { close(stop) })
		alone := float64(place(stop)) / time.Since(start).Seconds()

		// The same, for as long, while the cleanup deletes expired rows (it has more than it can delete in the
		// window); then the cleanup alone to the last row, for its rate.
		cleaner := retention.Cleaner{Store: se.Store, Redis: se.Redis}
		var sum retention.Summary
		var deleted atomic.Int64 // rows deleted so far, read while the cleanup runs
		cleanDone := make(chan time.Duration, 1)
		cleanStart := time.Now()
		go func() {
			defer func() { cleanDone <- time.Since(cleanStart) }()
			for {
				batch, err := cleaner.Batch(ctx, testRetention, workflows.DefaultIdempotencyCleanupBatch)
				if err != nil {
					b.Error(err)
					return
				}
				sum.Add(batch)
				deleted.Add(int64(batch.Rows))
				if batch.Expired < workflows.DefaultIdempotencyCleanupBatch {
					return
				}
				time.Sleep(pause) // as IdempotencyCleanupWorkflow rests between two full batches
			}
		}()
		// The window starts once the cleanup is under way: its first batch deleted.
		for deadline := time.Now().Add(time.Minute); deleted.Load() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the cleanup deleted no row in a minute")
			}
		}
		stop = make(chan struct{})
		start = time.Now()
		deletedBefore := deleted.Load()
		time.AfterFunc(placeWindow, func() { close(stop) })
		withCleanup := float64(place(stop)) / time.Since(start).Seconds()
		duringSale := float64(deleted.Load()-deletedBefore) / time.Since(start).Seconds()
		cleanTook := <-cleanDone
		if sum.Rows != cleanupRows || sum.Markers != cleanupRows {
			b.Errorf("the cleanup deleted %d rows and %d markers, want %d of each", sum.Rows, sum.Markers, cleanupRows)
		}
		rowsPerSec := float64(sum.Rows) / cleanTook.Seconds()
		b.ReportMetric(rowsPerSec, "rows_deleted/s")
		b.ReportMetric(duringSale, "rows_deleted/s_while_placing")
		b.ReportMetric(alone, "places/s_alone")
		b.ReportMetric(withCleanup, "places/s_with_cleanup")
		b.ReportMetric(withCleanup/alone, "ratio")
		b.Logf("pause %s, db %s: cleanup deleted %d rows + %d markers in %s (%.0f rows/s; %.0f rows/s while orders were placed); placement %.1f orders/s alone, %.1f with the cleanup (ratio %.2f)",
			pause, se.Store.Dialect(), sum.Rows, sum.Markers, cleanTook.Round(time.Millisecond), rowsPerSec, duringSale, alone, withCleanup, withCleanup/alone)
	}
}

// seedExpired writes n rows of idempotency_keys (multi-row inserts) and their markers, then moves the clock
// past the retention.
func seedExpired(b *testing.B, se *sagatest.Env, clk *testenv.Clock, n int) {
	b.Helper()
	ctx := context.Background()
	const chunk = 1000
	now := clk.Now()
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		var (
			vals    []string
			args    []any
			markers []admission.ClaimMarker
		)
		for i := lo; i < hi; i++ {
			key, nonce := fmt.Sprintf("k-seed-%d", i), testenv.RandomID(16)
			vals = append(vals, "(?, ?, 'fp', ?, 0, ?, 0, ?, ?)")
			args = append(args, "u-seed", key, nonce, placement.OrderID("u-seed", key, nonce, 0), now, now)
			markers = append(markers, admission.ClaimMarker{Name: placement.MarkerName("u-seed", key), Nonce: nonce, TTL: time.Hour, New: true})
		}
		if err := se.Store.DB().Exec(`INSERT INTO idempotency_keys (user_id, idem_key, fingerprint, nonce, generation, order_id, started, created_at, updated_at)
			VALUES `+strings.Join(vals, ", "), args...).Error; err != nil {
			b.Fatal(err)
		}
		if err := se.Redis.ClaimMarkers(ctx, markers...); err != nil {
			b.Fatal(err)
		}
	}
	clk.Advance(testRetention + time.Second)
}
