package invariants

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants/orderledger"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// SKUReport is the figures of one SKU.
type SKUReport struct {
	SKU            string
	Expected       int64 // initial stock + restocks
	DBStock        int64
	Deducted       int64 // Σ DEDUCT
	Restored       int64 // Σ RESTORE
	PaidUnits      int64
	AwaitingUnits  int64
	RedisAvailable int64
	RedisLoaded    bool
	RedisHolds     int64 // units in the holds hash
}

// Report is the outcome of a check: the figures and every violated invariant.
type Report struct {
	SKUs []SKUReport
	// Lines are the order lines whose ledger breaks orderledger's rule (each is a violation too): taken or
	// given back more than once, or keeping what their order's status does not.
	Lines      []LineReport
	Violations []string
}

// LineReport is one order line's ledger that breaks orderledger's rule.
type LineReport struct {
	OrderID, SKU string
	orderledger.Line
	Problem orderledger.Problem
}

func (l LineReport) String() string {
	status := string(l.Status)
	if l.Status == orderledger.NoOrder {
		status = "no order line"
	}
	return fmt.Sprintf("I4 order %s (%s) sku %s: %s", l.OrderID, status, l.SKU, l.Problem.Text)
}

// OK reports whether no invariant is violated.
func (r Report) OK() bool { return len(r.Violations) == 0 }

func (r Report) String() string {
	var b strings.Builder
	for _, s := range r.SKUs {
		fmt.Fprintf(&b, "%s: expected=%d db_stock=%d deducted=%d restored=%d paid=%d awaiting=%d redis=%d(loaded=%v) holds=%d\n",
			s.SKU, s.Expected, s.DBStock, s.Deducted, s.Restored, s.PaidUnits, s.AwaitingUnits, s.RedisAvailable, s.RedisLoaded, s.RedisHolds)
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "VIOLATION: %s\n", v)
	}
	return b.String()
}

// Check verifies I1–I4 for the SKUs, whose expected totals (initial stock + restocks) are given. quiet
// means no order is in flight: the equalities then hold exactly (Redis equals the DB, no holds left).
func Check(ctx context.Context, store *sqlstore.Store, rs *redisstock.Store, expected map[string]int64, quiet bool) (Report, error) {
	var rep Report
	bad := func(format string, args ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, args...))
	}
	db := store.DB().WithContext(ctx)

	units := func(status ordersaga.Status) (map[string]int64, error) {
		var rows []struct {
			SKU string
			N   int64
		}
		err := db.Raw(`SELECT ol.sku AS sku, COALESCE(SUM(ol.qty), 0) AS n FROM order_lines ol
			JOIN orders o ON o.order_id = ol.order_id WHERE o.status = ? GROUP BY ol.sku`, string(status)).Scan(&rows).Error
		out := map[string]int64{}
		for _, r := range rows {
			out[r.SKU] = r.N
		}
		return out, err
	}
	paid, err := units(ordersaga.StatusPaid)
	if err != nil {
		return rep, fmt.Errorf("invariants: paid units: %w", err)
	}
	awaiting, err := units(ordersaga.StatusAwaitingPayment)
	if err != nil {
		return rep, fmt.Errorf("invariants: awaiting units: %w", err)
	}

	for _, sku := range slices.Sorted(maps.Keys(expected)) {
		s := SKUReport{SKU: sku, Expected: expected[sku], PaidUnits: paid[sku], AwaitingUnits: awaiting[sku]}
		c, err := store.Conservation(ctx, sku)
		if err != nil {
			return rep, fmt.Errorf("invariants: %w", err)
		}
		s.DBStock, s.Deducted, s.Restored = c.Stock, c.Deducted, c.Restored
		var holds map[string]int64
		if s.RedisAvailable, s.RedisLoaded, holds, err = redisSide(ctx, store, rs, sku); err != nil {
			return rep, fmt.Errorf("invariants: %w", err)
		}
		var unconfirmed int64 // holds whose order has no DEDUCT yet
		for order, q := range holds {
			s.RedisHolds += q
			var n int64
			if err := db.Raw("SELECT COUNT(*) FROM stock_ledger WHERE order_id = ? AND sku = ? AND op = ?", order, sku, sqlstore.OpDeduct).
				Scan(&n).Error; err != nil {
				return rep, fmt.Errorf("invariants: %w", err)
			}
			if n == 0 {
				unconfirmed += q
			}
		}
		rep.SKUs = append(rep.SKUs, s)

		// I1 conservation.
		if got := s.DBStock + s.Deducted - s.Restored; got != s.Expected {
			bad("I1 %s: db.stock + Σdeduct − Σrestore = %d, want %d", sku, got, s.Expected)
		}
		sold := s.Deducted - s.Restored
		if quiet && sold != s.PaidUnits {
			bad("I1 %s: units deducted and not restored = %d, units in PAID orders = %d", sku, sold, s.PaidUnits)
		}
		if !quiet && sold != s.PaidUnits+s.AwaitingUnits && sold < s.PaidUnits {
			bad("I1 %s: units deducted and not restored = %d < units in PAID orders = %d", sku, sold, s.PaidUnits)
		}
		// I2 no oversell.
		if s.PaidUnits+s.AwaitingUnits > s.Expected {
			bad("I2 %s: paid+awaiting units %d exceed stock ever available %d (oversold)", sku, s.PaidUnits+s.AwaitingUnits, s.Expected)
		}
		if s.DBStock < 0 { // the schema refuses it (CHECK stock >= 0): a guard of the schema, not the code
			bad("I2 %s: db.stock %d is negative", sku, s.DBStock)
		}
		// I3 the cache never promises more than the truth.
		if !s.RedisLoaded {
			if quiet {
				bad("I3 %s: not loaded in Redis", sku)
			}
		} else {
			if limit := s.DBStock - unconfirmed; s.RedisAvailable > limit {
				bad("I3 %s: redis.available %d > db.stock − unconfirmed holds = %d", sku, s.RedisAvailable, limit)
			}
			if quiet && (s.RedisAvailable != s.DBStock || s.RedisHolds != 0) {
				bad("I3 %s: quiet but redis.available %d (holds %d) != db.stock %d", sku, s.RedisAvailable, s.RedisHolds, s.DBStock)
			}
		}
	}

	// I4 once-only, over the whole ledger. A second DEDUCT or RESTORE row of one line cannot exist (UNIQUE
	// (order_id, sku, op)): this query guards the schema, not the code. The rule of each line's units
	// (orderledger) is the check that can fail.
	var dups []struct {
		OrderID, SKU, Op string
		N                int64
	}
	if err := db.Raw("SELECT order_id, sku, op, COUNT(*) AS n FROM stock_ledger GROUP BY order_id, sku, op HAVING COUNT(*) > 1").
		Scan(&dups).Error; err != nil {
		return rep, fmt.Errorf("invariants: %w", err)
	}
	for _, d := range dups {
		bad("I4 order %s sku %s: %d %s rows", d.OrderID, d.SKU, d.N, d.Op)
	}
	lines, err := ledgerLines(ctx, store)
	if err != nil {
		return rep, err
	}
	for _, l := range lines {
		if p := orderledger.Check(l.Line); p != nil {
			l.Problem = *p
			rep.Lines = append(rep.Lines, l)
			bad("%s", l)
		}
	}
	// Payments: one application per PAID order, none for any other.
	var payBad []struct {
		OrderID, Status string
		Applied         int64
	}
	if err := db.Raw(`SELECT o.order_id AS order_id, o.status AS status,
			(SELECT COUNT(*) FROM payments p WHERE p.order_id = o.order_id AND p.result = ?) AS applied
		FROM orders o`, string(ordersaga.PaymentApplied)).Scan(&payBad).Error; err != nil {
		return rep, fmt.Errorf("invariants: %w", err)
	}
	for _, p := range payBad {
		want := int64(0)
		if p.Status == string(ordersaga.StatusPaid) {
			want = 1
		}
		if p.Applied != want {
			bad("I4 order %s (%s): %d applied payments, want %d", p.OrderID, p.Status, p.Applied, want)
		}
	}
	return rep, nil
}

