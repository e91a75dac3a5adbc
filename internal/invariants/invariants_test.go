package invariants_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// world is a store and a Redis in a healthy, quiet state made through the stores' own calls:
//
//	SKU A, 10 units: o-paid took 2 and is PAID (event ev-paid); o-cancelled took 1 and gave it back
//	SKU B, 5 units:  o-cancelled took 1 and gave it back; o-rejected was closed before any deduct
//
// Redis holds each SKU's database stock (A 8, B 5) and no hold. Each case then breaks it by writing to the
// tables or the keys directly.
type world struct {
	store    *sqlstore.Store
	rs       *redisstock.Store
	expected map[string]int64
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{
		store:    testenv.MustOpenStoreWith(t, testenv.Item{SKU: "A", Stock: 10, Price: 100}, testenv.Item{SKU: "B", Stock: 5, Price: 100}),
		rs:       testenv.MustOpenRedis(t),
		expected: map[string]int64{"A": 10, "B": 5},
	}
	w.deduct(t, "o-paid", ordersaga.Line{SKU: "A", Qty: 2})
	w.pay(t, "o-paid", "ev-paid")
	cancelled := []ordersaga.Line{{SKU: "A", Qty: 1}, {SKU: "B", Qty: 1}}
	w.deduct(t, "o-cancelled", cancelled...)
	if _, err := w.store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o-cancelled", UserID: "u", Status: ordersaga.StatusCancelled, Currency: "CNY"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o-rejected", UserID: "u", Status: ordersaga.StatusRejected,
		Currency: "CNY", Lines: []ordersaga.Line{{SKU: "B", Qty: 1}}}); err != nil {
		t.Fatal(err)
	}
	w.syncRedis(t)
	return w
}

func (w *world) deduct(t *testing.T, order string, lines ...ordersaga.Line) {
	t.Helper()
	if _, err := w.store.Deduct(t.Context(), ordersaga.DeductInput{OrderID: order, UserID: "u", Currency: "CNY",
		PayBy: time.Now().Add(time.Hour), Lines: lines}); err != nil {
		t.Fatalf("deduct %s: %v", order, err)
	}
}

func (w *world) pay(t *testing.T, order, event string) {
	t.Helper()
	rec, err := w.store.Order(t.Context(), order)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.store.MarkPaid(t.Context(), ordersaga.PaymentRecord{EventID: event, OrderID: order, AmountCents: rec.AmountCents,
		Currency: "CNY"}, time.Now()); err != nil {
		t.Fatalf("pay %s: %v", order, err)
	}
}

// syncRedis sets each SKU's counter to the database's stock, as reconciliation leaves it.
func (w *world) syncRedis(t *testing.T) {
	t.Helper()
	for sku := range w.expected {
		inv, err := w.store.Inventory(t.Context(), sku)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.rs.SetAvailable(t.Context(), sku, inv.Stock); err != nil {
			t.Fatal(err)
		}
	}
}

