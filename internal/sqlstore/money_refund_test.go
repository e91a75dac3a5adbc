package sqlstore_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// refundStart is when the refund tests' clock starts: rows are aged by moving the clock, never by sleeping.
var refundStart = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// refundStore is a store of the test's own whose clock the test moves.
func refundStore(t *testing.T) (*sqlstore.Store, *time.Time) {
	t.Helper()
	store := testenv.MustOpenStore(t)
	now := refundStart
	store.SetClock(func() time.Time { return now })
	return store, &now
}

// putRefund records a refund (the payment given back at once) at the store's clock.
func putRefund(t *testing.T, store *sqlstore.Store, event string, cents int64) {
	t.Helper()
	if _, _, err := store.RecordPayment(t.Context(), ordersaga.PaymentRecord{EventID: event, OrderID: "o-" + event,
		AmountCents: cents, Currency: "EUR", Result: ordersaga.PaymentRefunded}); err != nil {
		t.Fatalf("record refund %s: %v", event, err)
	}
}

// putApplied records a payment kept for its order (not a refund).
func putApplied(t *testing.T, store *sqlstore.Store, event string) {
	t.Helper()
	if _, _, err := store.RecordPayment(t.Context(), ordersaga.PaymentRecord{EventID: event, OrderID: "o-" + event,
		AmountCents: 100, Currency: "EUR", Result: ordersaga.PaymentApplied}); err != nil {
		t.Fatalf("record payment %s: %v", event, err)
	}
}

func mustRefuse(t *testing.T, store *sqlstore.Store, event, reason string) sqlstore.PaymentEntry {
	t.Helper()
	e, err := store.MarkRefundRefused(t.Context(), event, reason)
	if err != nil {
		t.Fatalf("MarkRefundRefused(%s): %v", event, err)
	}
	return e
}

func mustSend(t *testing.T, store *sqlstore.Store, event, ref string) sqlstore.PaymentEntry {
	t.Helper()
	e, err := store.MarkRefundSent(t.Context(), event, ref)
	if err != nil {
		t.Fatalf("MarkRefundSent(%s): %v", event, err)
	}
	return e
}

// outbox is the event IDs PendingRefunds pages, and what the two counts say.
func outbox(t *testing.T, store *sqlstore.Store) (events []string, pending, refused int64) {
	t.Helper()
	ctx := t.Context()
	rows, err := store.PendingRefunds(ctx, 0, 100)
	if err != nil {
		t.Fatalf("PendingRefunds: %v", err)
	}
	for _, r := range rows {
		events = append(events, r.EventID)
	}
	if pending, err = store.CountPendingRefunds(ctx); err != nil {
		t.Fatalf("CountPendingRefunds: %v", err)
	}
	if refused, err = store.CountRefusedRefunds(ctx); err != nil {
		t.Fatalf("CountRefusedRefunds: %v", err)
	}
	return events, pending, refused
}

func checkOutbox(t *testing.T, store *sqlstore.Store, wantEvents []string, wantRefused int64) {
	t.Helper()
	events, pending, refused := outbox(t, store)
	if !slices.Equal(events, wantEvents) || pending != int64(len(wantEvents)) || refused != wantRefused {
		t.Errorf("outbox %v (count %d), refused %d; want %v (count %d), refused %d", events, pending, refused,
			wantEvents, len(wantEvents), wantRefused)
	}
}

// A refund the provider refused for good leaves the outbox and the unsent count (the sender must not send it
// again), is counted as refused, and every read of the row shows the refusal.
func TestMarkRefundRefused_TheRefundLeavesTheOutbox(t *testing.T) {
	t.Parallel()
	store, now := refundStore(t)
	for _, e := range []string{"rf-1", "rf-2", "rf-3"} {
		putRefund(t, store, e, 500)
	}
	putApplied(t, store, "rf-kept")
	checkOutbox(t, store, []string{"rf-1", "rf-2", "rf-3"}, 0)

	*now = refundStart.Add(time.Minute)
	got := mustRefuse(t, store, "rf-2", "refused: card closed")
	if got.RefundRefusedAt == nil || !got.RefundRefusedAt.Equal(*now) || got.RefundRefusal != "refused: card closed" ||
		got.RefundSentAt != nil {
		t.Errorf("refused entry %+v: want refused at %s for %q, not sent", got, *now, "refused: card closed")
	}
	checkOutbox(t, store, []string{"rf-1", "rf-3"}, 1)

	rows, err := store.PaymentsOfOrder(t.Context(), "o-rf-2")
	if err != nil || len(rows) != 1 || rows[0].RefundRefusal != "refused: card closed" || rows[0].RefundRefusedAt == nil {
		t.Errorf("PaymentsOfOrder = %+v, %v; want the row with its refusal", rows, err)
	}
	totals, err := store.MoneyOnDays(t.Context(), refundStart, refundStart)
	if err != nil || len(totals) != 1 || totals[0].RefundsUnsent != 2 || totals[0].RefundedN != 3 {
		t.Errorf("MoneyOnDays = %+v, %v; want 3 refunded, 2 of them unsent (the refused one is not to send)", totals, err)
	}
}

