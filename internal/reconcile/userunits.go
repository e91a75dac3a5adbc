package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// fixUserUnits squares the per-user counts of a SKU that has a per-user limit with the database (the
// database wins): an order whose deduct stands is in its user's count, and an order the database does not
// count (restored, or never deducted) is not, unless its marker says it holds units now ('H': its deduct is
// still to come). Redis is read first, the database after, and every write re-checks the marker and the
// entry it was computed from (repair_user.lua): a release that runs in between changes the marker, so a
// released order is never put back, and a reserve that runs in between wins. A count that Redis lacks only
// lets the database's deduct refuse what Redis would have; one it has too many refuses a buyer until here.
func (r *Reconciler) fixUserUnits(ctx context.Context, sku string, sum *Summary, note func(sqlstore.Anomaly)) error {
	inv, err := r.Store.Inventory(ctx, sku)
	if errors.Is(err, ordersaga.ErrNotFound) {
		return nil
	}
	if err != nil || inv.PerUserLimit == 0 {
		return err
	}
	entries, err := r.Redis.UserEntries(ctx, sku)
	if err != nil {
		return err
	}
	standing, err := r.Store.StandingUserOrders(ctx, sku)
	if err != nil {
		return err
	}
	counted := map[string]bool{}
	for _, e := range entries {
		counted[e.UserID+"\x00"+e.OrderID] = true
		if o, ok := standing[e.OrderID]; ok && o.UserID == e.UserID {
			continue
		}
		if len(e.Marker) > 0 && e.Marker[0] == 'H' {
			continue // held now: its deduct is still to come
		}
		done, err := r.Redis.RepairUser(ctx, sku, e.UserID, e.OrderID, redisstock.UserDrop, e.Marker, e.Entry, 0)
		if err != nil {
			return err
		}
		if !done {
			sum.Raced++
			continue
		}
		sum.UserUnitsFixed++
		note(sqlstore.Anomaly{OrderID: e.OrderID, Kind: sqlstore.KindUserUnitsStray, Expected: i64(0), Observed: parseQty(e.Entry),
			Action: sqlstore.ActionUserDropped, Detail: fmt.Sprintf("user %s, marker %q", e.UserID, e.Marker)})
	}
	for order, o := range standing {
		if counted[o.UserID+"\x00"+order] {
			continue
		}
		marker, err := r.Redis.Marker(ctx, order, sku)
		if err != nil {
			return err
		}
		done, err := r.Redis.RepairUser(ctx, sku, o.UserID, order, redisstock.UserAdd, marker, "", o.Qty)
		if err != nil {
			return err
		}
		if !done {
			sum.Raced++
			continue
		}
		sum.UserUnitsFixed++
		note(sqlstore.Anomaly{OrderID: order, Kind: sqlstore.KindUserUnitsMissing, Expected: i64(o.Qty), Observed: i64(0),
			Action: sqlstore.ActionUserAdded, Detail: "user " + o.UserID + ", marker " + strconv.Quote(marker)})
	}
	return nil
}
