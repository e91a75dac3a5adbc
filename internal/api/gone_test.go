package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// forgetful is the order API on a new Temporal server over the same stores: a Temporal that has forgotten
// every workflow (namespace retention) while the database and Redis remember.
func (e *apiEnv) forgetful(change ...func(*api.Deps)) *apiEnv {
	e.t.Helper()
	return serveAPI(e.t, sagatest.StartOn(e.t, e.Store, e.Redis), change...)
}

func (e *apiEnv) available(sku string) int64 {
	e.t.Helper()
	avail, loaded, err := e.Redis.Available(context.Background(), sku)
	if err != nil || !loaded {
		e.t.Fatalf("redis avail of %s: %d, loaded %v, %v", sku, avail, loaded, err)
	}
	return avail
}

func (e *apiEnv) stock(sku string) int64 {
	e.t.Helper()
	inv, err := e.Store.Inventory(context.Background(), sku)
	if err != nil {
		e.t.Fatal(err)
	}
	return inv.Stock
}

// paidOrder places an order of 3 units of sku (5 in stock) with key and pays it: the first life of an order
// ID that is PAID.
func (e *apiEnv) paidOrder(sku, key string) (ordersaga.Order, string) {
	e.t.Helper()
	e.Stock(e.t, sku, 5, 100)
	body := orderBody("u-gone", ordersaga.Line{SKU: sku, Qty: 3})
	r := e.place(key, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("place: %s", r)
	}
	o := r.order(e.t)
	if a := e.payAnswer(e.pay(api.PaymentEvent{EventID: "evt-" + key, OrderID: o.OrderID, AmountCents: o.AmountCents,
		Currency: testCurrency, Status: api.PaymentSucceeded}, time.Now(), testSecret)); a.Result != ordersaga.PaymentApplied {
		e.t.Fatalf("payment = %s, want applied", a.Result)
	}
	return o, body
}

// checkStillSold checks that the 3 paid units of sku (5 in stock) are still sold, in the database and in
// Redis, with no RESTORE row for the order.
func (e *apiEnv) checkStillSold(sku, orderID string) {
	e.t.Helper()
	if got := e.stock(sku); got != 2 {
		e.t.Errorf("db stock %d, want 2 (3 paid)", got)
	}
	if got := e.available(sku); got != 2 {
		e.t.Errorf("redis avail %d, want 2 (3 paid)", got)
	}
	if n := e.countRows("stock_ledger", "order_id = ? AND op = ?", orderID, sqlstore.OpRestore); n != 0 {
		e.t.Errorf("%d RESTORE rows for a PAID order", n)
	}
}

// The audit's oversell, end to end: a PAID order whose first answer was never kept (409 order-pending, or the
// keep failed) and whose workflow Temporal has since forgotten. A retry of its key must be answered from the
// database, never start a second life whose expiry would restore the paid units for the next buyer.
func TestPlaceOrder_APaidOrderTemporalForgotIsAnsweredFromTheDatabase(t *testing.T) {
	t.Parallel()
	// The first life has the default deadline (its payment must not race a short one on a loaded machine); the
	// life a retry could start has a short one, which the test waits past.
	e := newAPI(t)
	const sku = "GONE-PAID"
	o, body := e.paidOrder(sku, "k-gone-paid")
	// The first answer was never kept, and Temporal forgot the workflow.
	if err := e.Store.DB().Exec("UPDATE idempotency_keys SET status_code = NULL, response_body = NULL WHERE order_id = ?", o.OrderID).Error; err != nil {
		t.Fatal(err)
	}
	e = e.forgetful(func(d *api.Deps) { d.PaymentTimeout = 2 * time.Second })

	r := e.place("k-gone-paid", body)
	if r.status != http.StatusCreated || r.order(t).Status != ordersaga.StatusPaid || r.order(t).OrderID != o.OrderID {
		t.Fatalf("retry of a paid order's key: %s; want 201 with the PAID order %s", r, o.OrderID)
	}
	if _, err := e.Client.DescribeWorkflowExecution(context.Background(), workflows.OrderWorkflowID(o.OrderID), ""); err == nil {
		t.Fatal("the retry started the order's workflow again")
	}
	// Past the deadline a second life would have had: the paid units are still sold, on both sides.
	time.Sleep(3 * time.Second)
	e.checkStillSold(sku, o.OrderID)
	// And the answer is kept now: the next retry replays it.
	if r2 := e.place("k-gone-paid", body); r2.status != http.StatusCreated || r2.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("second retry: %s %v; want the kept answer replayed", r2, r2.header)
	}
}

