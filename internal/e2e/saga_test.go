package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

type placed struct {
	orderID string
	group   string // paid, cancel, expire
	res     workflows.Reservation
}

// TestSagaEndToEnd places 200 orders (50 under the race detector) on 3 SKUs with more demand than stock; a
// third is paid, a third cancelled, a third left to expire. At the end I1–I4 hold exactly and every workflow
// is closed.
func TestSagaEndToEnd(t *testing.T) {
	env := sagatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// A quarter of the stock under the race detector, for a quarter of the orders: demand stays above it.
	q := int64(testenv.Scaled(1, 4))
	stock := map[string]int64{"E2E-A": 40 / q, "E2E-B": 30 / q, "E2E-C": 20 / q}
	total := stock["E2E-A"] + stock["E2E-B"] + stock["E2E-C"]
	prices := map[string]int64{"E2E-A": 999, "E2E-B": 1500, "E2E-C": 250}
	for sku, n := range stock {
		env.Stock(t, sku, n, prices[sku])
	}
	skus := []string{"E2E-A", "E2E-B", "E2E-C"}
	rng := rand.New(rand.NewPCG(42, 7))
	n := testenv.Scaled(200, 50) // 200 concurrent requests; 50 under the race detector (the same code, slower)
	inputs := make([]workflows.OrderInput, n)
	demand := int64(0)
	for i := range inputs {
		first := rng.IntN(3)
		lines := []ordersaga.Line{{SKU: skus[first], Qty: int64(1 + rng.IntN(3))}}
		if rng.IntN(3) == 0 {
			lines = append(lines, ordersaga.Line{SKU: skus[(first+1)%3], Qty: int64(1 + rng.IntN(2))})
		}
		for _, l := range lines {
			demand += l.Qty
		}
		timeout := 10 * time.Minute // paid and cancelled orders act long before; slack for a loaded CI machine
		if i%3 == 2 {
			timeout = 3 * time.Second
		}
		inputs[i] = workflows.OrderInput{
			OrderID: fmt.Sprintf("e2e-%03d", i), UserID: fmt.Sprintf("u-%d", i%17), Currency: "CNY",
			Lines: lines, PaymentTimeout: timeout,
		}
	}

	started := time.Now()
	results := make([]placed, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 50)
	errs := make(chan error, n)
	for i, in := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			group := []string{"paid", "cancel", "expire"}[i%3]
			res, err := place(ctx, env.Client, in)
			if err != nil {
				errs <- err
				return
			}
			// A retried request attaches to the same saga and gets the same answer.
			if i%10 == 0 {
				again, err := place(ctx, env.Client, in)
				if err != nil {
					errs <- fmt.Errorf("replayed place %s: %w", in.OrderID, err)
					return
				}
				if again.Order.Status != res.Order.Status && res.Order.Status == ordersaga.StatusAwaitingPayment {
					errs <- fmt.Errorf("replayed place %s: status %s, first %s", in.OrderID, again.Order.Status, res.Order.Status)
				}
			}
			results[i] = placed{orderID: in.OrderID, group: group, res: res}
			if res.Order.Status != ordersaga.StatusAwaitingPayment {
				return
			}
			switch group {
			case "paid":
				pay := workflows.PaymentSignal{EventID: "evt-" + in.OrderID, AmountCents: res.Order.AmountCents, Currency: "CNY"}
				r, err := orderclient.Pay(ctx, env.Client, in.OrderID, pay)
				for orderclient.Undecided(err) && ctx.Err() == nil {
					// Redelivered as a provider would: the event applies once, and a redelivery after the
					// first got through says duplicate.
					if r, err = orderclient.Pay(ctx, env.Client, in.OrderID, pay); r == ordersaga.PaymentDuplicate {
						r = ordersaga.PaymentApplied
					}
				}
				if err != nil || r != ordersaga.PaymentApplied {
					errs <- fmt.Errorf("pay %s: %v %v", in.OrderID, r, err)
				}
			case "cancel":
				o, err := sagatest.UntilDecided(ctx, func() (ordersaga.Order, error) {
					return orderclient.Cancel(ctx, env.Client, in.OrderID, "changed my mind")
				})
				if err != nil || o.Status != ordersaga.StatusCancelled {
					errs <- fmt.Errorf("cancel %s: %v %v", in.OrderID, o.Status, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	placedIn := time.Since(started)

	counts := map[ordersaga.Status]int{}
	for i, p := range results {
		if p.orderID == "" {
			continue
		}
		var final ordersaga.Order
		if err := env.Client.GetWorkflow(ctx, workflows.OrderWorkflowID(p.orderID), "").Get(ctx, &final); err != nil {
			t.Fatalf("order %s: %v", p.orderID, err)
		}
		counts[final.Status]++
		want := map[string]ordersaga.Status{"paid": ordersaga.StatusPaid, "cancel": ordersaga.StatusCancelled, "expire": ordersaga.StatusExpired}[p.group]
		if p.res.Order.Status == ordersaga.StatusRejected {
			want = ordersaga.StatusRejected
			if p.res.SoldOutSKU == "" || !strings.HasPrefix(final.ClosedReason, "sold out: ") {
				t.Errorf("order %s rejected without a sold-out SKU: %+v", p.orderID, p.res)
			}
		}
		if final.Status != want {
			t.Errorf("order %d %s (%s): final status %s, want %s", i, p.orderID, p.group, final.Status, want)
		}
		rec, err := env.Store.Order(ctx, p.orderID)
		if err != nil {
			t.Errorf("order %s not in the database: %v", p.orderID, err)
		} else if rec.Status != final.Status {
			t.Errorf("order %s: database says %s, workflow %s", p.orderID, rec.Status, final.Status)
		}
	}
	if counts[ordersaga.StatusRejected] == 0 || counts[ordersaga.StatusPaid] == 0 || counts[ordersaga.StatusExpired] == 0 || counts[ordersaga.StatusCancelled] == 0 {
		t.Errorf("every outcome should occur with demand %d > stock %d: %v", demand, total, counts)
	}

	rep, err := invariants.Check(ctx, env.Store, env.Redis, stock, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("invariants violated:\n%s", rep)
	}
	// Visibility is eventually consistent: give it a few seconds to catch up with the closes.
	var running int64 = -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		open, err := env.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: "ExecutionStatus = 'Running'"})
		if err != nil {
			t.Fatal(err)
		}
		if running = open.GetCount(); running == 0 {
			break
		}
	}
	if running != 0 {
		t.Errorf("%d workflows still running", running)
	}
	t.Logf("e2e: %d orders (demand %d units, stock %d) placed and acted on in %s; outcomes %v; db=%s\n%s",
		n, demand, total, placedIn.Round(time.Millisecond), counts, env.Store.Dialect(), rep)
}

// place is orderclient.Place as the order API uses it: when the reservation may still be deciding (the
// server's update wait is shorter than a reservation can take under -race on a loaded machine), the same
// input is placed again, which attaches to the same workflow and gets its answer.
func place(ctx context.Context, c client.Client, in workflows.OrderInput) (workflows.Reservation, error) {
	return sagatest.UntilDecided(ctx, func() (workflows.Reservation, error) { return orderclient.Place(ctx, c, in) })
}
