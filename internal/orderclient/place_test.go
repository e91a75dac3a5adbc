package orderclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/workflows"
)

// An order whose workflow never ran a task (no worker polls, or every worker is down) is still found by the
// operators' query for orders stuck in RESERVING: Place gives its search attributes with the start. Before,
// the workflow upserted them in its first task, so such an order had none.
func TestPlace_AnOrderNoWorkerRanIsSearchableAsReserving(t *testing.T) {
	t.Parallel()
	srv := sagatest.NewServer(t)
	c := srv.GetDefaultClient()
	if err := platform.RegisterSearchAttributes(t.Context(), c, srv.GetDefaultNamespace()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err := orderclient.Place(ctx, c, workflows.OrderInput{OrderID: "o-no-worker", UserID: "u1", Currency: "CNY",
		Lines: []ordersaga.Line{{SKU: "SKU-NW", Qty: 1}}})
	if err == nil {
		t.Fatal("Place answered with no worker running")
	}

	query := `OrderStatus = "RESERVING" AND OrderSKUs = "SKU-NW"`
	if got := (&sagatest.Env{Client: c}).CountWorkflows(t, query, 1); got != 1 {
		t.Fatalf("%s: %d workflows, want the order whose workflow never ran", query, got)
	}
}
