package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// outcome names what became of one deduct: deducted, again (AlreadyDone), compensated, sold out, limit,
// unknown SKU.
func outcome(res ordersaga.DeductResult, err error) string {
	var (
		so  *ordersaga.SoldOutError
		lim *ordersaga.LimitExceededError
		unk *ordersaga.UnknownSKUError
	)
	switch {
	case err == nil && res.AlreadyDone:
		return "again"
	case err == nil:
		return "deducted"
	case errors.Is(err, ordersaga.ErrCompensated):
		return "compensated"
	case errors.As(err, &so):
		return "sold out"
	case errors.As(err, &lim):
		return fmt.Sprintf("limit %d held %d", lim.Limit, lim.Held)
	case errors.As(err, &unk):
		return "unknown " + unk.SKU
	}
	return err.Error()
}

// runBatch runs the deducts as one batch and checks each order's outcome and the batch counters it moved.
func runBatch(t *testing.T, store *sqlstore.Store, want []string, wantStats sqlstore.DeductBatchStats, ins ...ordersaga.DeductInput) []ordersaga.DeductResult {
	t.Helper()
	before := store.DeductBatchStats()
	res, errs := store.DeductAsOneBatch(t.Context(), ins...)
	for i := range ins {
		if got := outcome(res[i], errs[i]); got != want[i] {
			t.Errorf("order %d (%s): %s, want %s", i, ins[i].OrderID, got, want[i])
		}
	}
	after := store.DeductBatchStats()
	got := sqlstore.DeductBatchStats{Batches: after.Batches - before.Batches, Batched: after.Batched - before.Batched,
		Fallbacks: after.Fallbacks - before.Fallbacks, Alone: after.Alone - before.Alone}
	if got != wantStats {
		t.Errorf("batch counters moved by %+v, want %+v", got, wantStats)
	}
	checkI4(t, store)
	return res
}

var (
	oneBatch = func(n int64) sqlstore.DeductBatchStats { return sqlstore.DeductBatchStats{Batches: 1, Batched: n} }
	fellBack = sqlstore.DeductBatchStats{Fallbacks: 1}
)

func TestGroupDeduct_ABatchIsOneTransactionWithARowPerOrder(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "H", Stock: 100, Price: 250})
	var ins []ordersaga.DeductInput
	want := make([]string, 10)
	for i := range 10 {
		ins = append(ins, deductIn(fmt.Sprintf("o%d", i), line("H", int64(i%3+1))))
		want[i] = "deducted"
	}
	res := runBatch(t, store, want, oneBatch(10), ins...)
	var total int64
	for i, in := range ins {
		qty := in.Lines[0].Qty
		total += qty
		if res[i].AmountCents != 250*qty || res[i].Lines[0] != (ordersaga.Line{SKU: "H", Qty: qty, UnitPriceCents: 250}) {
			t.Errorf("%s: %+v, want %d x 250", in.OrderID, res[i], qty)
		}
		checkLedger(t, store, in.OrderID, ledgerRow{in.OrderID, "H", sqlstore.OpDeduct, qty})
		rec, err := store.Order(t.Context(), in.OrderID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != ordersaga.StatusAwaitingPayment || rec.AmountCents != 250*qty || rec.UserID != in.UserID ||
			rec.PayBy == nil || !rec.PayBy.Equal(payBy) || len(rec.Lines) != 1 || rec.Lines[0] != res[i].Lines[0] {
			t.Errorf("order %s = %+v, want AWAITING_PAYMENT with its line", in.OrderID, rec)
		}
	}
	checkStock(t, store, map[string]int64{"H": 100 - total})
}

// A retried deduct in a batch (its first attempt committed) answers AlreadyDone and takes nothing again;
// the others of the batch are deducted together. The same order twice in one batch is deducted once.
func TestGroupDeduct_RetryAndDuplicateInsideABatch(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "H", Stock: 10, Price: 100})
	if _, err := store.Deduct(t.Context(), deductIn("o1", line("H", 2))); err != nil {
		t.Fatal(err)
	}
	res := runBatch(t, store, []string{"deducted", "again", "deducted", "again"}, oneBatch(2),
		deductIn("o2", line("H", 1)), deductIn("o1", line("H", 2)), deductIn("o3", line("H", 1)), deductIn("o3", line("H", 1)))
	if res[1].AmountCents != 200 || res[3].AmountCents != 100 {
		t.Errorf("retries answered %+v and %+v, want the first attempts' amounts 200 and 100", res[1], res[3])
	}
	checkStock(t, store, map[string]int64{"H": 6})
	checkLedger(t, store, "o1", ledgerRow{"o1", "H", sqlstore.OpDeduct, 2})
	checkLedger(t, store, "o3", ledgerRow{"o3", "H", sqlstore.OpDeduct, 1})
}

