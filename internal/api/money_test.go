package api_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
)

// TestMoneyBounds: a price or a payment amount past its bound is refused at the API, naming the field and
// the bound, so no order is priced at an amount that wrapped (4 units at 2^62 cents were once 0 cents, and a
// 0-cent payment made the order PAID; 2 at 2^63−1 were −2 cents, never payable).
func TestMoneyBounds(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	ctx := context.Background()
	admin := map[string]string{"Authorization": "Bearer " + testAdmin}
	priceBound := strconv.FormatInt(ordersaga.MaxPriceCents, 10)

	t.Run("a_price_past_the_bound_is_400_naming_price_cents_and_the_bound", func(t *testing.T) {
		t.Parallel()
		for i, tc := range []struct {
			price int64
			qty   int64 // the order placed if the price were taken
		}{
			{ordersaga.MaxPriceCents + 1, 1},
			{1 << 62, 4},
			{math.MaxInt64, 2},
		} {
			sku := fmt.Sprintf("MONEY-PRICE-%d", i)
			r := e.do(http.MethodPut, "/v1/inventory/"+sku, fmt.Appendf(nil, `{"stock":10,"price_cents":%d}`, tc.price), admin)
			if r.status != http.StatusBadRequest {
				placed := e.place("k-"+sku, orderBody("u-money", ordersaga.Line{SKU: sku, Qty: tc.qty}))
				t.Errorf("price %d: PUT answered %s; then %d units were ordered: %s", tc.price, r, tc.qty, placed)
				continue
			}
			p := r.wantProblem(t, http.StatusBadRequest, "invalid-field")
			if p.Field != "price_cents" || !strings.Contains(p.Detail, priceBound) {
				t.Errorf("price %d: problem %+v; want field price_cents and the bound %s in the detail", tc.price, p, priceBound)
			}
			if _, err := e.Store.Inventory(ctx, sku); err == nil {
				t.Errorf("price %d: a refused PUT created the SKU", tc.price)
			}
		}
	})

	t.Run("at_the_bound_the_largest_line_is_priced_exactly", func(t *testing.T) {
		t.Parallel()
		const sku = "MONEY-AT-BOUND"
		b := e.do(http.MethodPut, "/v1/inventory/"+sku, []byte(`{"stock":1000,"price_cents":`+priceBound+`}`), admin).inventory(t)
		if b.PriceCents != ordersaga.MaxPriceCents {
			t.Fatalf("PUT at the bound answered %+v", b)
		}
		r := e.place("k-at-bound", orderBody("u-money", ordersaga.Line{SKU: sku, Qty: ordersaga.MaxQty}))
		if r.status != http.StatusCreated {
			t.Fatalf("place: %s", r)
		}
		if o := r.order(t); o.AmountCents != ordersaga.MaxQty*ordersaga.MaxPriceCents {
			t.Errorf("amount_cents %d, want %d", o.AmountCents, ordersaga.MaxQty*ordersaga.MaxPriceCents)
		}
	})

	// A price written before the bound existed: the deduct cannot price the order, and the order is rejected
	// at once (a non-retryable failure), not retried until the deduct's deadline.
	t.Run("an_old_price_past_the_bound_rejects_the_order", func(t *testing.T) {
		t.Parallel()
		const sku = "MONEY-OLD-PRICE"
		e.Stock(t, sku, 10, 1)
		if err := e.Store.DB().Exec("UPDATE inventory SET price_cents = ? WHERE sku = ?", int64(1<<62), sku).Error; err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := e.place("k-old-price", orderBody("u-money", ordersaga.Line{SKU: sku, Qty: 4}))
		took := time.Since(start)
		if r.status == http.StatusCreated {
			t.Fatalf("placed: %s", r)
		}
		p := r.wantProblem(t, http.StatusServiceUnavailable, "stock-unavailable")
		if !strings.Contains(p.Detail, "AmountOverflow") {
			t.Errorf("problem %+v (after %v): want the reason AmountOverflow", p, took)
		}
		if n := e.countRows("orders", "order_id = ? AND amount_cents <> 0", p.OrderID); n != 0 {
			t.Errorf("the rejected order %s was recorded with an amount", p.OrderID)
		}
		if inv, err := e.Store.Inventory(ctx, sku); err != nil || inv.Stock != 10 {
			t.Errorf("stock %d, %v after the rejection; want 10", inv.Stock, err)
		}
	})

	t.Run("a_payment_past_the_bound_is_400_naming_amount_cents", func(t *testing.T) {
		t.Parallel()
		amountBound := strconv.FormatInt(ordersaga.MaxAmountCents, 10)
		for i, cents := range []int64{ordersaga.MaxAmountCents + 1, math.MaxInt64} {
			ev := api.PaymentEvent{EventID: fmt.Sprintf("evt-money-big-%d", i), OrderID: "o-money-big", AmountCents: cents,
				Currency: testCurrency, Status: "succeeded"}
			r := e.pay(ev, time.Now(), testSecret)
			if r.status != http.StatusBadRequest {
				t.Errorf("amount %d: got %s, want 400", cents, r)
			} else if p := r.wantProblem(t, http.StatusBadRequest, "invalid-field"); p.Field != "amount_cents" || !strings.Contains(p.Detail, amountBound) {
				t.Errorf("amount %d: problem %+v; want field amount_cents and the bound %s in the detail", cents, p, amountBound)
			}
			if n := e.countRows("payments", "event_id = ?", ev.EventID); n != 0 {
				t.Errorf("amount %d: %d payments rows recorded", cents, n)
			}
		}
	})
}