// The first refusal stands: a second answer (a retried activity, a second sender) changes neither its time nor
// its reason. An empty reason is recorded as "refused"; a long or invalid one is cut to the column.
func TestMarkRefundRefused_TheFirstRefusalStands(t *testing.T) {
	t.Parallel()
	store, now := refundStore(t)
	putRefund(t, store, "rf-once", 500)
	putRefund(t, store, "rf-empty", 500)
	putRefund(t, store, "rf-long", 500)

	first := mustRefuse(t, store, "rf-once", "refused: first")
	*now = refundStart.Add(time.Hour)
	again := mustRefuse(t, store, "rf-once", "bad-request: second")
	if again.RefundRefusal != "refused: first" || again.RefundRefusedAt == nil || !again.RefundRefusedAt.Equal(*first.RefundRefusedAt) {
		t.Errorf("second refusal returned %+v; want the first (%q at %s)", again, "refused: first", first.RefundRefusedAt)
	}

	if e := mustRefuse(t, store, "rf-empty", ""); e.RefundRefusal != "refused" {
		t.Errorf("refusal without a reason recorded as %q, want %q", e.RefundRefusal, "refused")
	}
	long := "refused: " + strings.Repeat("é", 300) + "\xff"
	e := mustRefuse(t, store, "rf-long", long)
	if !utf8.ValidString(e.RefundRefusal) || utf8.RuneCountInString(e.RefundRefusal) != 255 || !strings.HasPrefix(e.RefundRefusal, "refused: éé") {
		t.Errorf("long reason stored as %q (%d characters); want its first 255 characters", e.RefundRefusal, utf8.RuneCountInString(e.RefundRefusal))
	}
}

// The provider's answer wins: a refund marked sent stays sent when a refusal arrives after (no error, the row
// unchanged), and a refused refund the provider then reports executed is sent, its refusal kept as history.
func TestRefundSentAndRefused_TheProvidersReferenceWins(t *testing.T) {
	t.Parallel()
	store, now := refundStore(t)
	putRefund(t, store, "rf-sent-first", 500)
	putRefund(t, store, "rf-refused-first", 700)

	sent := mustSend(t, store, "rf-sent-first", "ref-1")
	*now = refundStart.Add(time.Minute)
	got := mustRefuse(t, store, "rf-sent-first", "refused: too late")
	if got.RefundSentAt == nil || !got.RefundSentAt.Equal(*sent.RefundSentAt) || got.RefundRef != "ref-1" ||
		got.RefundRefusedAt != nil || got.RefundRefusal != "" {
		t.Errorf("refusal of a sent refund returned %+v; want it sent as ref-1, not refused", got)
	}

	refused := mustRefuse(t, store, "rf-refused-first", "refused: limit")
	*now = refundStart.Add(2 * time.Minute)
	got = mustSend(t, store, "rf-refused-first", "ref-2")
	if got.RefundSentAt == nil || !got.RefundSentAt.Equal(*now) || got.RefundRef != "ref-2" ||
		got.RefundRefusedAt == nil || !got.RefundRefusedAt.Equal(*refused.RefundRefusedAt) || got.RefundRefusal != "refused: limit" {
		t.Errorf("sent after a refusal: %+v; want sent as ref-2 at %s with the refusal kept", got, *now)
	}
	checkOutbox(t, store, nil, 0)
}

