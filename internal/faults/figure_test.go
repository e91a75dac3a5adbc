package faults_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// TestFigureLostCountsAcceptedOrdersTheDatabaseDoesNotHold: the FIGURE line's "lost" is what RELIABILITY.md
// says it is: orders whose placement was accepted that the database does not hold. A conservation (I1)
// violation is a violation of its own, not a lost order.
func TestFigureLostCountsAcceptedOrdersTheDatabaseDoesNotHold(t *testing.T) {
	t.Run("a conservation violation is not a lost order", func(t *testing.T) {
		var f figure
		countViolations(invariants.Report{Violations: []string{"I1 FLT-A: db.stock + Σdeduct − Σrestore = 29, want 30"}}, &f)
		if f.lost != 0 || f.conservation != 1 {
			t.Errorf("an I1 violation counted as lost=%d conservation=%d, want 0 and 1", f.lost, f.conservation)
		}
	})
	t.Run("an accepted order the database does not hold is lost", func(t *testing.T) {
		ctx := context.Background()
		store := testenv.MustOpenStore(t)
		if err := store.SetInventory(ctx, "FIG-A", 10, price); err != nil {
			t.Fatal(err)
		}
		held := ordersaga.DeductInput{OrderID: "fig-held", UserID: "u1", Currency: "CNY", PayBy: time.Now().Add(time.Hour),
			Lines: []ordersaga.Line{{SKU: "FIG-A", Qty: 1}}}
		if _, err := store.Deduct(ctx, held); err != nil {
			t.Fatal(err)
		}
		placed := func(id string, status ordersaga.Status) *order {
			return &order{in: workflows.OrderInput{OrderID: id},
				res: workflows.Reservation{Order: ordersaga.Order{OrderID: id, Status: status}}}
		}
		orders := []*order{
			placed("fig-held", ordersaga.StatusAwaitingPayment),    // accepted, in the database
			placed("fig-missing", ordersaga.StatusAwaitingPayment), // accepted, not in the database: lost
			placed("fig-sold-out", ordersaga.StatusRejected),       // refused: not accepted, not lost
			{in: workflows.OrderInput{OrderID: "fig-never-answered"}},
		}
		lost, err := lostOrders(ctx, store, orders)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"fig-missing"}; !slices.Equal(lost, want) {
			t.Errorf("lost = %v, want %v", lost, want)
		}
	})
}
