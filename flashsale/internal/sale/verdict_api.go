package sale

import (
	"fmt"
	"slices"

	"github.com/ordersaga/ordersaga"
)

// checkAPI judges the API view: the inventory, the orders and the payment answers the run saw.
func checkAPI(j *judge, s Snapshot) {
	ordStatus := func(o OrderSnapshot) ordersaga.Status { return o.Status }
	ordLines := func(o OrderSnapshot) []ordersaga.Line { return o.Lines }
	paid := unitsBySKU(s.Orders, ordStatus, ordLines, ordersaga.StatusPaid)
	live := unitsBySKU(s.Orders, ordStatus, ordLines, openStatuses...)

	for _, sku := range s.SKUs {
		inv := sku.API
		if inv == nil {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: sku.Initial,
				Detail: "inventory could not be read at the end; every unit is unaccounted for"})
			continue
		}
		sold := paid[sku.SKU] + live[sku.SKU]
		// Orders the run never heard of (lost answers) hold units the API view cannot account for: then the
		// database view, which sees every order, judges conservation alone.
		conservation := s.UnknownOutcomes == 0 || s.DB == nil
		if n := sold - sku.Initial; n > 0 {
			j.bad(Finding{Check: CheckOversold, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("units in PAID + open orders = %d > stock %d", sold, sku.Initial)})
		} else if n := inv.DBStock + sold - sku.Initial; n > 0 && conservation {
			j.bad(Finding{Check: CheckOversold, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("db_stock %d + units in PAID and open orders %d = %d > stock %d: units created (a restore too many)", inv.DBStock, sold, inv.DBStock+sold, sku.Initial)})
		} else if inv.DBStock < 0 {
			j.bad(Finding{Check: CheckOversold, Source: SourceAPI, SKU: sku.SKU, N: -inv.DBStock,
				Detail: fmt.Sprintf("db_stock %d is negative", inv.DBStock)})
		}
		if n := sku.Initial - inv.DBStock - sold; n > 0 && conservation {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("stock %d − db_stock %d − units in PAID and open orders %d = %d units neither sold nor on sale", sku.Initial, inv.DBStock, sold, n)})
		}
		if inv.RedisAvailable == nil {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: max(inv.DBStock, 0),
				Detail: "not loaded in Redis: nothing the database has can be sold"})
			continue
		}
		avail := *inv.RedisAvailable
		if n := inv.DBStock - inv.HeldUnits() - avail; n > 0 {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("redis_available %d < db_stock %d − holds %d: Redis will not sell units the database has", avail, inv.DBStock, inv.HeldUnits())})
		}
		if inv.HeldUnits() > 0 {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: inv.HeldUnits(),
				Detail: fmt.Sprintf("%d units still held in Redis after the wait (leaked holds)", inv.HeldUnits())})
		}
		if n := avail - (inv.DBStock - inv.HeldUnits()); n > 0 {
			j.bad(Finding{Check: CheckCacheDrift, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("redis_available %d > db_stock %d − holds %d (I3)", avail, inv.DBStock, inv.HeldUnits())})
		}
	}

	// Sold-out answers given while units were free, from the requests the run sent.
	checkUndersold(j, s)

	// The per-user limit, from the orders the run placed (their status as last read).
	checkUserLimit(j, s, SourceAPI, holdings(s.Orders, func(o OrderSnapshot) string { return o.UserID }, ordStatus,
		func(o OrderSnapshot) string { return o.OrderID }, ordLines))

	// One order per Idempotency-Key.
	keys := map[string][]string{}
	for _, o := range s.Orders {
		for _, id := range o.KeyOrderIDs {
			if !slices.Contains(keys[o.Key], id) {
				keys[o.Key] = append(keys[o.Key], id)
			}
		}
	}
	for key, ids := range keys {
		if len(ids) > 1 {
			j.bad(Finding{Check: CheckDuplicate, Source: SourceAPI, N: int64(len(ids) - 1),
				Detail: fmt.Sprintf("Idempotency-Key %s answered 201 with %d different orders %v", key, len(ids), ids)})
		}
	}

	applied := map[string][]string{} // order -> events answered applied
	unsure := map[string]bool{}      // order -> a delivery went unanswered
	for _, p := range s.Payments {
		if p.Failed > 0 {
			unsure[p.OrderID] = true
		}
		var nApplied, nRefunded int64
		for _, r := range p.Results {
			switch res := ordersaga.PaymentResult(r); {
			case res == ordersaga.PaymentApplied:
				nApplied++
			case res.Refunds(): // refunded and rejected_amount
				nRefunded++
			}
		}
		if len(p.Results) > 0 {
			m := j.money(p.Currency)
			m.Sent++
			m.SentCents += p.AmountCents
			if p.WrongAmount {
				m.WrongAmount++
				m.WrongAmountCents += p.AmountCents
			}
		}
		if p.WrongAmount && nApplied > 0 {
			j.bad(Finding{Check: CheckUnsettled, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: 1,
				Detail: fmt.Sprintf("a payment of the wrong amount (%d %s) was answered applied", p.AmountCents, p.Currency)})
		}
		if nRefunded > 1 {
			j.bad(Finding{Check: CheckRefund, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: nRefunded - 1,
				Detail: fmt.Sprintf("event answered refunded %d times (a redelivery must answer duplicate)", nRefunded)})
		}
		if nApplied > 0 && nRefunded > 0 {
			j.bad(Finding{Check: CheckRefund, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: 1,
				Detail: "event answered both applied and refunded"})
		}
		if nApplied > 1 {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: nApplied - 1,
				Detail: fmt.Sprintf("event answered applied %d times (a redelivery must answer duplicate)", nApplied)})
		}
		if nApplied > 0 {
			applied[p.OrderID] = append(applied[p.OrderID], p.EventID)
		}
	}

	for _, o := range s.Orders {
		if stuck(s, o.Status, o.PayBy) {
			detail := fmt.Sprintf("status %q past its deadline plus %s", o.Status, s.Grace)
			if o.Status == "" {
				detail = "status could not be read"
			}
			j.bad(Finding{Check: CheckStuck, Source: SourceAPI, OrderID: o.OrderID, N: 1, Detail: detail})
		}
		if ev := applied[o.OrderID]; len(ev) > 1 {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: int64(len(ev) - 1),
				Detail: fmt.Sprintf("%d payment events applied to one order %v (charged twice)", len(ev), ev)})
		}
		if len(applied[o.OrderID]) > 0 && o.Status.Final() && o.Status != ordersaga.StatusPaid {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: 1,
				Detail: fmt.Sprintf("a payment was answered applied but the order is %s", o.Status)})
		}
		if o.Status == ordersaga.StatusPaid && len(applied[o.OrderID]) == 0 && !unsure[o.OrderID] {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: 1,
				Detail: "order is PAID but no payment of this run was answered applied"})
		}
		if o.CancelStatus == ordersaga.StatusCancelled && o.Status.Final() && o.Status != ordersaga.StatusCancelled {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: 1,
				Detail: fmt.Sprintf("cancel answered CANCELLED but the order is %s", o.Status)})
		}
	}
}
