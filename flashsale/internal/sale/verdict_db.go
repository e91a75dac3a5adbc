package sale

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants/orderledger"
)

// The stock_ledger ops (sqlstore.OpDeduct and OpRestore; activities is not imported: it links the stores).
const (
	ledgerDeduct  = "DEDUCT"
	ledgerRestore = "RESTORE"
)

// checkDB judges the database view (Snapshot.DB): the ledger, the orders and the payments rows of the run's SKUs.
func checkDB(j *judge, s Snapshot) {
	db := s.DB
	dbStatus := func(o DBOrder) ordersaga.Status { return o.Status }
	dbLines := func(o DBOrder) []ordersaga.Line { return o.Lines }
	paid := unitsBySKU(db.Orders, dbStatus, dbLines, ordersaga.StatusPaid)

	deducted, restored := map[string]int64{}, map[string]int64{}
	taken, given := map[[2]string]int64{}, map[[2]string]int64{} // (order, sku) -> Σ DEDUCT, Σ RESTORE
	for _, r := range db.Ledger {
		k := [2]string{r.OrderID, r.SKU}
		switch r.Op {
		case ledgerDeduct:
			deducted[r.SKU] += r.Qty
			taken[k] += r.Qty
		case ledgerRestore:
			restored[r.SKU] += r.Qty
			given[k] += r.Qty
		}
	}

	// An open order holds what its ledger says it kept (up to its qty): one whose restore has run and whose
	// close is not recorded yet is being compensated and holds nothing.
	live := map[string]int64{}
	for _, o := range db.Orders {
		if !slices.Contains(openStatuses, o.Status) {
			continue
		}
		for _, l := range o.Lines {
			k := [2]string{o.OrderID, l.SKU}
			live[l.SKU] += min(max(taken[k]-given[k], 0), l.Qty)
		}
	}
	for _, sku := range s.SKUs {
		stock, ok := db.Stock[sku.SKU]
		if !ok {
			j.bad(Finding{Check: CheckLost, Source: SourceDB, SKU: sku.SKU, N: sku.Initial, Detail: "no inventory row"})
			continue
		}
		net := deducted[sku.SKU] - restored[sku.SKU]
		sold := paid[sku.SKU] + live[sku.SKU]
		over := max(sold-sku.Initial, stock+net-sku.Initial, sold-net, -stock)
		if over > 0 {
			j.bad(Finding{Check: CheckOversold, Source: SourceDB, SKU: sku.SKU, N: over,
				Detail: fmt.Sprintf("stock %d, db.stock %d, Σdeduct−Σrestore %d, units in PAID orders and kept by open ones %d", sku.Initial, stock, net, sold)})
		}
		lost := max(sku.Initial-stock-net, 0) + max(net-sold, 0)
		if lost > 0 {
			j.bad(Finding{Check: CheckLost, Source: SourceDB, SKU: sku.SKU, N: lost,
				Detail: fmt.Sprintf("stock %d, db.stock %d, Σdeduct−Σrestore %d, units in PAID orders and kept by open ones %d", sku.Initial, stock, net, sold)})
		}
	}

	// The per-user limit: Σ order_lines.qty of each user's RESERVING, AWAITING_PAYMENT and PAID orders, per SKU.
	checkUserLimit(j, s, SourceDB, holdings(db.Orders, func(o DBOrder) string { return o.UserID }, dbStatus,
		func(o DBOrder) string { return o.OrderID }, dbLines))

	apiStatus := map[string]ordersaga.Status{}
	for _, o := range s.Orders {
		apiStatus[o.OrderID] = o.Status
	}
	appliedByOrder := checkMoneyDB(j, s)
	for _, o := range db.Orders {
		if stuck(s, o.Status, o.PayBy) {
			j.bad(Finding{Check: CheckStuck, Source: SourceDB, OrderID: o.OrderID, N: 1,
				Detail: fmt.Sprintf("status %s past its deadline plus %s", o.Status, s.Grace)})
		}
		// Each line's units against its status (internal/invariants/orderledger, the rule internal/invariants
		// applies to the store): taken or given back more than once is a duplicate deduction, whatever the
		// rows (the schema refuses a second row; a row can still take too much); keeping what the status
		// does not is a state error.
		for _, l := range o.Lines {
			k := [2]string{o.OrderID, l.SKU}
			p := orderledger.Check(orderledger.Line{Status: o.Status, Qty: l.Qty, Deducted: taken[k], Restored: given[k]})
			switch {
			case p == nil:
			case p.Fault == orderledger.Twice:
				j.bad(Finding{Check: CheckDuplicate, Source: SourceDB, SKU: l.SKU, OrderID: o.OrderID, N: 1, Detail: p.Text})
			default:
				j.bad(Finding{Check: CheckState, Source: SourceDB, SKU: l.SKU, OrderID: o.OrderID, N: 1, Detail: p.Text})
			}
		}
		switch n := appliedByOrder[o.OrderID]; {
		case n > 1:
			j.bad(Finding{Check: CheckState, Source: SourceDB, OrderID: o.OrderID, N: n - 1, Detail: fmt.Sprintf("%d applied payments (charged twice)", n)})
		case n == 1 && o.Status != ordersaga.StatusPaid:
			j.bad(Finding{Check: CheckState, Source: SourceDB, OrderID: o.OrderID, N: 1, Detail: fmt.Sprintf("applied payment on a %s order", o.Status)})
		case n == 0 && o.Status == ordersaga.StatusPaid:
			j.bad(Finding{Check: CheckState, Source: SourceDB, OrderID: o.OrderID, N: 1, Detail: "PAID order without an applied payment"})
		}
		if as, ok := apiStatus[o.OrderID]; ok && as.Final() && o.Status.Final() && as != o.Status {
			j.bad(Finding{Check: CheckState, Source: SourceDB, OrderID: o.OrderID, N: 1,
				Detail: fmt.Sprintf("the API says %s, the database %s", as, o.Status)})
		}
	}
}

