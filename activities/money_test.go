package activities_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

var (
	moneyDay1 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	moneyDay2 = moneyDay1.AddDate(0, 0, 1)
)

// moneyRow is a hand-made payments row.
type moneyRow struct {
	event, order string
	cents        int64
	currency     string
	result       ordersaga.PaymentResult
	at           time.Time
	refunded     bool
	sent         bool
}

func putPayments(t testing.TB, store *sqlstore.Store, rows ...moneyRow) {
	t.Helper()
	for _, r := range rows {
		var refundedAt, sentAt *time.Time
		if r.refunded {
			refundedAt = &r.at
		}
		if r.sent {
			s := r.at.Add(time.Second)
			sentAt = &s
		}
		if err := store.DB().Exec(`INSERT INTO payments (event_id, order_id, amount_cents, currency, result, refunded_at,
			refund_sent_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.event, r.order, r.cents, r.currency, string(r.result), refundedAt, sentAt, r.at).Error; err != nil {
			t.Fatalf("payment %s: %v", r.event, err)
		}
	}
}

// putOrder writes an orders row; a PAID one is paid at `at` by event.
func putOrder(t testing.TB, store *sqlstore.Store, id string, status ordersaga.Status, cents int64, currency, event string, at time.Time) {
	t.Helper()
	var paidAt *time.Time
	var ev *string
	if status == ordersaga.StatusPaid {
		paidAt, ev = &at, &event
	}
	if err := store.DB().Exec(`INSERT INTO orders (order_id, user_id, status, amount_cents, currency, paid_at, payment_event_id,
		created_at, updated_at) VALUES (?, 'u', ?, ?, ?, ?, ?, ?, ?)`,
		id, string(status), cents, currency, paidAt, ev, at, at).Error; err != nil {
		t.Fatalf("order %s: %v", id, err)
	}
}

// The per-day summary on hand-made rows: applied, refunded and rejected_amount (with its refund), two days,
// two currencies, rows on the days' edges and outside the range.
func TestMoneyOnDays_SumsEachDayPerCurrency(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	h := time.Hour
	putPayments(t, store,
		moneyRow{"e1", "o1", 1000, "CNY", ordersaga.PaymentApplied, moneyDay1, false, false},
		moneyRow{"e2", "o2", 500, "CNY", ordersaga.PaymentRefunded, moneyDay1.Add(h), true, false},
		moneyRow{"e3", "o3", 999, "CNY", ordersaga.PaymentRejectedAmount, moneyDay1.Add(2 * h), true, false},
		moneyRow{"e4", "o4", 200, "EUR", ordersaga.PaymentApplied, moneyDay2.Add(-time.Microsecond), false, false},
		moneyRow{"e5", "o5", 300, "CNY", ordersaga.PaymentApplied, moneyDay2, false, false},
		moneyRow{"e6", "o6", 299, "CNY", ordersaga.PaymentRejectedAmount, moneyDay2.Add(h), true, true},
		moneyRow{"e7", "o7", 700, "EUR", ordersaga.PaymentRefunded, moneyDay2.Add(23 * h), true, false},
		moneyRow{"e0", "o0", 5, "CNY", ordersaga.PaymentApplied, moneyDay1.Add(-time.Microsecond), false, false},
		moneyRow{"e8", "o8", 5, "CNY", ordersaga.PaymentApplied, moneyDay2.AddDate(0, 0, 1), false, false},
	)
	got, err := store.MoneyOnDays(t.Context(), moneyDay1.Add(5*h), moneyDay2)
	if err != nil {
		t.Fatal(err)
	}
	want := []sqlstore.MoneyTotals{
		{Day: "2026-03-01", Currency: "CNY", Captured: "2499", Applied: "1000", Refunded: "1499", Unsettled: "0", CapturedN: 3, AppliedN: 1, RefundedN: 2, RefundsUnsent: 2},
		{Day: "2026-03-01", Currency: "EUR", Captured: "200", Applied: "200", Refunded: "0", Unsettled: "0", CapturedN: 1, AppliedN: 1},
		{Day: "2026-03-02", Currency: "CNY", Captured: "599", Applied: "300", Refunded: "299", Unsettled: "0", CapturedN: 2, AppliedN: 1, RefundedN: 1},
		{Day: "2026-03-02", Currency: "EUR", Captured: "700", Applied: "0", Refunded: "700", Unsettled: "0", CapturedN: 1, RefundedN: 1, RefundsUnsent: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("MoneyOnDays =\n%+v\nwant\n%+v", got, want)
	}
	for _, d := range got {
		if !d.Balanced() {
			t.Errorf("%s %s not balanced: %+v", d.Day, d.Currency, d)
		}
	}

	page1, err := store.PaymentsOnDays(t.Context(), moneyDay1, moneyDay2, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	page2, err := store.PaymentsOnDays(t.Context(), moneyDay1, moneyDay2, page1[len(page1)-1].ID, 4)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, p := range append(page1, page2...) {
		events = append(events, p.EventID)
	}
	if want := []string{"e1", "e2", "e3", "e4", "e5", "e6", "e7"}; !slices.Equal(events, want) {
		t.Errorf("payments on the two days, two pages of 4 = %v, want %v", events, want)
	}
	e6 := page2[1]
	if e6.EventID != "e6" || !e6.Refund() || e6.Kept() || e6.RefundSentAt == nil || !e6.CreatedAt.Equal(moneyDay2.Add(h)) {
		t.Errorf("e6 as read: %+v", e6)
	}
	if _, err := store.MoneyOnDays(t.Context(), moneyDay2, moneyDay1); err == nil {
		t.Error("MoneyOnDays of a range that ends before it starts: no error")
	}
}

func TestPaymentsOfOrder_ListsEveryEventOfTheOrder(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	putPayments(t, store,
		moneyRow{"wrong", "o1", 999, "CNY", ordersaga.PaymentRejectedAmount, moneyDay1, true, false},
		moneyRow{"other", "o2", 1000, "CNY", ordersaga.PaymentApplied, moneyDay1, false, false},
		moneyRow{"right", "o1", 1000, "CNY", ordersaga.PaymentApplied, moneyDay1.Add(time.Second), false, false},
	)
	got, err := store.PaymentsOfOrder(t.Context(), "o1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].EventID != "wrong" || !got[0].Refund() || got[1].EventID != "right" || !got[1].Kept() {
		t.Errorf("payments of o1 = %+v, want the refunded wrong amount, then the applied one", got)
	}
}

// consistentDay is a day whose money holds: a PAID order with its payment, a late payment refunded, a
// wrong amount refunded before the right one, in two currencies.
func consistentDay(t testing.TB, store *sqlstore.Store, day time.Time) {
	t.Helper()
	putOrder(t, store, "ok-paid", ordersaga.StatusPaid, 1000, "CNY", "ok-e1", day.Add(time.Hour))
	putOrder(t, store, "ok-expired", ordersaga.StatusExpired, 500, "CNY", "", day)
	putOrder(t, store, "ok-eur", ordersaga.StatusPaid, 200, "EUR", "ok-e4", day.Add(time.Hour))
	putPayments(t, store,
		moneyRow{"ok-e0", "ok-paid", 999, "CNY", ordersaga.PaymentRejectedAmount, day.Add(time.Minute), true, false},
		moneyRow{"ok-e1", "ok-paid", 1000, "CNY", ordersaga.PaymentApplied, day.Add(time.Hour), false, false},
		moneyRow{"ok-e2", "ok-expired", 500, "CNY", ordersaga.PaymentRefunded, day.Add(2 * time.Hour), true, true},
		moneyRow{"ok-e4", "ok-eur", 200, "EUR", ordersaga.PaymentApplied, day.Add(time.Hour), false, false},
	)
}

func TestCheckMoneyDay_FindsNothingOnConsistentData(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	consistentDay(t, store, moneyDay1)
	totals, found, err := store.CheckMoneyDay(t.Context(), moneyDay1.Add(12*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("findings on consistent data: %+v", found)
	}
	if len(totals) != 2 || totals[0].Captured != "2499" || totals[0].Applied != "1000" || totals[0].Refunded != "1499" {
		t.Errorf("totals = %+v", totals)
	}
}

// Each planted discrepancy is found, and recorded once however many runs see it.
func TestCheckMoneyDay_FindsPlantedDiscrepanciesAndRecordsThemOnce(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	ctx := t.Context()
	consistentDay(t, store, moneyDay1)
	at := moneyDay1.Add(3 * time.Hour)
	// bad-e1: an applied payment on an order that is not PAID; bad-e2: a second applied payment on a PAID
	// order (charged twice); bad-e3: a captured payment neither applied nor refunded; bad-nopay: a PAID
	// order without its applied payment; bad-e5: an applied payment of another amount than its order's.
	putOrder(t, store, "bad-expired", ordersaga.StatusExpired, 300, "CNY", "", at)
	putOrder(t, store, "bad-open", ordersaga.StatusAwaitingPayment, 400, "CNY", "", at)
	putOrder(t, store, "bad-nopay", ordersaga.StatusPaid, 600, "CNY", "bad-e4", at)
	putOrder(t, store, "bad-amount", ordersaga.StatusPaid, 700, "CNY", "bad-e5", at)
	putPayments(t, store,
		moneyRow{"bad-e1", "bad-expired", 300, "CNY", ordersaga.PaymentApplied, at, false, false},
		moneyRow{"bad-e2", "ok-paid", 1000, "CNY", ordersaga.PaymentApplied, at, false, false},
		moneyRow{"bad-e3", "bad-open", 399, "CNY", ordersaga.PaymentRejectedAmount, at, false, false},
		moneyRow{"bad-e5", "bad-amount", 699, "CNY", ordersaga.PaymentApplied, at, false, false},
		// Another day's discrepancy is not this day's.
		moneyRow{"bad-e6", "bad-open", 5, "CNY", ordersaga.PaymentRefunded, moneyDay2, false, false},
	)

	_, found, err := store.CheckMoneyDay(ctx, moneyDay1)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ kind, subject string }
	var got []key
	for _, f := range found {
		got = append(got, key{f.Kind, f.Subject})
	}
	want := []key{
		{sqlstore.KindMoneyUnbalanced, "2026-03-01/CNY"},
		{sqlstore.KindPaymentUnsettled, "bad-e3"},
		{sqlstore.KindAppliedNotPaid, "bad-e1"},
		{sqlstore.KindAppliedNotPaid, "bad-e2"},
		{sqlstore.KindAppliedAmount, "bad-e5"},
		{sqlstore.KindPaidWithoutPayment, "bad-nopay"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings = %v\nwant %v\n%+v", got, want, found)
	}
	if u := found[0]; *u.Expected != 1000+999+500+300+1000+399+699 || *u.Observed != *u.Expected-399 {
		t.Errorf("unbalanced day: expected %d observed %d (%s)", *u.Expected, *u.Observed, u.Detail)
	}

	first, err := store.RecordMoneyFindings(ctx, "run-1", found)
	if err != nil {
		t.Fatal(err)
	}
	again, err := store.RecordMoneyFindings(ctx, "run-2", found)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != len(found) || len(again) != 0 {
		t.Errorf("recorded %d then %d findings, want %d then 0", len(first), len(again), len(found))
	}
	rows, err := store.MoneyAnomalies(ctx, "2026-03-01")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(found) {
		t.Fatalf("%d money_anomalies rows, want %d: %+v", len(rows), len(found), rows)
	}
	for i, r := range rows {
		if r.RunID != "run-1" || r.MoneyFinding.Kind != found[i].Kind || r.Subject != found[i].Subject || r.Detail != found[i].Detail {
			t.Errorf("row %d = %+v, want %+v from run-1", i, r, found[i])
		}
	}
	if rows[5].OrderID != "bad-nopay" || rows[5].EventID != "bad-e4" || *rows[5].Expected != 600 {
		t.Errorf("paid without payment row = %+v", rows[5])
	}
}

// The activity checks today, records each finding once over two runs, and sets the metrics.
func TestReconcileMoney_RecordsOnceAndExportsTheFindings(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	now := time.Now().UTC()
	putOrder(t, store, "m-open", ordersaga.StatusAwaitingPayment, 400, "CNY", "", now)
	putPayments(t, store,
		moneyRow{"m-e1", "m-open", 400, "CNY", ordersaga.PaymentApplied, now, false, false},
		moneyRow{"m-e2", "m-open", 399, "CNY", ordersaga.PaymentRejectedAmount, now, true, false},
	)
	reg := prometheus.NewRegistry()
	m, err := reconcile.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := &activities.Activities{Store: store, Metrics: m}
	env.RegisterActivity(acts)
	run := func(id string) activities.MoneySummary {
		t.Helper()
		v, err := env.ExecuteActivity(acts.ReconcileMoney, activities.ReconcileMoneyInput{RunID: id, Days: 2}) // 2: a run across midnight still sees today's rows
		if err != nil {
			t.Fatal(err)
		}
		var s activities.MoneySummary
		if err := v.Get(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, second := run("r1"), run("r2")
	if first.Findings != 1 || first.Recorded != 1 || first.ByKind[sqlstore.KindAppliedNotPaid] != 1 || first.RefundsUnsent != 1 {
		t.Errorf("first run: %+v", first)
	}
	if second.Findings != 1 || second.Recorded != 0 {
		t.Errorf("second run: %+v; want the finding seen again and not recorded", second)
	}
	if len(first.Days) != 1 || first.Days[0].Captured != "799" || first.Days[0].Applied != "400" || first.Days[0].Refunded != "399" {
		t.Errorf("days = %+v", first.Days)
	}
	for _, c := range []struct {
		name, kind string
		want       float64
	}{
		{"ordersaga_reconcile_money_discrepancies", sqlstore.KindAppliedNotPaid, 1},
		{"ordersaga_reconcile_money_discrepancies", sqlstore.KindPaidWithoutPayment, 0},
		{"ordersaga_reconcile_money_anomalies_total", sqlstore.KindAppliedNotPaid, 1},
		{"ordersaga_refunds_unsent", "", 1},
	} {
		if got := testenv.MustMetric(t, reg, c.name, "kind", c.kind); got != c.want {
			t.Errorf("%s{kind=%q} = %v, want %v", c.name, c.kind, got, c.want)
		}
	}
}

// The outbox lists the refunds not yet sent, oldest first and paged, and marks one sent idempotently.
func TestRefundOutbox_ListsAndMarksSentOnce(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	ctx := t.Context()
	putPayments(t, store,
		moneyRow{"r1", "o1", 100, "CNY", ordersaga.PaymentRefunded, moneyDay1, true, false},
		moneyRow{"a1", "o2", 100, "CNY", ordersaga.PaymentApplied, moneyDay1, false, false},
		moneyRow{"r2", "o3", 99, "CNY", ordersaga.PaymentRejectedAmount, moneyDay1, true, false},
		moneyRow{"r3", "o4", 100, "CNY", ordersaga.PaymentRefunded, moneyDay1, true, true},
		moneyRow{"r4", "o5", 100, "EUR", ordersaga.PaymentRefunded, moneyDay2, true, false},
	)
	events := func(ps []sqlstore.PaymentEntry) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.EventID)
		}
		return out
	}
	page1, err := store.PendingRefunds(ctx, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	page2, err := store.PendingRefunds(ctx, page1[len(page1)-1].ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := events(append(page1, page2...)); !slices.Equal(got, []string{"r1", "r2", "r4"}) {
		t.Errorf("pending refunds = %v, want r1 r2 r4", got)
	}

	first, err := store.MarkRefundSent(ctx, "r2", "prov-77")
	if err != nil {
		t.Fatal(err)
	}
	if first.RefundSentAt == nil || first.RefundRef != "prov-77" {
		t.Errorf("marked: %+v", first)
	}
	again, err := store.MarkRefundSent(ctx, "r2", "prov-78")
	if err != nil {
		t.Fatal(err)
	}
	if again.RefundSentAt == nil || !again.RefundSentAt.Equal(*first.RefundSentAt) || again.RefundRef != "prov-77" {
		t.Errorf("marked again: %+v; want the first mark unchanged (%v, prov-77)", again, first.RefundSentAt)
	}
	if _, err := store.MarkRefundSent(ctx, "a1", ""); !errors.Is(err, sqlstore.ErrNotARefund) {
		t.Errorf("mark an applied payment: %v, want ErrNotARefund", err)
	}
	if _, err := store.MarkRefundSent(ctx, "nope", ""); !errors.Is(err, ordersaga.ErrNotFound) {
		t.Errorf("mark an unknown event: %v, want ErrNotFound", err)
	}
	left, err := store.PendingRefunds(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := events(left); !slices.Equal(got, []string{"r1", "r4"}) {
		t.Errorf("pending after marking r2 = %v, want r1 r4", got)
	}
	if n, err := store.CountPendingRefunds(ctx); err != nil || n != 2 {
		t.Errorf("CountPendingRefunds = %d, %v; want 2", n, err)
	}
}

// The activity passes the run's threshold down: a refund recorded an hour ago and not sent is refund_unsent
// under a 15-minute threshold; an input without one (a run started by the release before) reports refusals
// only.
func TestReconcileMoney_RefundUnsentAfterComesFromTheInput(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	hourAgo := time.Now().UTC().Add(-time.Hour)
	putPayments(t, store, moneyRow{"u-e1", "u-o1", 300, "EUR", ordersaga.PaymentRefunded, hourAgo, true, false})
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts := &activities.Activities{Store: store}
	env.RegisterActivity(acts)
	for _, c := range []struct {
		after time.Duration
		want  int
	}{{0, 0}, {15 * time.Minute, 1}, {2 * time.Hour, 0}} {
		v, err := env.ExecuteActivity(acts.ReconcileMoney, activities.ReconcileMoneyInput{RunID: "u-run", Days: 1, RefundUnsentAfter: c.after})
		if err != nil {
			t.Fatal(err)
		}
		var s activities.MoneySummary
		if err := v.Get(&s); err != nil {
			t.Fatal(err)
		}
		if s.ByKind[sqlstore.KindRefundUnsent] != c.want || s.RefundsUnsent != 1 {
			t.Errorf("RefundUnsentAfter %s: %+v; want %d refund_unsent finding(s) of the 1 refund unsent", c.after, s, c.want)
		}
	}
}