// exec runs SQL statements on the store's database, failing the test on an error.
func (w *world) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := w.store.DB().Exec(s).Error; err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestCheckFlagsEachBrokenState puts a real store (SQLite and miniredis, or MariaDB and Redis with
// MYSQL_DSN and REDIS_ADDR) into each broken state by direct writes and asserts that Check reports exactly
// the violations of that state: each wanted text in one violation, and no other violation.
func TestCheckFlagsEachBrokenState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		quiet bool
		brk   func(t *testing.T, w *world)
		want  []string
	}{
		{name: "healthy and quiet", quiet: true, brk: func(*testing.T, *world) {}},
		{name: "healthy with an order awaiting its payment", brk: func(t *testing.T, w *world) {
			w.deduct(t, "o-awaiting", ordersaga.Line{SKU: "B", Qty: 2})
			w.syncRedis(t)
		}},
		{name: "healthy with an order compensated and its close not recorded yet", brk: func(t *testing.T, w *world) {
			w.deduct(t, "o-awaiting", ordersaga.Line{SKU: "B", Qty: 2})
			if _, err := w.store.Restore(t.Context(), "o-awaiting", []ordersaga.Line{{SKU: "B", Qty: 2}}); err != nil {
				t.Fatal(err)
			}
			w.syncRedis(t)
		}},

		// I1 conservation.
		{name: "I1: a unit vanished from the stock", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "UPDATE inventory SET stock = stock - 1 WHERE sku = 'A'")
			w.syncRedis(t)
		}, want: []string{"I1 A: db.stock + Σdeduct − Σrestore = 9, want 10"}},
		{name: "I1: units taken by no order", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o-ghost', 'A', 'DEDUCT', 1)",
				"UPDATE inventory SET stock = stock - 1 WHERE sku = 'A'")
			w.syncRedis(t)
		}, want: []string{"I1 A: units deducted and not restored = 3, units in PAID orders = 2",
			"order o-ghost (no order line) sku A: taken 1, given back 0 by no recorded order line"}},
		{name: "I1 in flight: a PAID order's deduct missing", brk: func(t *testing.T, w *world) {
			w.exec(t, "DELETE FROM stock_ledger WHERE order_id = 'o-paid'", "UPDATE inventory SET stock = stock + 2 WHERE sku = 'A'")
		}, want: []string{"I1 A: units deducted and not restored = 0 < units in PAID orders = 2",
			"order o-paid (PAID) sku A: taken 0, given back 0 of 2 ordered: a PAID line keeps all its units"}},

		// I2 no oversell.
		{name: "I2: units paid for put back on the shelf and sold again", quiet: true, brk: func(t *testing.T, w *world) {
			w.deduct(t, "o-x1", ordersaga.Line{SKU: "B", Qty: 3})
			w.pay(t, "o-x1", "ev-x1")
			w.exec(t, "UPDATE inventory SET stock = stock + 3 WHERE sku = 'B'")
			w.deduct(t, "o-x2", ordersaga.Line{SKU: "B", Qty: 3})
			w.pay(t, "o-x2", "ev-x2")
			w.syncRedis(t)
		}, want: []string{"I1 B: db.stock + Σdeduct − Σrestore = 8, want 5", "I2 B: paid+awaiting units 6 exceed stock ever available 5"}},

		// I3 the cache never promises more than the truth.
		{name: "I3: a SKU not loaded in Redis", quiet: true, brk: func(t *testing.T, w *world) {
			if err := w.rs.DropAvailable(t.Context(), "A"); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"I3 A: not loaded in Redis"}},
		{name: "I3 in flight: Redis promises a unit the database does not have", brk: func(t *testing.T, w *world) {
			if err := w.rs.SetAvailable(t.Context(), "A", 9); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"I3 A: redis.available 9 > db.stock − unconfirmed holds = 8"}},
		{name: "I3 in flight: an unconfirmed hold still counted as available", brk: func(t *testing.T, w *world) {
			if err := w.rs.Client().HSet(t.Context(), w.rs.HoldsKey("A"), "o-new", 1).Err(); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"I3 A: redis.available 8 > db.stock − unconfirmed holds = 7"}},
		{name: "I3 quiet: Redis below the database", quiet: true, brk: func(t *testing.T, w *world) {
			if err := w.rs.SetAvailable(t.Context(), "A", 7); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"I3 A: quiet but redis.available 7 (holds 0) != db.stock 8"}},
		{name: "I3 quiet: a confirmed hold left", quiet: true, brk: func(t *testing.T, w *world) {
			if err := w.rs.Client().HSet(t.Context(), w.rs.HoldsKey("A"), "o-paid", 2).Err(); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"I3 A: quiet but redis.available 8 (holds 2) != db.stock 8"}},

		// I4 once-only: each line taken at most once and given back at most once, and kept as its status says.
		{name: "I4: a PAID line taken twice in one row", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "UPDATE stock_ledger SET qty = 4 WHERE order_id = 'o-paid' AND op = 'DEDUCT'",
				"UPDATE inventory SET stock = stock - 2 WHERE sku = 'A'")
			w.syncRedis(t)
		}, want: []string{"I1 A: units deducted and not restored = 4, units in PAID orders = 2",
			"order o-paid (PAID) sku A: taken 4 units of 2 ordered: deducted more than once"}},
		{name: "I4: a PAID line taken twice and given back once (keeps the right units)", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "UPDATE stock_ledger SET qty = 4 WHERE order_id = 'o-paid' AND op = 'DEDUCT'",
				"INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o-paid', 'A', 'RESTORE', 2)")
		}, want: []string{"order o-paid (PAID) sku A: taken 4 units of 2 ordered: deducted more than once"}},
		{name: "I4: a line awaiting its payment taken twice", brk: func(t *testing.T, w *world) {
			w.deduct(t, "o-awaiting", ordersaga.Line{SKU: "B", Qty: 1})
			w.exec(t, "UPDATE stock_ledger SET qty = 2 WHERE order_id = 'o-awaiting'", "UPDATE inventory SET stock = stock - 1 WHERE sku = 'B'")
			w.syncRedis(t)
		}, want: []string{"order o-awaiting (AWAITING_PAYMENT) sku B: taken 2 units of 1 ordered: deducted more than once"}},
		{name: "I4: a CANCELLED line given back twice", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "UPDATE stock_ledger SET qty = 2 WHERE order_id = 'o-cancelled' AND sku = 'A' AND op = 'RESTORE'",
				"UPDATE inventory SET stock = stock + 1 WHERE sku = 'A'")
			w.syncRedis(t)
		}, want: []string{"I1 A: units deducted and not restored = 1, units in PAID orders = 2",
			"order o-cancelled (CANCELLED) sku A: given back 2 units of 1 taken: restored more than once"}},
		{name: "I4: a REJECTED line given back what it never took", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o-rejected', 'B', 'RESTORE', 1)",
				"UPDATE inventory SET stock = stock + 1 WHERE sku = 'B'")
			w.syncRedis(t)
		}, want: []string{"I1 B: units deducted and not restored = -1, units in PAID orders = 0",
			"order o-rejected (REJECTED) sku B: given back 1 units of 0 taken: restored more than once"}},
		{name: "I4: a CANCELLED line not given back", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "DELETE FROM stock_ledger WHERE order_id = 'o-cancelled' AND sku = 'A' AND op = 'RESTORE'",
				"UPDATE inventory SET stock = stock - 1 WHERE sku = 'A'")
			w.syncRedis(t)
		}, want: []string{"I1 A: units deducted and not restored = 3, units in PAID orders = 2",
			"order o-cancelled (CANCELLED) sku A: taken 1, given back 0 of 1 ordered: a closed unpaid line gives back all it took"}},
		{name: "I4: a PAID line given back", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o-paid', 'A', 'RESTORE', 2)",
				"UPDATE inventory SET stock = stock + 2 WHERE sku = 'A'")
			w.syncRedis(t)
		}, want: []string{"I1 A: units deducted and not restored = 0, units in PAID orders = 2",
			"order o-paid (PAID) sku A: taken 2, given back 2 of 2 ordered: a PAID line keeps all its units"}},

		// Payments: one application per PAID order, none for any other.
		{name: "payments: a PAID order charged twice", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "INSERT INTO payments (event_id, order_id, amount_cents, currency, result) VALUES ('ev-2', 'o-paid', 200, 'CNY', 'applied')")
		}, want: []string{"I4 order o-paid (PAID): 2 applied payments, want 1"}},
		{name: "payments: a payment applied to a CANCELLED order", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "INSERT INTO payments (event_id, order_id, amount_cents, currency, result) VALUES ('ev-c', 'o-cancelled', 200, 'CNY', 'applied')")
		}, want: []string{"I4 order o-cancelled (CANCELLED): 1 applied payments, want 0"}},
		{name: "payments: a PAID order without its payment", quiet: true, brk: func(t *testing.T, w *world) {
			w.exec(t, "DELETE FROM payments WHERE order_id = 'o-paid'")
		}, want: []string{"I4 order o-paid (PAID): 0 applied payments, want 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			c.brk(t, w)
			rep, err := invariants.Check(context.Background(), w.store, w.rs, w.expected, c.quiet)
			if err != nil {
				t.Fatal(err)
			}
			if msg := matchExactly(rep.Violations, c.want); msg != "" {
				t.Errorf("%s\nreport:\n%s", msg, rep)
			}
			if rep.OK() != (len(c.want) == 0) {
				t.Errorf("OK() = %v with %d violations", rep.OK(), len(rep.Violations))
			}
		})
	}
}

