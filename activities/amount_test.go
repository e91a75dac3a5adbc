package activities_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// An amount out of bounds is a business outcome: running the activity again gives the same answer, so it
// fails non-retryably with the type AmountOverflow, and nothing is written. A deduct of an order priced past
// MaxAmountCents (a price stored before the bound) is rejected at once instead of retried until its deadline;
// a payment amount the payments store refuses is not retried forever by a must-succeed step.
func TestAmountOutOfBoundsFailsNonRetryably(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := testenv.MustOpenStore(t)
	acts := &activities.Activities{Store: store, Redis: testenv.MustOpenRedis(t)}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	wantAmountOverflow := func(t *testing.T, what string, err error) {
		t.Helper()
		var appErr *temporal.ApplicationError
		switch {
		case err == nil:
			t.Errorf("%s: no error", what)
		case !errors.As(err, &appErr):
			t.Errorf("%s: %v (%T) is not an application error", what, err, err)
		case !appErr.NonRetryable() || appErr.Type() != activities.ErrTypeAmountOverflow:
			t.Errorf("%s: %v: non-retryable %v, type %q; want non-retryable %s", what, err, appErr.NonRetryable(),
				appErr.Type(), activities.ErrTypeAmountOverflow)
		}
	}

	t.Run("deduct_of_an_order_priced_past_the_bound", func(t *testing.T) {
		for _, tc := range []struct {
			sku   string
			price int64
			qty   int64
		}{{"AMT-WRAPS-TO-0", 1 << 62, 4}, {"AMT-WRAPS-NEGATIVE", math.MaxInt64, 2}, {"AMT-PAST-BOUND", ordersaga.MaxAmountCents, 2}} {
			if err := store.SetInventory(ctx, tc.sku, 10, 1); err != nil {
				t.Fatal(err)
			}
			if err := store.DB().Exec("UPDATE inventory SET price_cents = ? WHERE sku = ?", tc.price, tc.sku).Error; err != nil {
				t.Fatal(err)
			}
			order := "o-" + tc.sku
			_, err := env.ExecuteActivity(acts.DeductOrder, activities.DeductInput{DeductInput: ordersaga.DeductInput{
				OrderID: order, UserID: "u-amt", Currency: "EUR", PayBy: time.Now().Add(time.Hour),
				Lines: []ordersaga.Line{{SKU: tc.sku, Qty: tc.qty}}}})
			wantAmountOverflow(t, tc.sku, err)
			if inv, err := store.Inventory(ctx, tc.sku); err != nil || inv.Stock != 10 {
				t.Errorf("%s: stock %d, %v; want 10 (nothing taken)", tc.sku, inv.Stock, err)
			}
			if _, err := store.Order(ctx, order); !errors.Is(err, ordersaga.ErrNotFound) {
				t.Errorf("%s: order recorded (%v)", tc.sku, err)
			}
		}
	})

	t.Run("payments_past_the_bound", func(t *testing.T) {
		if err := store.SetInventory(ctx, "AMT-PAY", 10, 100); err != nil {
			t.Fatal(err)
		}
		const order = "o-amt-pay"
		if _, err := env.ExecuteActivity(acts.DeductOrder, activities.DeductInput{DeductInput: ordersaga.DeductInput{
			OrderID: order, UserID: "u-amt", Currency: "EUR", PayBy: time.Now().Add(time.Hour),
			Lines: []ordersaga.Line{{SKU: "AMT-PAY", Qty: 1}}}}); err != nil {
			t.Fatal(err)
		}
		for _, cents := range []int64{-1, ordersaga.MaxAmountCents + 1, math.MaxInt64} {
			p := ordersaga.PaymentRecord{EventID: "evt-amt-paid", OrderID: order, AmountCents: cents, Currency: "EUR"}
			_, err := env.ExecuteActivity(acts.MarkPaid, activities.MarkPaidInput{Payment: p, PaidAt: time.Now()})
			wantAmountOverflow(t, "mark paid", err)

			p.EventID, p.Result = "evt-amt-refund", ordersaga.PaymentRejectedAmount
			_, err = env.ExecuteActivity(acts.RecordPayment, p)
			wantAmountOverflow(t, "record payment", err)
		}
		if o, err := store.Order(ctx, order); err != nil || o.Status != ordersaga.StatusAwaitingPayment {
			t.Errorf("order %+v, %v; want AWAITING_PAYMENT", o, err)
		}
		for _, ev := range []string{"evt-amt-paid", "evt-amt-refund"} {
			if _, err := store.Payment(ctx, ev); !errors.Is(err, ordersaga.ErrNotFound) {
				t.Errorf("payment %s recorded (%v)", ev, err)
			}
		}
	})
}
