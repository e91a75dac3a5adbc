package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
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
			res[i] = e.placeUntilAnswered(fmt.Sprintf("split-%02d", i), orderBody(fmt.Sprintf("buyer-%02d", i), ordersaga.Line{SKU: sku, Qty: 1}))
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
	if avail, held, err := e.Redis.AvailAndHeldIn(ctx, sku, 4); err != nil || avail == nil || *avail != 0 || held != 0 {
		t.Errorf("Redis over the shards: avail %v, held %d, %v; want 0 and no hold", avail, held, err)
	}
	for i := range 4 {
		if a, _, _ := e.Redis.Available(ctx, redisstock.ShardName(sku, i)); a != 0 {
			t.Errorf("shard %d has %d units left", i, a)
		}
	}
}

// The per-user limit of a split SKU is the database's deduct alone (no user counts in Redis, where they
// would be split too): one user's 20 concurrent orders on a limit of 2, over 4 shards, get exactly 2 units,
// and every other is 409 limit-exceeded naming the SKU, the limit and the 2 held; nothing else is held.
func TestPlaceOrder_ASplitSKUKeepsThePerUserLimit(t *testing.T) {
	t.Parallel()
	e := newAPI(t, func(d *api.Deps) { d.PaymentTimeout = time.Hour })
	ctx := context.Background()
	const sku, n = "SPLIT-LIM", 20
	if r := e.putInventory(sku, `{"stock":100,"price_cents":100,"per_user_limit":2,"stock_shards":4}`); r.status != http.StatusOK {
		t.Fatalf("PUT inventory: %s", r)
	}
	res := make([]response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res[i] = e.placeUntilAnswered(fmt.Sprintf("lim-%02d", i), orderBody("one-user", ordersaga.Line{SKU: sku, Qty: 1}))
		})
	}
	wg.Wait()
	placed := 0
	for i, r := range res {
		switch r.status {
		case http.StatusCreated, http.StatusOK:
			placed++
		case http.StatusConflict:
			p := r.wantProblem(t, http.StatusConflict, "limit-exceeded")
			if p.SKU != sku || p.PerUserLimit == nil || *p.PerUserLimit != 2 || p.Held == nil || *p.Held != 2 {
				t.Errorf("order %d refused with %+v, want %s limit 2 held 2", i, p, sku)
			}
		default:
			t.Errorf("order %d: %s", i, r)
		}
	}
	if placed != 2 {
		t.Fatalf("%d of %d orders of one user placed on a limit of 2, want 2", placed, n)
	}
	// The refused orders' holds are given back by their compensation, which runs after their answer.
	deadline := time.Now().Add(time.Minute)
	for {
		avail, held, err := e.Redis.AvailAndHeldIn(ctx, sku, 4)
		if err == nil && avail != nil && *avail == 98 && held == 0 {
			break
		}
		if time.Now().After(deadline) {
			if avail == nil {
				avail = new(int64)
			}
			t.Fatalf("Redis over the shards: avail %d held %d %v; want 98 and no hold", *avail, held, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := e.stock(sku); got != 98 {
		t.Errorf("db stock %d, want 98", got)
	}
}

// placeUntilAnswered places as a client does: a 503 (a buyer waiting at the admission gate past its wait, as
// under the race detector on a loaded machine) is retried with the same key until an answer, for two minutes.
func (e *apiEnv) placeUntilAnswered(key, body string) response {
	e.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r := e.place(key, body)
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
}