// A second life started anyway (an operator starts the workflow by hand, or a client of its own): its deduct
// is refused, its compensation restores nothing, and the order ends as the database says, PAID.
func TestOrderWorkflow_SecondLifeOfAPaidOrderChangesNothing(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	const sku = "GONE-LIFE"
	o, _ := e.paidOrder(sku, "k-gone-life")
	e = e.forgetful()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: workflows.OrderWorkflowID(o.OrderID), TaskQueue: workflows.TaskQueue,
	}, workflows.OrderWorkflow, workflows.OrderInput{
		OrderID: o.OrderID, UserID: "u-gone", Currency: testCurrency, Lines: o.Lines, PaymentTimeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var second ordersaga.Order
	if err := run.Get(ctx, &second); err != nil {
		t.Fatal(err)
	}
	if second.Status != ordersaga.StatusPaid {
		t.Errorf("the second life ended %s, want PAID (the database's word)", second.Status)
	}
	e.checkStillSold(sku, o.OrderID)
	rec, err := e.Store.Order(ctx, o.OrderID)
	if err != nil || rec.Status != ordersaga.StatusPaid {
		t.Errorf("order in the database: %s, %v; want PAID", rec.Status, err)
	}
}

// A cancel of an open order whose workflow is gone closes it and gives its stock back on both sides (never a
// 200 that says the order is still open); cancelling again changes nothing.
func TestCancelOrder_WorkflowGoneClosesTheOrder(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	const sku = "GONE-CANCEL"
	e.Stock(t, sku, 5, 100)
	r := e.place("k-gone-cancel", orderBody("u-gone", ordersaga.Line{SKU: sku, Qty: 2}))
	if r.status != http.StatusCreated {
		t.Fatalf("place: %s", r)
	}
	o := r.order(t)
	// The workflow is terminated by an operator while the order awaits its payment: nothing recorded it.
	if err := e.Client.TerminateWorkflow(context.Background(), workflows.OrderWorkflowID(o.OrderID), "", "operator"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c := e.do(http.MethodPost, "/v1/orders/"+o.OrderID+"/cancel", nil, nil)
		if c.status != http.StatusOK || c.order(t).Status != ordersaga.StatusCancelled {
			t.Fatalf("cancel of an order whose workflow is gone: %s; want 200 CANCELLED", c)
		}
		if got := e.stock(sku); got != 5 {
			t.Errorf("db stock %d, want 5 (restored)", got)
		}
		if got := e.available(sku); got != 5 {
			t.Errorf("redis avail %d, want 5 (released)", got)
		}
	}
	if n := e.countRows("stock_ledger", "order_id = ? AND op = ?", o.OrderID, sqlstore.OpRestore); n != 1 {
		t.Errorf("%d RESTORE rows, want 1", n)
	}
	// A payment arriving now is refunded, never applied.
	a := e.payAnswer(e.pay(api.PaymentEvent{EventID: "evt-gone-cancel", OrderID: o.OrderID, AmountCents: o.AmountCents,
		Currency: testCurrency, Status: api.PaymentSucceeded}, time.Now(), testSecret))
	if a.Result != ordersaga.PaymentRefunded {
		t.Errorf("payment after the cancel = %s, want refunded", a.Result)
	}
}