// A person sends a refused refund again: RequeueRefund clears the refusal and the refund is back in the
// outbox. A refund not refused, or already sent, is returned unchanged.
func TestRequeueRefund_PutsARefusedRefundBackInTheOutbox(t *testing.T) {
	t.Parallel()
	store, _ := refundStore(t)
	putRefund(t, store, "rq-refused", 500)
	putRefund(t, store, "rq-pending", 500)
	putRefund(t, store, "rq-sent", 500)
	mustRefuse(t, store, "rq-refused", "refused: card closed")
	mustSend(t, store, "rq-sent", "ref-sent")
	checkOutbox(t, store, []string{"rq-pending"}, 1)

	got, err := store.RequeueRefund(t.Context(), "rq-refused")
	if err != nil || got.RefundRefusedAt != nil || got.RefundRefusal != "" || got.RefundSentAt != nil {
		t.Errorf("RequeueRefund = %+v, %v; want the refusal cleared, not sent", got, err)
	}
	checkOutbox(t, store, []string{"rq-refused", "rq-pending"}, 0)

	for _, ev := range []string{"rq-pending", "rq-sent"} {
		before, err := store.PaymentsOfOrder(t.Context(), "o-"+ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := store.RequeueRefund(t.Context(), ev)
		if err != nil || len(before) != 1 || !sameEntry(got, before[0]) {
			t.Errorf("RequeueRefund(%s) = %+v, %v; want it unchanged: %+v", ev, got, err, before)
		}
	}
	// Refused again after the requeue: the new refusal is recorded.
	if e := mustRefuse(t, store, "rq-refused", "refused: still closed"); e.RefundRefusal != "refused: still closed" {
		t.Errorf("refusal after a requeue recorded as %q", e.RefundRefusal)
	}
}

func sameEntry(a, b sqlstore.PaymentEntry) bool {
	eq := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	return a.ID == b.ID && a.EventID == b.EventID && a.RefundRef == b.RefundRef && a.RefundRefusal == b.RefundRefusal &&
		eq(a.RefundSentAt, b.RefundSentAt) && eq(a.RefundRefusedAt, b.RefundRefusedAt) && eq(a.RefundedAt, b.RefundedAt)
}

// Refusing or requeueing an event that is not there, or a payment that is not a refund, fails like
// MarkRefundSent: ordersaga.ErrNotFound, ErrNotARefund.
func TestRefundRefusal_UnknownEventOrNotARefund(t *testing.T) {
	t.Parallel()
	store, _ := refundStore(t)
	putApplied(t, store, "rf-applied")
	ops := map[string]func(event string) (sqlstore.PaymentEntry, error){
		"MarkRefundRefused": func(ev string) (sqlstore.PaymentEntry, error) {
			return store.MarkRefundRefused(t.Context(), ev, "refused")
		},
		"RequeueRefund": func(ev string) (sqlstore.PaymentEntry, error) { return store.RequeueRefund(t.Context(), ev) },
	}
	for name, op := range ops {
		if _, err := op("rf-nobody"); !errors.Is(err, ordersaga.ErrNotFound) || !strings.Contains(err.Error(), "rf-nobody") {
			t.Errorf("%s(unknown) = %v, want ErrNotFound naming the event", name, err)
		}
		e, err := op("rf-applied")
		if !errors.Is(err, sqlstore.ErrNotARefund) || e.RefundRefusedAt != nil {
			t.Errorf("%s(applied) = %+v, %v; want ErrNotARefund and no refusal", name, e, err)
		}
	}
	if n, err := store.CountRefusedRefunds(t.Context()); err != nil || n != 0 {
		t.Errorf("CountRefusedRefunds = %d, %v; want 0", n, err)
	}
}

// findingsByKey indexes findings by "kind subject".
func findingsByKey(found []sqlstore.MoneyFinding) map[string]sqlstore.MoneyFinding {
	out := map[string]sqlstore.MoneyFinding{}
	for _, f := range found {
		out[f.Kind+" "+f.Subject] = f
	}
	return out
}

// The money check of refunds, over every day: a refund recorded longer than unsentAfter ago and neither sent
// nor refused is refund_unsent (a week-old one too), a younger one or one exactly at the threshold is not, a
// refused one is refund_refused and not refund_unsent, a sent one is neither (even when refused before).
func TestCheckRefunds_FindsRefundsUnsentPastTheThresholdAndRefused(t *testing.T) {
	t.Parallel()
	store, now := refundStore(t)
	at := func(d time.Duration) { *now = refundStart.Add(d) }
	at(-8 * 24 * time.Hour)
	putRefund(t, store, "ck-week", 300)
	at(-3 * time.Hour)
	putRefund(t, store, "ck-sent", 400)
	mustSend(t, store, "ck-sent", "ref-sent")
	putRefund(t, store, "ck-refused-then-sent", 400)
	mustRefuse(t, store, "ck-refused-then-sent", "refused: first answer")
	mustSend(t, store, "ck-refused-then-sent", "ref-late")
	at(-2 * time.Hour)
	putRefund(t, store, "ck-refused", 700)
	mustRefuse(t, store, "ck-refused", "refused: card closed")
	putApplied(t, store, "ck-applied")
	at(-time.Hour)
	putRefund(t, store, "ck-old", 500)
	at(-15 * time.Minute)
	putRefund(t, store, "ck-edge", 500)
	at(-5 * time.Minute)
	putRefund(t, store, "ck-young", 500)
	at(0)

	found, err := store.CheckRefunds(t.Context(), refundStart, 15*time.Minute, 10)
	if err != nil {
		t.Fatalf("CheckRefunds: %v", err)
	}
	got := findingsByKey(found)
	want := []string{sqlstore.KindRefundUnsent + " ck-week", sqlstore.KindRefundUnsent + " ck-old",
		sqlstore.KindRefundRefused + " ck-refused"}
	if len(found) != len(want) {
		t.Errorf("findings %+v; want exactly %v", found, want)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("no finding %q in %+v", k, found)
		}
	}
	old := got[sqlstore.KindRefundUnsent+" ck-old"]
	if old.Day != "2026-05-04" || old.EventID != "ck-old" || old.OrderID != "o-ck-old" || old.Currency != "EUR" ||
		old.Expected == nil || *old.Expected != 500 || old.Observed == nil || *old.Observed != 500 ||
		!strings.Contains(old.Detail, "1h0m0s") {
		t.Errorf("refund_unsent finding %+v; want day 2026-05-04, 500 EUR, the wait (1h0m0s) in its detail", old)
	}
	if week := got[sqlstore.KindRefundUnsent+" ck-week"]; week.Day != "2026-04-26" || !strings.Contains(week.Detail, "192h0m0s") {
		t.Errorf("week-old finding %+v; want day 2026-04-26 and its wait of 192h0m0s", week)
	}
	refused := got[sqlstore.KindRefundRefused+" ck-refused"]
	if refused.Day != "2026-05-04" || refused.Expected == nil || *refused.Expected != 700 || !strings.Contains(refused.Detail, "refused: card closed") {
		t.Errorf("refund_refused finding %+v; want day 2026-05-04, 700 EUR, the reason in its detail", refused)
	}

	// Each is one money_anomalies row however many runs see it.
	for run, want := range []int{3, 0} {
		recorded, err := store.RecordMoneyFindings(t.Context(), "run-"+string(rune('a'+run)), found)
		if err != nil || len(recorded) != want {
			t.Errorf("run %d recorded %d findings, %v; want %d", run, len(recorded), err, want)
		}
	}
}

