package reconcile

import (
	"context"
	"errors"
	"fmt"

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
		if err := r.repairUser(ctx, sku, e.UserID, e.OrderID, redisstock.UserDrop, e.Marker, e.Entry, 0, sum, note); err != nil {
			return err
		}
	}
	for order, o := range standing {
		if counted[o.UserID+"\x00"+order] {
			continue
		}
		marker, err := r.Redis.Marker(ctx, order, sku)
		if err != nil {
			return err
		}
		if err := r.repairUser(ctx, sku, o.UserID, order, redisstock.UserAdd, marker, "", o.Qty, sum, note); err != nil {
			return err
		}
	}
	return nil
}

// repairUser runs one repair_user.lua and counts it: done (an anomaly noted) or raced.
func (r *Reconciler) repairUser(ctx context.Context, sku, userID, orderID string, action redisstock.UserRepair, marker, entry string,
	units int64, sum *Summary, note func(sqlstore.Anomaly)) error {
	done, err := r.Redis.RepairUser(ctx, sku, userID, orderID, action, marker, entry, units)
	if err != nil {
		return err
	}
	if !done {
		sum.Raced++
		return nil
	}
	sum.UserUnitsFixed++
	a := sqlstore.Anomaly{OrderID: orderID, Kind: sqlstore.KindUserUnitsMissing, Expected: i64(units), Observed: i64(0),
		Action: sqlstore.ActionUserAdded, Detail: fmt.Sprintf("user %s, marker %q", userID, marker)}
	if action == redisstock.UserDrop {
		a.Kind, a.Expected, a.Observed, a.Action = sqlstore.KindUserUnitsStray, i64(0), parseQty(entry), sqlstore.ActionUserDropped
	}
	note(a)
	return nil
}
