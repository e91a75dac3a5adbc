package faults_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/workflows"
)

// The load every fault test runs: orders on three SKUs with more demand than stock, a third paid, a third
// cancelled, a third left to expire.
const (
	loadOrders    = 60
	expireTimeout = 4 * time.Second
	price         = 500
)

var loadStock = map[string]int64{"FLT-A": 30, "FLT-B": 25, "FLT-C": 20}

// group is what the load does with a placed order.
type group string

const (
	groupPaid   group = "paid"
	groupCancel group = "cancel"
	groupExpire group = "expire"
)

// order is one order of the load and what became of it.
type order struct {
	in    workflows.OrderInput
	group group
	res   workflows.Reservation
	err   error // placing or acting on it failed (the test reports it)
	final ordersaga.Status
	// placedAt and decidedAt bound the placement: an order whose placement overlaps the fault was
	// placed during it.
	placedAt, decidedAt time.Time
}

// loadInputs makes n orders for one test (IDs prefixed by name), deterministic.
func loadInputs(name string, n int) []*order {
	skus := slices.Sorted(maps.Keys(loadStock))
	rng := rand.New(rand.NewPCG(uint64(len(name)), 12))
	out := make([]*order, n)
	for i := range out {
		first := rng.IntN(len(skus))
		lines := []ordersaga.Line{{SKU: skus[first], Qty: int64(1 + rng.IntN(3))}}
		if rng.IntN(3) == 0 {
			lines = append(lines, ordersaga.Line{SKU: skus[(first+1)%len(skus)], Qty: 1})
		}
		g := []group{groupPaid, groupCancel, groupExpire}[i%3]
		timeout := 2 * time.Minute
		if g == groupExpire {
			timeout = expireTimeout
		}
		out[i] = &order{group: g, in: workflows.OrderInput{
			OrderID: fmt.Sprintf("%s-%03d", name, i), UserID: fmt.Sprintf("u-%d", i%13), Currency: "CNY",
			Lines: lines, PaymentTimeout: timeout,
		}}
	}
	return out
}

// runLoad starts one order every spacing (so placements span the fault), places it and acts on it, and
// returns when all are placed and acted on.
func runLoad(ctx context.Context, c client.Client, orders []*order, spacing time.Duration) {
	var wg sync.WaitGroup
	for _, o := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.err = act(ctx, c, o)
		}()
		select {
		case <-ctx.Done():
		case <-time.After(spacing):
		}
	}
	wg.Wait()
}

// act places one order and pays or cancels it as its group says.
func act(ctx context.Context, c client.Client, o *order) error {
	o.placedAt = time.Now()
	res, err := sagatest.UntilDecided(ctx, func() (workflows.Reservation, error) { return orderclient.Place(ctx, c, o.in) })
	o.decidedAt = time.Now()
	if err != nil {
		return fmt.Errorf("place %s: %w", o.in.OrderID, err)
	}
	o.res = res
	if res.Order.Status != ordersaga.StatusAwaitingPayment {
		return nil
	}
	switch o.group {
	case groupPaid:
		pay := workflows.PaymentSignal{EventID: "evt-" + o.in.OrderID, AmountCents: res.Order.AmountCents, Currency: "CNY"}
		r, err := sagatest.UntilDecided(ctx, func() (ordersaga.PaymentResult, error) { return orderclient.Pay(ctx, c, o.in.OrderID, pay) })
		if err == nil && r != ordersaga.PaymentApplied && r != ordersaga.PaymentDuplicate {
			err = fmt.Errorf("answered %s", r)
		}
		if err != nil {
			return fmt.Errorf("pay %s: %w", o.in.OrderID, err)
		}
	case groupCancel:
		if _, err := sagatest.UntilDecided(ctx, func() (ordersaga.Order, error) { return orderclient.Cancel(ctx, c, o.in.OrderID, "fault test") }); err != nil {
			return fmt.Errorf("cancel %s: %w", o.in.OrderID, err)
		}
	}
	return nil
}

// accepted reports whether the order's placement was accepted: it answered an order awaiting payment (the
// API's 201).
func (o *order) accepted() bool { return o.res.Order.Status == ordersaga.StatusAwaitingPayment }

// wantFinal is the status an order of the group must end in.
func (o *order) wantFinal() ordersaga.Status {
	if o.res.Order.Status == ordersaga.StatusRejected {
		return ordersaga.StatusRejected
	}
	return map[group]ordersaga.Status{groupPaid: ordersaga.StatusPaid, groupCancel: ordersaga.StatusCancelled,
		groupExpire: ordersaga.StatusExpired}[o.group]
}

// settle waits for every order's workflow to end (at most until ctx ends) and records its final status.
func settle(ctx context.Context, c client.Client, orders []*order) {
	var wg sync.WaitGroup
	for _, o := range orders {
		if o.err != nil && o.res.Order.OrderID == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var final ordersaga.Order
			if err := c.GetWorkflow(ctx, workflows.OrderWorkflowID(o.in.OrderID), "").Get(ctx, &final); err == nil {
				o.final = final.Status
			}
		}()
	}
	wg.Wait()
}