// The hanging anomaly in a batch: an order compensated before its deduct (a RESTORE tombstone) is refused and
// takes nothing; one closed before its deduct (its record written as rejected) too. The others are deducted.
func TestGroupDeduct_CompensatedOrClosedFirstInsideABatch(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "H", Stock: 10, Price: 100})
	ctx := t.Context()
	if _, err := store.Restore(ctx, "o2", []ordersaga.Line{line("H", 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CloseOrder(ctx, ordersaga.OrderRecord{OrderID: "o4", UserID: "u-o4", Status: ordersaga.StatusRejected,
		Currency: "EUR", ClosedReason: "cancelled", Lines: []ordersaga.Line{line("H", 1)}}); err != nil {
		t.Fatal(err)
	}
	runBatch(t, store, []string{"deducted", "compensated", "deducted", "compensated"}, fellBack,
		deductIn("o1", line("H", 1)), deductIn("o2", line("H", 1)), deductIn("o3", line("H", 1)), deductIn("o4", line("H", 1)))
	checkStock(t, store, map[string]int64{"H": 8})
	checkLedger(t, store, "o2", ledgerRow{"o2", "H", sqlstore.OpRestore, 0})
	checkLedger(t, store, "o4")
	checkNoOrder(t, store, "o2")
}

// At the sold-out boundary the batch's orders get the units in arrival order, each as it would alone: a
// larger order that does not fit is sold out, a smaller one after it still gets the last unit.
func TestGroupDeduct_SoldOutBoundaryInArrivalOrder(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "H", Stock: 3, Price: 100})
	runBatch(t, store, []string{"deducted", "sold out", "deducted", "sold out"}, fellBack,
		deductIn("o1", line("H", 2)), deductIn("o2", line("H", 2)), deductIn("o3", line("H", 1)), deductIn("o4", line("H", 1)))
	checkStock(t, store, map[string]int64{"H": 0})
	checkNoOrder(t, store, "o2")
	checkNoOrder(t, store, "o4")
	checkLedger(t, store, "o2")

	// Out of stock: every order of the batch is sold out at once, nothing written.
	runBatch(t, store, []string{"sold out", "sold out"}, sqlstore.DeductBatchStats{},
		deductIn("o5", line("H", 1)), deductIn("o6", line("H", 1)))
	checkNoOrder(t, store, "o5")
	checkLedger(t, store, "o6")
}

