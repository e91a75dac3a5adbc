package sqlstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// openReadCommitted opens a store of the test's own on the MYSQL_DSN server whose sessions default to READ
// COMMITTED (no gap locks, every statement reads the latest commit), and checks that they do: the store must
// not depend on the server's setting. It skips on SQLite, which runs one writer at a time.
func openReadCommitted(t *testing.T, items ...testenv.Item) *sqlstore.Store {
	t.Helper()
	if !testenv.RealMySQL() {
		t.Skip("isolation levels are MySQL's; SQLite runs one writer at a time")
	}
	dsn := testenv.MySQLDatabase(t) + "&tx_isolation=%27READ-COMMITTED%27"
	if !strings.Contains(dsn, "?") {
		dsn = strings.Replace(dsn, "&", "?", 1)
	}
	store, err := sqlstore.Open(t.Context(), dsn, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var level string
	if err := store.DB().Raw("SELECT @@tx_isolation").Scan(&level).Error; err != nil || level != "READ-COMMITTED" {
		t.Fatalf("session isolation = %q, %v; want READ-COMMITTED", level, err)
	}
	for _, it := range items {
		if err := store.SetInventory(t.Context(), it.SKU, it.Stock, it.Price); err != nil {
			t.Fatalf("seed %s: %v", it.SKU, err)
		}
	}
	return store
}

// A payment and a compensation of one deducted order race: MarkPaid against Restore (the workflow's
// compensation) or CloseUnpaid (the leaked-order repair, a cancel of a forgotten order). The order's row lock
// decides, and exactly one wins: PAID with its units sold and nothing restored, or restored (the units back in
// stock) with the payment refused. Never PAID with a RESTORE that gave units back.
func TestConcurrentMarkPaidAndRestore_OneWins(t *testing.T) {
	t.Parallel()
	raceMarkPaidAndRestore(t, testenv.MustOpenStoreWith(t, testenv.Item{SKU: "RACE", Stock: 1000, Price: 100}))
}

// The same race when the sessions default to READ COMMITTED.
func TestConcurrentMarkPaidAndRestore_UnderReadCommitted(t *testing.T) {
	t.Parallel()
	raceMarkPaidAndRestore(t, openReadCommitted(t, testenv.Item{SKU: "RACE", Stock: 1000, Price: 100}))
}

func raceMarkPaidAndRestore(t *testing.T, store *sqlstore.Store) {
	ctx := t.Context()
	const sku, start = "RACE", 1000
	var sold int64
	wins := map[string]int{}
	begin := time.Now()
	for round := range raceRounds {
		order := fmt.Sprintf("p%03d", round)
		qty := int64(1 + round%3)
		if _, err := store.Deduct(ctx, deductIn(order, line(sku, qty))); err != nil {
			t.Fatalf("round %d: deduct: %v", round, err)
		}
		viaClose := round%4 >= 2 // two rounds of Restore, two of CloseUnpaid, each started first once
		pay := ordersaga.PaymentRecord{EventID: "e-" + order, OrderID: order, AmountCents: 100 * qty, Currency: "EUR"}
		var payErr, compErr error
		runAll(2, func(i int) {
			if (i+round)%2 == 0 {
				payErr = store.MarkPaid(ctx, pay, payBy.Add(-time.Hour))
				return
			}
			if viaClose {
				_, _, compErr = store.CloseUnpaid(ctx, order, ordersaga.StatusExpired, "payment deadline passed")
			} else {
				_, compErr = store.Restore(ctx, order, []ordersaga.Line{line(sku, qty)})
			}
		})
		if compErr != nil {
			t.Fatalf("round %d: compensation: %v", round, compErr)
		}
		if payErr != nil && !errors.Is(payErr, ordersaga.ErrOrderNotPayable) {
			t.Fatalf("round %d: MarkPaid: %v, want success or ErrOrderNotPayable", round, payErr)
		}
		rec, err := store.Order(ctx, order)
		if err != nil {
			t.Fatal(err)
		}
		var restored int64
		for _, r := range ledgerOf(t, store, order) {
			if r.Op == sqlstore.OpRestore {
				restored += r.Qty
			}
		}
		payments := countRows(t, store, "payments", order)
		switch paid := payErr == nil; {
		case rec.Status == ordersaga.StatusPaid && restored > 0:
			t.Fatalf("round %d: the order is PAID and its %d units were restored (MarkPaid %v, compensation %v)", round, restored, payErr, compErr)
		case paid && (rec.Status != ordersaga.StatusPaid || restored != 0 || payments != 1):
			t.Fatalf("round %d: MarkPaid won but the order is %s, %d restored, %d payments rows", round, rec.Status, restored, payments)
		case !paid && (rec.Status == ordersaga.StatusPaid || restored != qty || payments != 0):
			t.Fatalf("round %d: MarkPaid refused (%v) but the order is %s, %d of %d restored, %d payments rows", round, payErr, rec.Status, restored, qty, payments)
		case paid:
			sold += qty
			wins["paid"]++
		default:
			wins["restored"]++
		}
		if s := stockOf(t, store, sku); s != start-sold {
			t.Fatalf("round %d: stock %d, want %d (%d sold)", round, s, start-sold, sold)
		}
	}
	checkI4(t, store)
	t.Logf("db %s: %d MarkPaid/compensation races in %v: paid first %d, restored first %d; never both",
		store.Dialect(), raceRounds, time.Since(begin).Round(time.Millisecond), wins["paid"], wins["restored"])
}