// The check is bounded per kind (the oldest refunds first), and a zero unsentAfter (a run whose input predates
// the setting) looks for refusals only; a limit below 1 is refused, naming it.
func TestCheckRefunds_BoundsAndInputs(t *testing.T) {
	t.Parallel()
	store, now := refundStore(t)
	*now = refundStart.Add(-2 * time.Hour)
	for _, e := range []string{"b-1", "b-2", "b-3", "b-r1", "b-r2"} {
		putRefund(t, store, e, 100)
		*now = now.Add(time.Minute)
	}
	mustRefuse(t, store, "b-r1", "refused")
	mustRefuse(t, store, "b-r2", "refused")

	found, err := store.CheckRefunds(t.Context(), refundStart, 15*time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := findingsByKey(found)
	if len(found) != 2 || got[sqlstore.KindRefundUnsent+" b-1"].Subject == "" || got[sqlstore.KindRefundRefused+" b-r1"].Subject == "" {
		t.Errorf("limit 1: %+v; want the oldest of each kind (b-1, b-r1)", found)
	}
	found, err = store.CheckRefunds(t.Context(), refundStart, 0, 10)
	if err != nil || len(found) != 2 || found[0].Kind != sqlstore.KindRefundRefused || found[1].Kind != sqlstore.KindRefundRefused {
		t.Errorf("unsentAfter 0: %+v, %v; want the 2 refusals only", found, err)
	}
	if _, err := store.CheckRefunds(t.Context(), refundStart, time.Minute, 0); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("limit 0: %v; want an error naming limit", err)
	}
}
