package invariants

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ordersaga/ordersaga"
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
	SKUs       []SKUReport
	Violations []string
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
		if s.RedisAvailable, s.RedisLoaded, err = rs.Available(ctx, sku); err != nil {
			return rep, fmt.Errorf("invariants: %w", err)
		}
		holds, err := rs.Holds(ctx, sku)
		if err != nil {
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
		if s.DBStock < 0 {
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

	// I4 once-only, over the whole ledger.
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
	var mism []struct {
		OrderID, SKU string
		D, R         int64
	}
	if err := db.Raw(`SELECT r.order_id AS order_id, r.sku AS sku, COALESCE(d.qty, 0) AS d, r.qty AS r FROM stock_ledger r
		LEFT JOIN stock_ledger d ON d.order_id = r.order_id AND d.sku = r.sku AND d.op = ?
		WHERE r.op = ? AND COALESCE(d.qty, 0) <> r.qty`, sqlstore.OpDeduct, sqlstore.OpRestore).Scan(&mism).Error; err != nil {
		return rep, fmt.Errorf("invariants: %w", err)
	}
	for _, m := range mism {
		bad("I4 order %s sku %s: RESTORE %d does not match DEDUCT %d", m.OrderID, m.SKU, m.R, m.D)
	}
	// Closed unpaid orders keep nothing; paid orders keep everything.
	var leaks []struct {
		OrderID, SKU, Status string
		Kept                 int64
	}
	if err := db.Raw(`SELECT o.order_id AS order_id, ol.sku AS sku, o.status AS status,
			COALESCE(SUM(CASE WHEN l.op = ? THEN l.qty ELSE -l.qty END), 0) AS kept
		FROM orders o JOIN order_lines ol ON ol.order_id = o.order_id
		LEFT JOIN stock_ledger l ON l.order_id = o.order_id AND l.sku = ol.sku
		WHERE o.status IN (?, ?, ?, ?)
		GROUP BY o.order_id, ol.sku, o.status, ol.qty
		HAVING (o.status = ? AND COALESCE(SUM(CASE WHEN l.op = ? THEN l.qty ELSE -l.qty END), 0) <> ol.qty)
		    OR (o.status <> ? AND COALESCE(SUM(CASE WHEN l.op = ? THEN l.qty ELSE -l.qty END), 0) <> 0)`,
		sqlstore.OpDeduct,
		string(ordersaga.StatusPaid), string(ordersaga.StatusExpired), string(ordersaga.StatusCancelled), string(ordersaga.StatusRejected),
		string(ordersaga.StatusPaid), sqlstore.OpDeduct, string(ordersaga.StatusPaid), sqlstore.OpDeduct).Scan(&leaks).Error; err != nil {
		return rep, fmt.Errorf("invariants: %w", err)
	}
	for _, l := range leaks {
		bad("I4 order %s (%s) sku %s: keeps %d units deducted", l.OrderID, l.Status, l.SKU, l.Kept)
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
