package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// A SKU's stock in shards, under orders that are paid, cancelled and left to expire, with reconciliation
// running all along, a shard drifted under, another over and a third holding a stray hold before the load: no
// unit is sold twice or lost, and once quiet every shard's counter adds up to the database's stock with no hold left.
func TestReconcile_SplitSKUsKeepEveryInvariantUnderLoad(t *testing.T) {
	t.Parallel()
	e := startEnv(t, envOptions{})
	ctx := context.Background()
	shards := map[string]int{"SPLIT-A": 4, "SPLIT-B": 8}
	expected := map[string]int64{"SPLIT-A": 40, "SPLIT-B": 30}
	for sku, n := range shards {
		v, err := reconcile.SetStock(ctx, e.store, e.rs, sqlstore.InventorySpec{SKU: sku, Stock: expected[sku], PriceCents: 100, StockShards: n})
		if err != nil {
			t.Fatal(err)
		}
		if v.RedisAvailable == nil || *v.RedisAvailable != expected[sku] || v.StockShards != n {
			t.Fatalf("SetStock(%s) = %+v, want %d units over %d shards", sku, v, expected[sku], n)
		}
		if got, err := e.rs.Shards(ctx, sku); err != nil || got != n {
			t.Fatalf("Redis's shard count of %s = %d, %v; want %d", sku, got, err, n)
		}
	}
	// Drift: one shard of A promises 3 too many, one of B lost 4.
	mustOK(t, e.rs.SetAvailable(ctx, redisstock.ShardName("SPLIT-A", 2), 13))
	mustOK(t, e.rs.SetAvailable(ctx, redisstock.ShardName("SPLIT-B", 5), 0))
	// A hold without a marker on a shard other than the first (an order nobody knows): dropped.
	mustOK(t, e.rs.Client().HSet(ctx, e.rs.HoldsKey(redisstock.ShardName("SPLIT-A", 3)), "ghost", 2).Err())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	runs := 0
	wg.Go(func() { // one rebalancer at a time, as the Schedule runs it
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// Not reconcileOnce: its t.Fatalf may only run on the test's goroutine.
			rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			_, _, err := platform.RunOnce(rctx, e.c, workflows.ReconcileInput{Grace: -1, BatchSize: 3})
			cancel()
			if err != nil {
				t.Errorf("reconcile during the load: %v", err)
				return
			}
			runs++
		}
	})
	l := load{prefix: "split", skus: []string{"SPLIT-A", "SPLIT-B"}, orders: 120, concurrency: 16, expireAfter: 2 * time.Second,
		seed: 44, shards: shards}
	res := l.run(ctx, t, e.c, nil)
	t.Logf("load: %s", res)
	res.awaitClosed(ctx, t, e.c, 3*time.Minute)
	close(stop)
	wg.Wait()
	e.reconcileOnce(t, -1)
	e.reconcileOnce(t, -1)
	rep := e.check(t, expected, true)
	t.Logf("%d reconciliation runs during the load\n%s", runs, rep)
	if res.reserved.Load() == 0 || res.rejected.Load() == 0 {
		t.Errorf("the load reserved %d and rejected %d: it did not sell the SKUs out", res.reserved.Load(), res.rejected.Load())
	}
	for sku, n := range shards {
		for i := range n {
			holds, err := e.rs.Holds(ctx, redisstock.ShardName(sku, i))
			if err != nil || len(holds) != 0 {
				t.Errorf("%s shard %d holds %v (%v) once quiet", sku, i, holds, err)
			}
		}
	}
}
