package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// The bot on the database-only path: Redis cannot be reached and the fallback is on, so every reserve holds
// nothing and the deduct alone decides. One user's 200 concurrent orders (50 under the race detector; distinct
// order IDs, as distinct Idempotency-Keys give) on a limit of 2 get exactly 2 units; every other order is
// rejected as over the limit, naming the SKU, the limit and the 2 units held, and holds nothing.
func TestPerUserLimit_DatabaseOnlyPath(t *testing.T) {
	store := testenv.MustOpenStore(t)
	const sku = "LIM-DB"
	if _, err := store.SetInventoryLocked(t.Context(), sqlstore.InventorySpec{SKU: sku, Stock: 500, PriceCents: 100, PerUserLimit: 2},
		func(*sqlstore.Locked, int64) error { return nil }); err != nil {
		t.Fatal(err)
	}
	env := sagatest.StartWith(t, store, testenv.UnreachableRedis(t), func(a *activities.Activities) { a.DBFallback = true })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	n := testenv.Scaled(200, 50) // 200 concurrent requests; 50 under the race detector (the same code, slower)
	res := make([]workflows.Reservation, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res[i], errs[i] = place(ctx, env.Client, workflows.OrderInput{
				OrderID: fmt.Sprintf("lim-db-%03d", i), UserID: "bot", Currency: "CNY",
				Lines: []ordersaga.Line{{SKU: sku, Qty: 1}}, PaymentTimeout: 10 * time.Minute,
			})
		})
	}
	wg.Wait()
	granted := 0
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Errorf("order %d: %v", i, errs[i])
		case res[i].Order.Status == ordersaga.StatusAwaitingPayment:
			granted++
		case res[i].LimitExceeded == nil:
			t.Errorf("order %d: %s (%s), want rejected over the limit", i, res[i].Order.Status, res[i].Order.ClosedReason)
		case *res[i].LimitExceeded != (ordersaga.LimitExceededError{SKU: sku, Limit: 2, Held: 2}):
			t.Errorf("order %d refused with %+v, want %s limit 2 held 2", i, *res[i].LimitExceeded, sku)
		}
	}
	if granted != 2 {
		t.Fatalf("%d of %d orders of one user reserved on a limit of 2 through the database alone, want 2", granted, n)
	}
	units, err := store.UserUnits(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	if units["bot"] != 2 {
		t.Errorf("user_units of bot = %d, want 2", units["bot"])
	}
	inv, err := store.Inventory(ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Stock != 498 {
		t.Errorf("db stock = %d, want 498", inv.Stock)
	}
	t.Logf("database-only path: %d requests of one user, limit 2 -> %d units granted; db=%s", n, granted, store.Dialect())
}