// checkMoneyDB judges the payments rows: every one kept for a PAID order of its amount or refunded, once;
// every payment the run got a 200 answer for recorded, for the amount sent. It adds the database's money
// totals and returns the applied (kept) payments per order.
func checkMoneyDB(j *judge, s Snapshot) map[string]int64 {
	db := s.DB
	orders := map[string]DBOrder{}
	for _, o := range db.Orders {
		orders[o.OrderID] = o
	}
	appliedByOrder := map[string]int64{}
	refundsByEvent, keptByEvent := map[string]int64{}, map[string]int64{}
	rows := map[string]DBPayment{}
	for _, p := range db.Payments {
		rows[p.EventID] = p
		m := j.money(p.Currency)
		m.Captured++
		m.CapturedCents += p.AmountCents
		switch {
		case p.Refunded:
			m.Refunded++
			m.RefundedCents += p.AmountCents
			refundsByEvent[p.EventID]++
		case p.kept():
			m.Applied++
			m.AppliedCents += p.AmountCents
			keptByEvent[p.EventID]++
			appliedByOrder[p.OrderID]++
			if o, ok := orders[p.OrderID]; ok && o.Status == ordersaga.StatusPaid && (o.AmountCents != p.AmountCents || o.Currency != p.Currency) {
				j.bad(Finding{Check: CheckUnsettled, Source: SourceDB, OrderID: p.OrderID, EventID: p.EventID, N: 1,
					Detail: fmt.Sprintf("applied %d %s to an order of %d %s", p.AmountCents, p.Currency, o.AmountCents, o.Currency)})
			}
		default:
			m.Unsettled++
			m.UnsettledCents += p.AmountCents
			j.bad(Finding{Check: CheckUnsettled, Source: SourceDB, OrderID: p.OrderID, EventID: p.EventID, N: 1,
				Detail: fmt.Sprintf("captured %d %s recorded as %q, neither applied nor refunded", p.AmountCents, p.Currency, p.Result)})
		}
	}
	for _, ev := range slices.Sorted(maps.Keys(refundsByEvent)) {
		if n := refundsByEvent[ev]; n > 1 {
			j.bad(Finding{Check: CheckRefund, Source: SourceDB, EventID: ev, N: n - 1, Detail: fmt.Sprintf("%d refund rows for one event", n)})
		}
		if keptByEvent[ev] > 0 {
			j.bad(Finding{Check: CheckRefund, Source: SourceDB, EventID: ev, N: 1, Detail: "event both applied and refunded"})
		}
	}
	for _, p := range s.Payments {
		if len(p.Results) == 0 {
			continue // never answered: the provider would still be delivering it
		}
		row, ok := rows[p.EventID]
		switch {
		case !ok:
			j.bad(Finding{Check: CheckUnsettled, Source: SourceDB, OrderID: p.OrderID, EventID: p.EventID, N: 1,
				Detail: fmt.Sprintf("answered %v but no payments row: %d %s captured without a record", p.Results, p.AmountCents, p.Currency)})
		case p.Currency != "" && (row.AmountCents != p.AmountCents || row.Currency != p.Currency):
			j.bad(Finding{Check: CheckUnsettled, Source: SourceDB, OrderID: p.OrderID, EventID: p.EventID, N: 1,
				Detail: fmt.Sprintf("sent %d %s, recorded %d %s", p.AmountCents, p.Currency, row.AmountCents, row.Currency)})
		}
	}
	return appliedByOrder
}
