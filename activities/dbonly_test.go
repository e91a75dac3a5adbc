package activities_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// dbOnlyEnv is one SKU with its stock loaded in Redis, the activities on that Redis, and the same activities
// on a Redis that cannot be reached (the fallback on), for the reservations Redis could not serve.
type dbOnlyEnv struct {
	store *sqlstore.Store
	rs    *redisstock.Store
	up    *activities.Activities // Redis answers
	down  *activities.Activities // Redis unreachable, DBFallback on
	sku   string
	stock int64
}

func newDBOnlyEnv(t *testing.T, sku string, stock int64) *dbOnlyEnv {
	t.Helper()
	store := testenv.MustOpenStore(t)
	rs := testenv.MustOpenRedis(t)
	if _, err := reconcile.SetStock(t.Context(), store, rs, sqlstore.InventorySpec{SKU: sku, Stock: stock, PriceCents: 100}); err != nil {
		t.Fatal(err)
	}
	return &dbOnlyEnv{
		store: store, rs: rs, sku: sku, stock: stock,
		up:   &activities.Activities{Redis: rs, Store: store, DBFallback: true},
		down: &activities.Activities{Redis: testenv.UnreachableRedis(t), Store: store, DBFallback: true},
	}
}

func (e *dbOnlyEnv) run(t *testing.T, acts *activities.Activities, fn any, in any, out any) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	aenv := suite.NewTestActivityEnvironment()
	aenv.RegisterActivity(acts)
	v, err := aenv.ExecuteActivity(fn, in)
	if err != nil {
		t.Fatalf("%T: %v", in, err)
	}
	if out != nil {
		if err := v.Get(out); err != nil {
			t.Fatal(err)
		}
	}
}

// placeInDB reserves an order's line with Redis unreachable (database-only) and deducts it, as the workflow
// does on the fallback path.
func (e *dbOnlyEnv) placeInDB(t *testing.T, order string, qty int64) {
	t.Helper()
	var out ordersaga.ReserveOutcome
	e.run(t, e.down, e.down.ReserveLine, activities.LineInput{OrderID: order, SKU: e.sku, Qty: qty}, &out)
	if out != ordersaga.ReservedInDB {
		t.Fatalf("reserve with Redis down = %q, want %q", out, ordersaga.ReservedInDB)
	}
	e.deduct(t, order, qty)
}

func (e *dbOnlyEnv) deduct(t *testing.T, order string, qty int64) {
	t.Helper()
	e.deductWith(t, e.up, e.deductInput(order, qty))
}

func (e *dbOnlyEnv) deductInput(order string, qty int64) activities.DeductInput {
	return activities.DeductInput{DeductInput: ordersaga.DeductInput{OrderID: order, UserID: "u", Currency: "CNY",
		PayBy: time.Now().Add(time.Hour), Lines: []ordersaga.Line{{SKU: e.sku, Qty: qty}}}}
}

func (e *dbOnlyEnv) deductWith(t *testing.T, acts *activities.Activities, in activities.DeductInput) ordersaga.DeductResult {
	t.Helper()
	var res ordersaga.DeductResult
	e.run(t, acts, acts.DeductOrder, in, &res)
	return res
}

