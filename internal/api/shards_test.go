package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
)

// A SKU whose stock is in 4 shards, with every unit left on the last shard: buyers whose walk starts on an
// empty shard are still served (the fast path and the admission gate count every shard; the order walks
// them), every unit is sold exactly once, and the others are told sold out only once no shard has one.
func TestPlaceOrder_ASplitSKUSellsEveryUnitOnce(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	ctx := context.Background()
	const sku, units, buyers = "SPLIT-API", 12, 30
	admin := map[string]string{"Authorization": "Bearer " + testAdmin}
	if r := e.do(http.MethodPut, "/v1/inventory/"+sku, []byte(fmt.Sprintf(`{"stock":%d,"price_cents":100,"stock_shards":4}`, units)), admin); r.status != http.StatusOK {
		t.Fatalf("PUT inventory: %s", r)
	}
	if n, err := e.Redis.Shards(ctx, sku); err != nil || n != 4 {
		t.Fatalf("Redis's shard count = %d, %v; want 4", n, err)
	}
	// Every unit on shard 3: a walk that stopped at its start shard, or a fast path that read shard 0 alone,
	// would answer sold out with 12 units free.
	for i, v := range []int64{0, 0, 0, units} {
		if err := e.Redis.SetAvailable(ctx, redisstock.ShardName(sku, i), v); err != nil {
			t.Fatal(err)
		}
	}
	res := make([]response, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			res[i] = e.place(fmt.Sprintf("split-%02d", i), orderBody(fmt.Sprintf("buyer-%02d", i), ordersaga.Line{SKU: sku, Qty: 1}))
		})
	}
	wg.Wait()
	placed, soldOut := 0, 0
	for i, r := range res {
		switch r.status {
		case http.StatusCreated, http.StatusOK:
			if o := r.order(t); o.Status != ordersaga.StatusAwaitingPayment {
				t.Errorf("buyer %d: %s", i, o.Status)
			}
			placed++
		case http.StatusConflict:
			r.wantProblem(t, http.StatusConflict, "sold-out")
			soldOut++
		default:
			t.Errorf("buyer %d: %s", i, r)
		}
	}
	if placed != units || soldOut != buyers-units {
		t.Fatalf("%d placed and %d sold out of %d buyers for %d units, want %d and %d", placed, soldOut, buyers, units, units, buyers-units)
	}
	if got := e.stock(sku); got != 0 {
		t.Errorf("db stock = %d, want 0", got)
	}
	avail, held, err := e.Redis.AvailAndHeldIn(ctx, sku, 4)
	if err != nil || avail == nil || *avail != 0 || held != 0 {
		t.Errorf("Redis over the shards: avail %v, held %d, %v; want 0 and no hold", avail, held, err)
	}
	for i := range 4 {
		if a, _, _ := e.Redis.Available(ctx, redisstock.ShardName(sku, i)); a != 0 {
			t.Errorf("shard %d has %d units left", i, a)
		}
	}
}
