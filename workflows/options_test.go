package workflows

import (
	"testing"

	"github.com/ordersaga/ordersaga/internal/reconcile"
)

// Reconciliation clears a SKU's re-sync mark ResyncSettle after its newest mark, on the promise that no
// database-only reservation is then still on its way to its deduct: one reserved up to MarkEvery after that
// mark has its deduct decided within the reserve's and the deduct's schedule-to-close deadlines.
func TestResyncSettleOutlastsAReservation(t *testing.T) {
	way := reconcile.MarkEvery + reserveOptions.ScheduleToCloseTimeout + deductOptions.ScheduleToCloseTimeout
	if way > reconcile.ResyncSettle {
		t.Fatalf("a database-only reservation may take %v to its deduct, but reconciliation clears the re-sync mark after %v (reconcile.ResyncSettle)",
			way, reconcile.ResyncSettle)
	}
}