// matchExactly says how got differs from want: each wanted text must be in a violation of its own, and
// every violation must hold one of them. "" when they match.
func matchExactly(got, want []string) string {
	left := append([]string(nil), got...)
	var missing []string
	for _, w := range want {
		i := -1
		for j, v := range left {
			if strings.Contains(v, w) {
				i = j
				break
			}
		}
		if i < 0 {
			missing = append(missing, w)
			continue
		}
		left = append(left[:i], left[i+1:]...)
	}
	if len(missing) == 0 && len(left) == 0 {
		return ""
	}
	return "missing violations: " + strings.Join(quote(missing), ", ") + "; unexpected: " + strings.Join(quote(left), ", ")
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "«" + s + "»"
	}
	return out
}

// TestSchemaGuarantees: the checks whose broken state the schema refuses to hold, so that Check's counters
// for them are 0 by construction (RELIABILITY.md): a second DEDUCT or RESTORE row of one order line
// (UNIQUE (order_id, sku, op)), a second payments row of one event (UNIQUE (event_id)), a negative stock
// (CHECK stock >= 0).
func TestSchemaGuarantees(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, s := range []string{
		"INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o-paid', 'A', 'DEDUCT', 2)",
		"INSERT INTO stock_ledger (order_id, sku, op, qty) VALUES ('o-cancelled', 'A', 'RESTORE', 1)",
		"INSERT INTO payments (event_id, order_id, amount_cents, currency, result) VALUES ('ev-paid', 'o-paid', 200, 'CNY', 'applied')",
		"UPDATE inventory SET stock = -1 WHERE sku = 'A'",
	} {
		if err := w.store.DB().Exec(s).Error; err == nil {
			t.Errorf("%s: the schema accepted it", s)
		}
	}
	rep, err := invariants.Check(context.Background(), w.store, w.rs, w.expected, true)
	if err != nil || !rep.OK() {
		t.Errorf("after the refused writes: %v\n%s", err, rep)
	}
}
