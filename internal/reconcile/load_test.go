package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// loadOrders is how many orders a load test places: RECONCILE_LOAD_ORDERS if set; else full against the real
// services (MYSQL_DSN and REDIS_ADDR) without the race detector, embedded without it, and underRace with it.
// -race slows the in-process Temporal server so much (about 1–4 orders a second on this 2-core machine) that
// 2,000 orders would take 10–25 minutes, far past the package's time budget; SQLite takes one writer at a
// time.
func loadOrders(t testing.TB, full, embedded, underRace int) int {
	def := embedded
	switch {
	case testenv.RaceEnabled:
		def = underRace
	case testenv.RealMySQL() && testenv.RealRedis():
		def = full
	}
	return envInt(t, "RECONCILE_LOAD_ORDERS", def)
}

// Reconciliation running back to back while orders are placed, paid, cancelled and expired against 5 SKUs
// must never repair anything: every difference it sees is an order in flight, which the compare-and-set
// accounts for. At the end (quiet) one more run finds nothing and I1–I4 hold exactly.
func TestReconcile_NoFalseRepairUnderLoad(t *testing.T) {
	t.Parallel()
	e := startEnv(t, envOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	skus := []string{"L-A", "L-B", "L-C", "L-D", "L-E"}
	n := loadOrders(t, 2000, 300, 36)
	expected := map[string]int64{}
	for _, sku := range skus {
		// The paid orders alone ask for about n units in all: n/8+5 per SKU sells out part-way.
		units := int64(n)/8 + 5
		e.stock(t, sku, units)
		expected[sku] = units
	}

	stop := make(chan struct{})
	var runs []reconcile.Summary
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Grace of a minute: the holds of live orders are never older (reserve → deduct → confirm takes
			// well under a second), so anything older would be a genuine leak.
			runs = append(runs, e.reconcileOnce(t, time.Minute))
		}
	})
	l := load{prefix: "nfr", skus: skus, orders: n, concurrency: 40, expireAfter: 2 * time.Second, seed: 11}
	res := l.run(ctx, t, e.c, nil)
	close(stop)
	wg.Wait()
	res.awaitClosed(ctx, t, e.c, 3*time.Minute)

	var during reconcile.Summary
	for _, s := range runs {
		during.Add(s)
	}
	final := e.reconcileOnce(t, -1)
	if during.Repairs() != 0 || during.Drifted != 0 {
		t.Errorf("reconciliation under load repaired or saw drift: %s", during)
	}
	if final.Repairs() != 0 || final.Drifted != 0 {
		t.Errorf("final quiet run found something: %s", final)
	}
	if got := e.repairRows(t); got != 0 {
		t.Errorf("%d repair rows in stock_anomalies, want 0", got)
	}
	if res.failed.Load() != 0 {
		t.Errorf("%d order calls failed", res.failed.Load())
	}
	rep := e.check(t, expected, true)
	var oversold int64
	for _, s := range rep.SKUs {
		oversold += max(0, s.PaidUnits+s.AwaitingUnits-s.Expected)
	}
	t.Logf("no false repair (real mysql=%v redis=%v race=%v): %s; %d reconciliation runs during the load: %s; final run: %s; "+
		"repairs recorded %d, oversold units %d\n%s",
		testenv.RealMySQL(), testenv.RealRedis(), testenv.RaceEnabled, res, len(runs), during, final, e.repairRows(t), oversold, rep)
}