// A batch that finds the SKU out of stock answers sold out only to the orders it ran: the retry of a deduct
// that took the last unit (its first answer lost) answers AlreadyDone, and an order compensated first answers
// as compensated, though the rest of their batch is sold out. Answered sold out, the winner's workflow would
// reject its order and give back the unit it bought.
func TestGroupDeduct_SoldOutBatchAnswersOnlyTheOrdersItRan(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "H", Stock: 1, Price: 100})
	ctx := t.Context()
	if _, err := store.Deduct(ctx, deductIn("won", line("H", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Restore(ctx, "gone", []ordersaga.Line{line("H", 1)}); err != nil {
		t.Fatal(err)
	}
	res := runBatch(t, store, []string{"again", "sold out", "compensated", "sold out"}, sqlstore.DeductBatchStats{},
		deductIn("won", line("H", 1)), deductIn("late", line("H", 1)), deductIn("gone", line("H", 1)), deductIn("later", line("H", 1)))
	if res[0].AmountCents != 100 || len(res[0].Lines) != 1 {
		t.Errorf("the winner's retry answered %+v, want its first attempt's line and 100 cents", res[0])
	}
	checkStock(t, store, map[string]int64{"H": 0})
	checkLedger(t, store, "won", ledgerRow{"won", "H", sqlstore.OpDeduct, 1})
	checkLedger(t, store, "late")
	checkNoOrder(t, store, "late")
}

// Each order keeps its own per-user check inside a batch: the user's third unit on a limit of 2 is refused
// alone, naming the limit and the 2 held; another user's order in the same batch is deducted.
func TestGroupDeduct_PerUserLimitInsideABatch(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	setLimit(t, store, "LIM", 10, 2)
	runBatch(t, store, []string{"deducted", "deducted", "deducted", "limit 2 held 2"}, fellBack,
		deductAs("bot", "o1", "LIM", 1), deductAs("bot", "o2", "LIM", 1), deductAs("ann", "o3", "LIM", 1), deductAs("bot", "o4", "LIM", 1))
	wantUnits(t, store, "LIM", map[string]int64{"ann": 1, "bot": 2})
	checkStock(t, store, map[string]int64{"LIM": 7})

	// Within the limit, users' units are counted together in one batch.
	runBatch(t, store, []string{"deducted", "deducted"}, oneBatch(2), deductAs("ann", "o5", "LIM", 1), deductAs("cy", "o6", "LIM", 2))
	wantUnits(t, store, "LIM", map[string]int64{"ann": 2, "bot": 2, "cy": 2})
}

func TestGroupDeduct_UnknownSKU(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	runBatch(t, store, []string{"unknown NOPE", "unknown NOPE"}, fellBack, deductIn("o1", line("NOPE", 1)), deductIn("o2", line("NOPE", 1)))
	checkLedger(t, store, "")
}

// Through Store.Deduct as the activities call it: 400 buyers of one unit of a hot SKU of 300 at once, each
// deduct retried by a second caller (a redelivered activity), 40 orders compensated before their deducts (each
// also called twice), and orders of two lines (the hot SKU and another) crossing them. Batches form; exactly
// 300 units are sold, each order deducted once, no deadlock; and every answer is the order's own: an order
// whose deduct stands is answered "deducted" once and AlreadyDone for its retry, never sold out (its workflow
// would reject it and give back the unit it bought); one that holds nothing is sold out; one compensated first
// is answered as compensated, every time.
func TestGroupDeduct_ConcurrentBuyersOfOneHotSKU(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: "HOT", Stock: 300, Price: 100}, testenv.Item{SKU: "AUX", Stock: 1000, Price: 10})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const buyers, multi, compensated = 400, 40, 40
	for i := range compensated {
		if _, err := store.Restore(ctx, fmt.Sprintf("c%03d", i), []ordersaga.Line{line("HOT", 1)}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string][]string{} // order -> its calls' outcomes
	)
	call := func(in ordersaga.DeductInput) {
		o := outcome(store.Deduct(ctx, in))
		mu.Lock()
		answers[in.OrderID] = append(answers[in.OrderID], o)
		mu.Unlock()
	}
	for i := range buyers {
		in := deductIn(fmt.Sprintf("b%03d", i), line("HOT", 1))
		wg.Go(func() { call(in) })
		wg.Go(func() { call(in) })
		if i%10 == 0 {
			c := deductIn(fmt.Sprintf("c%03d", i/10), line("HOT", 1))
			wg.Go(func() { call(c) })
			wg.Go(func() { call(c) })
		}
	}
	for i := range multi {
		wg.Go(func() { call(deductIn(fmt.Sprintf("m%03d", i), line("AUX", 1), line("HOT", 1))) })
	}
	wg.Wait()

	deducts := map[string]bool{} // order -> it has a DEDUCT row of HOT
	for _, r := range ledgerOf(t, store, "") {
		if r.SKU == "HOT" && r.Op == sqlstore.OpDeduct {
			deducts[r.OrderID] = true
		}
	}
	var wrong []string
	var deducted, again int
	for order, got := range answers {
		slices.Sort(got)
		want := "[sold out sold out]"
		switch {
		case order[0] == 'c':
			want = "[compensated compensated]"
		case order[0] == 'm' && deducts[order]:
			want = "[deducted]"
		case order[0] == 'm':
			want = "[sold out]"
		case deducts[order]:
			want = "[again deducted]"
		}
		if fmt.Sprint(got) != want {
			wrong = append(wrong, fmt.Sprintf("%s (deduct row %v): %v, want %s", order, deducts[order], got, want))
		}
		for _, o := range got {
			switch o {
			case "deducted":
				deducted++
			case "again":
				again++
			}
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Fatalf("%d orders answered other than what became of them, first %v", len(wrong), wrong[:min(5, len(wrong))])
	}
	if stockOf(t, store, "HOT") != 0 {
		t.Errorf("stock of HOT = %d, want 0 (%d demand for 300)", stockOf(t, store, "HOT"), buyers+multi)
	}
	if len(deducts) != 300 || deducted != 300 {
		t.Errorf("HOT DEDUCT rows %d, deducts answered %d; want 300 each", len(deducts), deducted)
	}
	checkI4(t, store)
	c, err := store.Conservation(ctx, "HOT")
	if err != nil {
		t.Fatal(err)
	}
	if c.Stock+c.Deducted-c.Restored != 300 {
		t.Errorf("I1: stock %d + deducted %d - restored %d, want 300", c.Stock, c.Deducted, c.Restored)
	}
	st := store.DeductBatchStats()
	if st.Batches == 0 || st.Batched < 2*st.Batches {
		t.Errorf("batch counters %+v: no group commit formed under %d concurrent deducts of one SKU", st, 2*buyers)
	}
	t.Logf("db=%s: %d deducted, %d retries answered AlreadyDone; %+v (mean batch %.1f)", store.Dialect(),
		deducted, again, st, float64(st.Batched)/float64(max(st.Batches, 1)))
}

// The hanging anomaly racing batches: 150 orders of one SKU, each deducted and compensated at the same time,
// all at once, so the deducts commit in batches while the restores land before, between and after them.
// Whichever wins for an order, the order ends with its units back: deducted then restored in full, or refused
// by its zero tombstone; never a deduct after its tombstone. The stock ends where it started.
func TestGroupDeduct_RestoresRacingBatches(t *testing.T) {
	t.Parallel()
	const sku, start, n = "RACE", 1000, 150
	store := testenv.MustOpenStoreWith(t, testenv.Item{SKU: sku, Stock: start, Price: 100})
	ctx := t.Context()
	dErr := make([]error, n)
	rOut := make([][]ordersaga.RestoreLine, n)
	rErr := make([]error, n)
	// At most 16 restores at a time. Restores of orders never deducted take gap locks, and on a ledger that is
	// nearly empty (a few wide gaps) 150 of them at once, each retried at once for ever on a lost deadlock,
	// deadlock with each other and with the deducts faster than they commit (MariaDB): with sequential order
	// IDs on either path, with hashed IDs on the group path (a batch's locking read holds the gaps of all its
	// orders at once) but not with a transaction per deduct. The activities' retry backs off; a real ledger has
	// narrow gaps.
	restoring := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := range n {
		order, lines := raceOrderID(i), []ordersaga.Line{line(sku, int64(1+i%3))}
		// A lost deadlock past the store's own retries (restores of orders never deducted take gap locks that
		// 300 transactions at once cross) is retried as the activity's retry policy does.
		wg.Go(func() {
			for _, dErr[i] = store.Deduct(ctx, deductIn(order, lines...)); errors.Is(dErr[i], sqlstore.ErrRetryTx); {
				_, dErr[i] = store.Deduct(ctx, deductIn(order, lines...))
			}
		})
		wg.Go(func() {
			restoring <- struct{}{}
			defer func() { <-restoring }()
			for rOut[i], rErr[i] = store.Restore(ctx, order, lines); errors.Is(rErr[i], sqlstore.ErrRetryTx); {
				rOut[i], rErr[i] = store.Restore(ctx, order, lines)
			}
		})
	}
	wg.Wait()
	var deductFirst, restoreFirst int
	for i := range n {
		order, qty := raceOrderID(i), int64(1+i%3)
		if rErr[i] != nil {
			t.Fatalf("%s: restore: %v", order, rErr[i])
		}
		got := ledgerOf(t, store, order)
		switch {
		case errors.Is(dErr[i], ordersaga.ErrCompensated):
			restoreFirst++
			if fmt.Sprint(got) != fmt.Sprint([]ledgerRow{{order, sku, sqlstore.OpRestore, 0}}) {
				t.Errorf("%s: deduct refused, ledger %v; want a zero tombstone only", order, got)
			}
		case dErr[i] == nil:
			deductFirst++
			if fmt.Sprint(got) != fmt.Sprint([]ledgerRow{{order, sku, sqlstore.OpDeduct, qty}, {order, sku, sqlstore.OpRestore, qty}}) {
				t.Errorf("%s: deduct landed, restore %+v, ledger %v; want %d back", order, rOut[i], got, qty)
			}
		default:
			t.Errorf("%s: deduct: %v, want success or ErrCompensated", order, dErr[i])
		}
	}
	if s := stockOf(t, store, sku); s != start {
		t.Errorf("stock %d after the races, want %d", s, start)
	}
	checkI4(t, store)
	t.Logf("db=%s: %d orders: deduct first %d, restore first %d; %+v", store.Dialect(), n, deductFirst, restoreFirst, store.DeductBatchStats())
}

// raceOrderID is the i-th order of a race, spread over the order ID index as the API's hashed IDs are.
func raceOrderID(i int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	return "r-" + hex.EncodeToString(sum[:8])
}
