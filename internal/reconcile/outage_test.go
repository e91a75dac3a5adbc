package reconcile_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

func oversold(rep invariants.Report) int64 {
	var n int64
	for _, s := range rep.SKUs {
		n += max(0, s.PaidUnits+s.AwaitingUnits-s.Expected)
	}
	return n
}

func outageSKUs(t *testing.T, e *env, n int) map[string]int64 {
	expected := map[string]int64{}
	for _, sku := range []string{"R-A", "R-B", "R-C", "R-D", "R-E"} {
		units := int64(n) / 5
		e.stock(t, sku, units)
		expected[sku] = units
	}
	return expected
}

// Redis restarted without its data in the middle of a load: reserves find their SKU unloaded and load it
// from the database (or go to the database alone while Redis is away), nothing is oversold, and after one
// reconciliation every SKU is loaded and I1–I4 hold.
func TestReconcile_RedisRestartDuringLoad(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServer(t) // nothing saved: a restart loses every key
	e := startEnv(t, envOptions{redis: redisstock.New(quickClient(t, srv.Addr), "", 0), dbFallback: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n := loadOrders(t, 500, 150, 30)
	expected := outageSKUs(t, e, n)

	var restarted atomic.Bool
	l := load{prefix: "rst", skus: []string{"R-A", "R-B", "R-C", "R-D", "R-E"}, orders: n, concurrency: 30,
		expireAfter: 2 * time.Second, seed: 21}
	res := l.run(ctx, t, e.c, func(done int) {
		if done == n/3 && restarted.CompareAndSwap(false, true) {
			if err := srv.Stop(); err != nil {
				t.Error(err)
			}
			if err := srv.Start(); err != nil {
				t.Error(err)
			}
			t.Logf("redis restarted (data lost) after %d orders", done)
		}
	})
	res.awaitClosed(ctx, t, e.c, 3*time.Minute)
	before, err := invariants.Check(ctx, e.store, e.rs, expected, true)
	if err != nil {
		t.Fatal(err)
	}
	sum := e.reconcileOnce(t, -1)
	rep := e.check(t, expected, true)
	for _, s := range rep.SKUs {
		if !s.RedisLoaded {
			t.Errorf("%s not loaded after reconciliation", s.SKU)
		}
	}
	if res.failed.Load() != 0 {
		t.Errorf("%d order calls failed", res.failed.Load())
	}
	if o := oversold(rep); o != 0 {
		t.Errorf("%d units oversold", o)
	}
	coldLoads := testenv.Metric(t, e.reg, "ordersaga_reserve_cold_loads_total")
	if !restarted.Load() || coldLoads+testenv.Metric(t, e.reg, "ordersaga_reserve_db_fallback_total") == 0 {
		t.Errorf("restart did not happen or went unnoticed (restarted=%v, cold loads %v)", restarted.Load(), coldLoads)
	}
	t.Logf("redis restart: %s; cold loads %v, db fallbacks %v; violations before reconciliation %d; reconciliation: %s; oversold units %d\n%s",
		res, coldLoads, testenv.Metric(t, e.reg, "ordersaga_reserve_db_fallback_total"), len(before.Violations), sum, oversold(rep), rep)
}

// Redis stopped in the middle of a load and started again (its data kept, now stale): orders keep being
// reserved through the database deduct alone, nothing is oversold, the SKUs are marked for re-sync, and one
// reconciliation after Redis is back brings every counter in line (I3) with I1–I4 holding.
func TestReconcile_RedisDownDuringLoad(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServer(t, "--appendonly", "yes", "--appendfsync", "always") // a restart brings the data back
	e := startEnv(t, envOptions{redis: redisstock.New(quickClient(t, srv.Addr), "", 0), dbFallback: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n := loadOrders(t, 500, 150, 30)
	expected := outageSKUs(t, e, n)

	var stopped atomic.Bool
	outage := make(chan struct{})
	back := make(chan struct{})
	go func() {
		defer close(back)
		select {
		case <-outage:
		case <-ctx.Done():
			return
		}
		// Keep it down until a reserve has gone to the database alone (at least 2s, at most 20s).
		down := time.Now()
		for time.Since(down) < 2*time.Second ||
			(testenv.Metric(t, e.reg, "ordersaga_reserve_db_fallback_total") == 0 && time.Since(down) < 20*time.Second) {
			time.Sleep(100 * time.Millisecond)
		}
		if err := srv.Start(); err != nil {
			t.Error(err)
		}
		t.Logf("redis back after %s", time.Since(down).Round(time.Millisecond))
	}()
	l := load{prefix: "down", skus: []string{"R-A", "R-B", "R-C", "R-D", "R-E"}, orders: n, concurrency: 30,
		expireAfter: 2 * time.Second, seed: 31}
	res := l.run(ctx, t, e.c, func(done int) {
		if done == n/3 && stopped.CompareAndSwap(false, true) {
			if err := srv.Stop(); err != nil {
				t.Error(err)
			}
			t.Logf("redis stopped after %d orders", done)
			close(outage)
		}
	})
	<-back
	res.awaitClosed(ctx, t, e.c, 3*time.Minute)
	// The first run must see the marks younger than ResyncSettle. On a loaded machine (the race detector, the
	// real stores) the load alone can outlast it, so the marks are made young here rather than assumed so.
	if err := e.store.DB().WithContext(ctx).Exec("UPDATE stock_anomalies SET created_at = ? WHERE kind = ?",
		time.Now().UTC(), sqlstore.KindRedisDown).Error; err != nil {
		t.Fatal(err)
	}
	sum := e.reconcileOnce(t, -1)
	rep := e.check(t, expected, true)
	fallbacks := testenv.Metric(t, e.reg, "ordersaga_reserve_db_fallback_total")
	if fallbacks == 0 {
		t.Errorf("no reserve fell back to the database while Redis was down")
	}
	if res.failed.Load() != 0 {
		t.Errorf("%d order calls failed", res.failed.Load())
	}
	if o := oversold(rep); o != 0 {
		t.Errorf("%d units oversold", o)
	}
	// The orders whose reserve went to the database alone (one is named per SKU mark) were served.
	rows, err := e.store.Anomalies(ctx, sqlstore.FallbackRunID)
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	for _, r := range rows {
		o, err := e.store.Order(ctx, r.OrderID)
		if err == nil && o.Status != ordersaga.StatusRejected {
			served++
		}
	}
	if len(rows) == 0 || served == 0 {
		t.Errorf("%d re-sync marks, %d of their orders served; want some of each", len(rows), served)
	}
	// The marks are younger than ResyncSettle: the SKUs are re-synced but their marks stay (a database-only
	// reservation could still be on its way to its deduct).
	if sum.Resynced != 0 {
		t.Errorf("reconciliation cleared a re-sync mark younger than %v: %s", reconcile.ResyncSettle, sum)
	}
	// Once the marks are ResyncSettle old, the next run clears them, and the one after finds nothing.
	if err := e.store.DB().WithContext(ctx).Exec("UPDATE stock_anomalies SET created_at = ? WHERE kind = ?",
		time.Now().UTC().Add(-reconcile.ResyncSettle-time.Second), sqlstore.KindRedisDown).Error; err != nil {
		t.Fatal(err)
	}
	settled := e.reconcileOnce(t, -1)
	if settled.Resynced == 0 {
		t.Errorf("reconciliation after the marks settled resynced no SKU: %s", settled)
	}
	again := e.reconcileOnce(t, -1)
	if again.Repairs() != 0 || again.Resynced != 0 {
		t.Errorf("the reconciliation after the re-sync still found something: %s", again)
	}
	t.Logf("redis down: %s; db fallbacks %v (%d re-sync marks, %d of their orders served); reconciliation after: %s; once settled: %s; the next: %s; oversold units %d\n%s",
		res, fallbacks, len(rows), served, sum, settled, again, oversold(rep), rep)
}