// redisSide reads a SKU's counter and holds, summed over its shards when its stock is split (stock_shards):
// loaded when every shard has its counter.
func redisSide(ctx context.Context, store *sqlstore.Store, rs *redisstock.Store, sku string) (avail int64, loaded bool, holds map[string]int64, err error) {
	n := 1
	if inv, err := store.Inventory(ctx, sku); err == nil {
		n = max(inv.StockShards, 1)
	} else if !errors.Is(err, ordersaga.ErrNotFound) {
		return 0, false, nil, err
	}
	loaded, holds = true, map[string]int64{}
	for i := range n {
		shard := redisstock.ShardName(sku, i)
		a, ok, err := rs.Available(ctx, shard)
		if err != nil {
			return 0, false, nil, err
		}
		h, err := rs.Holds(ctx, shard)
		if err != nil {
			return 0, false, nil, err
		}
		avail, loaded = avail+a, loaded && ok
		for order, q := range h {
			holds[order] += q
		}
	}
	return avail, loaded, holds, nil
}

// ledgerLines reads every order line with the units its ledger rows took and gave back, and the ledger's
// (order, SKU) pairs that no recorded order line has (orderledger.NoOrder), from one snapshot.
func ledgerLines(ctx context.Context, store *sqlstore.Store) ([]LineReport, error) {
	var rows []struct {
		OrderID, SKU, Status string
		Qty, D, R            int64
	}
	err := store.DB().WithContext(ctx).Raw(`SELECT ol.order_id AS order_id, ol.sku AS sku, o.status AS status, ol.qty AS qty,
			COALESCE((SELECT SUM(l.qty) FROM stock_ledger l WHERE l.order_id = ol.order_id AND l.sku = ol.sku AND l.op = ?), 0) AS d,
			COALESCE((SELECT SUM(l.qty) FROM stock_ledger l WHERE l.order_id = ol.order_id AND l.sku = ol.sku AND l.op = ?), 0) AS r
		FROM order_lines ol JOIN orders o ON o.order_id = ol.order_id
		UNION ALL
		SELECT l.order_id, l.sku, '', 0,
			COALESCE(SUM(CASE WHEN l.op = ? THEN l.qty ELSE 0 END), 0), COALESCE(SUM(CASE WHEN l.op = ? THEN l.qty ELSE 0 END), 0)
		FROM stock_ledger l
		WHERE NOT EXISTS (SELECT 1 FROM order_lines ol JOIN orders o ON o.order_id = ol.order_id WHERE ol.order_id = l.order_id AND ol.sku = l.sku)
		GROUP BY l.order_id, l.sku
		ORDER BY order_id, sku`, sqlstore.OpDeduct, sqlstore.OpRestore, sqlstore.OpDeduct, sqlstore.OpRestore).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("invariants: order lines' ledger: %w", err)
	}
	out := make([]LineReport, len(rows))
	for i, r := range rows {
		out[i] = LineReport{OrderID: r.OrderID, SKU: r.SKU,
			Line: orderledger.Line{Status: ordersaga.Status(r.Status), Qty: r.Qty, Deducted: r.D, Restored: r.R}}
	}
	return out, nil
}
