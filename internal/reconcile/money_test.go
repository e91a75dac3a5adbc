package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// The money step reports the refunds not sent past the threshold and those the provider refused, whatever
// day they were recorded on: each recorded once however many runs see it, counted per kind, published as
// gauges (0 once cleared), and the refused ones counted apart from the unsent ones.
func TestMoney_ReportsRefundsUnsentAndRefused(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	ctx := t.Context()
	start := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	clock := start.Add(-10 * 24 * time.Hour) // the refunds are older than the days the run checks
	store.SetClock(func() time.Time { return clock })
	refund := func(event string) {
		t.Helper()
		if _, _, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{EventID: event, OrderID: "o-" + event,
			AmountCents: 250, Currency: "EUR", Result: ordersaga.PaymentRefunded}); err != nil {
			t.Fatal(err)
		}
	}
	refund("mr-unsent")
	refund("mr-refused")
	if _, err := store.MarkRefundRefused(ctx, "mr-refused", "refused: account closed"); err != nil {
		t.Fatal(err)
	}
	clock = start.Add(-5 * time.Minute)
	refund("mr-young")
	clock = start

	reg := prometheus.NewRegistry()
	m, err := reconcile.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	run := func(id string) reconcile.MoneySummary {
		t.Helper()
		sum, err := reconcile.Money(ctx, store, m, id, 1, 15*time.Minute, start, nil)
		if err != nil {
			t.Fatalf("reconcile.Money %s: %v", id, err)
		}
		return sum
	}
	for i, id := range []string{"run-1", "run-2"} {
		sum := run(id)
		wantRecorded := []int{2, 0}[i]
		if sum.ByKind[sqlstore.KindRefundUnsent] != 1 || sum.ByKind[sqlstore.KindRefundRefused] != 1 || sum.Findings != 2 ||
			sum.Recorded != wantRecorded || sum.RefundsUnsent != 2 || sum.RefundsRefused != 1 {
			t.Errorf("%s: %+v; want 1 refund_unsent and 1 refund_refused (%d recorded), 2 unsent, 1 refused", id, sum, wantRecorded)
		}
		if s := sum.String(); !strings.Contains(s, "refunds_refused=1") {
			t.Errorf("%s: summary %q does not say the refused refund", id, s)
		}
	}
	rows, err := store.MoneyAnomalies(ctx, "")
	if err != nil || len(rows) != 2 {
		t.Fatalf("money_anomalies: %+v, %v; want the 2 findings once", rows, err)
	}
	for _, c := range []struct {
		name, kind string
		want       float64
	}{
		{"ordersaga_reconcile_money_discrepancies", sqlstore.KindRefundUnsent, 1},
		{"ordersaga_reconcile_money_discrepancies", sqlstore.KindRefundRefused, 1},
		{"ordersaga_reconcile_money_anomalies_total", sqlstore.KindRefundUnsent, 1},
		{"ordersaga_reconcile_money_anomalies_total", sqlstore.KindRefundRefused, 1},
		{"ordersaga_refunds_unsent", "", 2},
		{"ordersaga_refunds_refused", "", 1},
	} {
		if got := testenv.MustMetric(t, reg, c.name, "kind", c.kind); got != c.want {
			t.Errorf("%s{kind=%q} = %v, want %v", c.name, c.kind, got, c.want)
		}
	}

	// A person requeues the refused refund and the sender sends everything: the gauges show 0.
	if _, err := store.RequeueRefund(ctx, "mr-refused"); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"mr-unsent", "mr-refused", "mr-young"} {
		if _, err := store.MarkRefundSent(ctx, ev, "ref-"+ev); err != nil {
			t.Fatal(err)
		}
	}
	if sum := run("run-3"); sum.Findings != 0 || sum.RefundsUnsent != 0 || sum.RefundsRefused != 0 {
		t.Errorf("run-3: %+v; want nothing left", sum)
	}
	for _, c := range []struct{ name, kind string }{
		{"ordersaga_reconcile_money_discrepancies", sqlstore.KindRefundUnsent},
		{"ordersaga_reconcile_money_discrepancies", sqlstore.KindRefundRefused},
		{"ordersaga_refunds_unsent", ""},
		{"ordersaga_refunds_refused", ""},
	} {
		if got := testenv.MustMetric(t, reg, c.name, "kind", c.kind); got != 0 {
			t.Errorf("after the refunds were sent: %s{kind=%q} = %v, want 0", c.name, c.kind, got)
		}
	}
}