// marker is the order's Redis marker of the SKU ("H:<qty>" held, "C:<qty>" confirmed; "" none).
func (e *dbOnlyEnv) marker(t *testing.T, order string) string {
	t.Helper()
	m, err := e.rs.Client().Get(t.Context(), e.rs.MarkerKey(e.sku, order)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return m
}

// placeInRedis reserves an order's line in Redis, deducts it and, when confirm, confirms it: the normal path.
func (e *dbOnlyEnv) placeInRedis(t *testing.T, order string, qty int64, confirm bool) {
	t.Helper()
	var out ordersaga.ReserveOutcome
	e.run(t, e.up, e.up.ReserveLine, activities.LineInput{OrderID: order, SKU: e.sku, Qty: qty}, &out)
	e.deduct(t, order, qty)
	if confirm {
		e.run(t, e.up, e.up.ConfirmLines, activities.ConfirmInput{OrderID: order, SKUs: []string{e.sku}}, nil)
	}
}

// pay applies a payment of the order's amount (the SKU's price is 100 cents).
func (e *dbOnlyEnv) pay(t *testing.T, order string, qty int64) {
	t.Helper()
	if err := e.store.MarkPaid(t.Context(), ordersaga.PaymentRecord{EventID: "evt-" + order, OrderID: order,
		AmountCents: 100 * qty, Currency: "CNY", Result: ordersaga.PaymentApplied}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// expire compensates an order the way the workflow does once Redis answers again: the DB restore, then the
// Redis release.
func (e *dbOnlyEnv) expire(t *testing.T, order string, qty int64) {
	t.Helper()
	var restored []ordersaga.RestoreLine
	e.run(t, e.up, e.up.RestoreOrder, activities.RestoreInput{OrderID: order, Lines: []ordersaga.Line{{SKU: e.sku, Qty: qty}}}, &restored)
	var rel ordersaga.ReleaseOutcome
	e.run(t, e.up, e.up.ReleaseLine, activities.LineInput{OrderID: order, SKU: e.sku, Qty: qty}, &rel)
}

func (e *dbOnlyEnv) reconcile(t *testing.T) activities.ReconcileSummary {
	t.Helper()
	return e.reconcileAfter(t, time.Hour)
}

// reconcileAfter reconciles the SKU, acting on holds and open orders older than grace.
func (e *dbOnlyEnv) reconcileAfter(t *testing.T, grace time.Duration) activities.ReconcileSummary {
	t.Helper()
	rec := &reconcile.Reconciler{Redis: e.rs, Store: e.store, Grace: grace, RunID: "dbonly"}
	sum, _, err := rec.SKU(t.Context(), e.sku, sqlstore.ResyncClear)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// wantInLine fails unless Redis promises exactly what the database holds (no hold is open in these tests).
func (e *dbOnlyEnv) wantInLine(t *testing.T, when string, dbStock int64) {
	t.Helper()
	v, err := reconcile.ReadStock(t.Context(), e.store, e.rs, e.sku)
	if err != nil {
		t.Fatal(err)
	}
	if v.DBStock != dbStock {
		t.Errorf("%s: db stock %d, want %d", when, v.DBStock, dbStock)
	}
	if v.RedisAvailable == nil || *v.RedisAvailable != v.DBStock-v.Holds {
		t.Errorf("%s: redis available %v, db stock %d, holds %d: drift", when, deref(v.RedisAvailable), v.DBStock, v.Holds)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A reservation made through the database alone while Redis was unreachable, then a re-sync of Redis, then
// the order's expiry: the re-sync counted the order's units as taken, so the release must give them back.
// Before, the release found no marker, wrote a tombstone and gave nothing: Redis stayed q units short of the
// database (sold out on real units) until the next reconciliation.
func TestDBOnlyReservation_ResyncThenExpiry(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-1", 10)
	e.placeInDB(t, "o-dbo-1", 3)
	e.reconcile(t)
	e.wantInLine(t, "after the re-sync", 7)
	e.expire(t, "o-dbo-1", 3)
	e.wantInLine(t, "after the expiry", 10)
	if sum := e.reconcile(t); sum.Drifted != 0 {
		t.Errorf("the reconciliation after the expiry found drift: %s", sum)
	}
}

// The other order of events: the order expires before any re-sync. Redis never counted its units, so its
// release gives nothing back, and the re-sync finds Redis in line.
func TestDBOnlyReservation_ExpiryThenResync(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-2", 10)
	e.placeInDB(t, "o-dbo-2", 3)
	e.expire(t, "o-dbo-2", 3)
	e.wantInLine(t, "after the expiry", 10)
	if sum := e.reconcile(t); sum.Drifted != 0 {
		t.Errorf("the re-sync after the expiry found drift: %s", sum)
	}
	e.wantInLine(t, "after the re-sync", 10)
}

// A database-only order that is paid keeps its units sold on both sides across the re-sync, and a second
// re-sync finds nothing to do.
func TestDBOnlyReservation_ResyncThenPaid(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-3", 10)
	e.placeInDB(t, "o-dbo-3", 4)
	e.reconcile(t)
	e.pay(t, "o-dbo-3", 4)
	e.wantInLine(t, "after the payment", 6)
	if sum := e.reconcile(t); sum.Drifted != 0 {
		t.Errorf("the second re-sync found drift: %s", sum)
	}
}

// Redis lost its data (a restart without persistence) while an order was awaiting payment: the cold load
// counts the order's units as taken (the database's deduct stands), so when the order expires its release
// must give them back. Before, the release found no marker (lost with the data) and gave nothing back.
func TestColdLoad_OpenOrderExpiresAfterRedisLostItsData(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-4", 10)
	e.placeInRedis(t, "o-dbo-4", 2, true)
	e.wantInLine(t, "after the order", 8)

	// Redis loses every key of the SKU; the next reserve of another order loads it from the database.
	rdb := e.rs.Client()
	for _, k := range []string{e.rs.AvailKey(e.sku), e.rs.HoldsKey(e.sku), e.rs.VersionKey(e.sku), e.rs.MarkerKey(e.sku, "o-dbo-4")} {
		if err := rdb.Del(context.Background(), k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	e.placeInRedis(t, "o-dbo-4b", 1, true)
	e.wantInLine(t, "after the cold load", 7)

	e.expire(t, "o-dbo-4", 2)
	e.wantInLine(t, "after the expiry", 9)
}

// The re-sync mark is noted as made only once its row committed: a failed write leaves it due, so the next
// database-only reservation of the SKU writes it. Before, the mark was noted before the write, and for the
// next 10 s reservations went to the database alone with no redis_down row at all.
func TestFallbackMark_AFailedWriteLeavesTheMarkDue(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-5", 10)
	db := e.store.DB().WithContext(t.Context())
	if err := db.Exec("ALTER TABLE stock_anomalies RENAME TO stock_anomalies_away").Error; err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	aenv := suite.NewTestActivityEnvironment()
	aenv.RegisterActivity(e.down)
	if _, err := aenv.ExecuteActivity(e.down.ReserveLine, activities.LineInput{OrderID: "o-dbo-5a", SKU: e.sku, Qty: 1}); err == nil {
		t.Fatal("a database-only reservation succeeded though its re-sync mark could not be written")
	}
	if err := db.Exec("ALTER TABLE stock_anomalies_away RENAME TO stock_anomalies").Error; err != nil {
		t.Fatal(err)
	}
	e.placeInDB(t, "o-dbo-5b", 1)
	rows, err := e.store.Anomalies(t.Context(), sqlstore.FallbackRunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Kind != sqlstore.KindRedisDown || rows[0].OrderID != "o-dbo-5b" {
		t.Errorf("re-sync marks = %+v, want the redis_down row of o-dbo-5b", rows)
	}
}

// Reconciliation clears a re-sync mark only once no database-only reservation of the SKU can still be on its
// way to its deduct. Order A reserves through the database and deducts; order B reserves through the
// database too (no new mark within MarkEvery) but its deduct is late. The run 30 s after the mark re-syncs
// the counter and keeps the mark; B's deduct lands; the run after ResyncSettle counts B as a re-sync and
// clears the mark; B's expiry then gives its units back. Before, the first run cleared the mark and B's units
// came back as plain drift.
func TestResync_TheMarkStaysWhileAReservationMayBeInFlight(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-6", 10)
	var mu sync.Mutex
	now := time.Now().UTC()
	e.store.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	e.placeInDB(t, "o-dbo-6a", 2)
	var out ordersaga.ReserveOutcome
	e.run(t, e.down, e.down.ReserveLine, activities.LineInput{OrderID: "o-dbo-6b", SKU: e.sku, Qty: 3}, &out)
	if out != ordersaga.ReservedInDB {
		t.Fatalf("reserve of o-dbo-6b = %q, want %q", out, ordersaga.ReservedInDB)
	}

	run := func(id string) activities.ReconcileSummary {
		var res activities.ReconcileBatchResult
		e.run(t, e.up, e.up.ReconcileSKUs, activities.ReconcileBatchInput{RunID: id, Grace: time.Hour, Limit: 100}, &res)
		return res.Summary
	}
	resynced := func() int {
		rows, err := e.store.Anomalies(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			if r.SKU == e.sku && r.Action == sqlstore.ActionResynced {
				n++
			}
		}
		return n
	}

	advance(30 * time.Second)
	first := run("run-1")
	e.wantInLine(t, "after the first run", 8)
	if n := resynced(); n != 0 || first.Resynced != 0 {
		t.Fatalf("the run 30 s after the mark cleared it (%d resynced rows, summary %s): o-dbo-6b may still deduct", n, first)
	}

	e.deduct(t, "o-dbo-6b", 3) // the late deduct
	advance(reconcile.ResyncSettle)
	second := run("run-2")
	e.wantInLine(t, "after the second run", 5)
	if n := resynced(); n != 1 || second.Resynced != 1 {
		t.Errorf("the run after ResyncSettle: %d resynced rows (summary %s), want the mark cleared once", n, second)
	}
	rows, err := e.store.Anomalies(t.Context(), "run-2")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Action == sqlstore.ActionSetAvail && r.Kind != sqlstore.KindResync {
			t.Errorf("the late deduct was repaired as %q, want it counted as part of the re-sync", r.Kind)
		}
	}

	e.expire(t, "o-dbo-6b", 3)
	e.wantInLine(t, "after o-dbo-6b expired", 8)
}

// A process that reserved a SKU through the database re-syncs the SKU's counter on its first reserve once
// Redis answers again, instead of letting Redis promise those units until the next reconciliation.
func TestReserveLine_ResyncsWhenRedisAnswersAgain(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-7", 10)
	acts := &activities.Activities{Redis: e.down.Redis, Store: e.store, DBFallback: true}
	var out ordersaga.ReserveOutcome
	e.run(t, acts, acts.ReserveLine, activities.LineInput{OrderID: "o-dbo-7a", SKU: e.sku, Qty: 3}, &out)
	if out != ordersaga.ReservedInDB {
		t.Fatalf("reserve with Redis down = %q", out)
	}
	e.deduct(t, "o-dbo-7a", 3)
	time.Sleep(1100 * time.Millisecond) // the breaker closes

	acts.Redis = e.rs // Redis answers again
	e.run(t, acts, acts.ReserveLine, activities.LineInput{OrderID: "o-dbo-7b", SKU: e.sku, Qty: 1}, &out)
	if out != ordersaga.Reserved {
		t.Fatalf("reserve with Redis back = %q", out)
	}
	e.wantInLine(t, "after the first reserve with Redis back", 7)
	e.expire(t, "o-dbo-7a", 3)
	e.wantInLine(t, "after o-dbo-7a expired", 10)
}

// A later life of a PAID order's ID whose reserve failed compensates without a restore, so it never learns
// from the database that the units are sold: its release must still keep the paid order's confirmed hold
// (found by the spin model, -DSECOND_LIFE). Before, the release gave the PAID order's units back to Redis,
// which then promised a unit the database does not have.
func TestReleaseLine_KeepsAPaidOrdersUnitsWithoutBeingTold(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-8", 10)
	e.placeInRedis(t, "o-dbo-8", 2, true)
	e.pay(t, "o-dbo-8", 2)
	// The second life's compensation: no restore (its deduct never started), then the release.
	var rel ordersaga.ReleaseOutcome
	e.run(t, e.up, e.up.ReleaseLine, activities.LineInput{OrderID: "o-dbo-8", SKU: e.sku, Qty: 2}, &rel)
	if rel != ordersaga.KeptSold {
		t.Errorf("release of a PAID order's line = %q, want %q", rel, ordersaga.KeptSold)
	}
	e.wantInLine(t, "after the second life's release", 8)
}

// A PAID order whose confirm was lost still has its hold ('H') when a later life of its ID compensates: the
// database took those units, so the release confirms the hold instead of giving it back (found by the spin
// model, -DSECOND_LIFE). Before, the release in 'sold' mode gave an 'H' hold back.
func TestReleaseLine_ConfirmsTheLostConfirmOfAPaidOrder(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-9", 10)
	e.placeInRedis(t, "o-dbo-9", 2, false) // the confirm never comes
	e.pay(t, "o-dbo-9", 2)
	for _, told := range []bool{true, false} { // the restore said Sold, or the release reads it
		var rel ordersaga.ReleaseOutcome
		e.run(t, e.up, e.up.ReleaseLine, activities.LineInput{OrderID: "o-dbo-9", SKU: e.sku, Qty: 2, Sold: told}, &rel)
		if rel != ordersaga.KeptSold {
			t.Errorf("release (sold=%v) of a PAID order's held line = %q, want %q", told, rel, ordersaga.KeptSold)
		}
	}
	e.wantInLine(t, "after the release", 8)
	if m := e.marker(t, "o-dbo-9"); m != "C:2" {
		t.Errorf("marker = %q; want C:2 (confirmed)", m)
	}
}

// DeductOrder drops the holds it is given once the deduct committed (ConfirmInDeduct), and a Redis that cannot
// take the confirm does not fail the committed deduct: the hold is left to reconciliation.
func TestDeductOrder_ConfirmsTheHoldsItIsGiven(t *testing.T) {
	t.Parallel()
	e := newDBOnlyEnv(t, "DBO-10", 10)
	var out ordersaga.ReserveOutcome
	for _, order := range []string{"o-dbo-10a", "o-dbo-10b"} {
		e.run(t, e.up, e.up.ReserveLine, activities.LineInput{OrderID: order, SKU: e.sku, Qty: 2}, &out)
		if m := e.marker(t, order); m != "H:2" {
			t.Fatalf("%s: marker after the reserve = %q, want H:2", order, m)
		}
	}

	in := e.deductInput("o-dbo-10a", 2)
	in.ConfirmHolds = []string{e.sku}
	e.deductWith(t, e.up, in)
	if m := e.marker(t, "o-dbo-10a"); m != "C:2" {
		t.Errorf("marker after a deduct given the hold = %q, want C:2 (confirmed)", m)
	}
	again := e.deductWith(t, e.up, in) // a retry of the local activity
	if !again.AlreadyDone {
		t.Errorf("the retried deduct = %+v, want AlreadyDone", again)
	}
	if m := e.marker(t, "o-dbo-10a"); m != "C:2" {
		t.Errorf("marker after the retried deduct = %q, want C:2", m)
	}

	in = e.deductInput("o-dbo-10b", 2)
	in.ConfirmHolds = []string{e.sku}
	e.deductWith(t, e.down, in) // committed; Redis unreachable for the confirm
	if _, err := e.store.Order(t.Context(), "o-dbo-10b"); err != nil {
		t.Errorf("the deduct whose confirm failed did not record its order: %v", err)
	}
	if m := e.marker(t, "o-dbo-10b"); m != "H:2" {
		t.Errorf("marker after a confirm Redis could not take = %q, want H:2 (left to reconciliation)", m)
	}
	if sum := e.reconcileAfter(t, 0); sum.HoldsConfirmed != 1 || sum.DriftUnits != 0 {
		t.Errorf("reconciliation = %+v, want the hold left behind confirmed and no drift", sum)
	}
	if m := e.marker(t, "o-dbo-10b"); m != "C:2" {
		t.Errorf("marker after reconciliation = %q, want C:2", m)
	}
	e.wantInLine(t, "after reconciliation", 6)
}
