package platform_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/refundsim"
	"github.com/ordersaga/ordersaga/internal/refundsim/refundsimtest"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// refundEventID is the event ID of recordRefunds' i-th refund.
func refundEventID(prefix string, i int) string { return fmt.Sprintf("%s-evt-%03d", prefix, i) }

// recordRefunds records n refunds (refunded payments) and kept applied payments beside them, the way the
// webhook's paths do, and returns the refunds' event IDs.
func recordRefunds(t *testing.T, store *sqlstore.Store, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := range n {
		id := refundEventID(prefix, i)
		result := ordersaga.PaymentRefunded
		if i%3 == 0 {
			result = ordersaga.PaymentRejectedAmount
		}
		if _, _, err := store.RecordPayment(ctx, ordersaga.PaymentRecord{EventID: id, OrderID: fmt.Sprintf("%s-o-%03d", prefix, i),
			AmountCents: int64(100 + i), Currency: "CNY", Result: result, Detail: "test"}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestRefundSender_DrainsTheOutboxExactlyOnceAtTheProvider runs the refund sender as the worker does
// (its task queue, its Schedule every second, the HTTP adapter) against `paysim serve` in a process of its
// own that loses a fifth of its answers after executing the refund and refuses a tenth of them for good.
// Every refund ends sent with the provider's own reference, or refused with its reason; the provider executed
// each once, however many requests carried its key; nothing else reached it.
func TestRefundSender_DrainsTheOutboxExactlyOnceAtTheProvider(t *testing.T) {
	t.Parallel()
	const secret = "refund-test-secret"
	faults := refundsim.Faults{RefuseShare: 0.1}
	provider := refundsimtest.Start(t, "-secret", secret, "-timeout-share", "0.2", "-refuse-share", fmt.Sprint(faults.RefuseShare), "-seed", "7")
	srv := sagatest.NewServer(t)
	store := testenv.MustOpenStore(t)
	// The share refuses keys by their hash: the prefix is drawn until the provider refuses some of the 60 and
	// not all (with a tenth, 0.9^60 = 0.2 % of prefixes refuse none), and the test knows which.
	var prefix string
	var wantRefused map[string]bool
	for len(wantRefused) == 0 || len(wantRefused) == 60 {
		prefix, wantRefused = "rs"+testenv.RandomID(6), map[string]bool{}
		for i := range 60 {
			if id := refundEventID(prefix, i); faults.Refuses(id) {
				wantRefused[id] = true
			}
		}
	}
	ids := recordRefunds(t, store, prefix, 60)

	cfg, err := config.FromEnv(func(k string) string {
		return map[string]string{"REFUND_PROVIDER_URL": provider, "REFUND_PROVIDER_SECRET": secret,
			"REFUND_PROVIDER_TIMEOUT": "1s", "REFUND_SEND_INTERVAL": "1s"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stop, err := platform.StartRefundSender(ctx, srv.GetDefaultClient(), store, cfg, reg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	entries := waitOutboxDrained(t, ctx, store, ids)
	report, err := refundsim.Fetch(ctx, provider, nil)
	if err != nil {
		t.Fatal(err)
	}
	atProvider := map[string]refundsim.Entry{}
	for _, e := range report.Refunds {
		if !strings.HasPrefix(e.EventID, prefix) {
			continue
		}
		if _, twice := atProvider[e.EventID]; twice {
			t.Errorf("the provider holds two refunds of %s", e.EventID)
		}
		atProvider[e.EventID] = e
	}
	refusedAt := map[string]bool{}
	for _, r := range report.Refused {
		refusedAt[r.EventID] = true
	}
	var sent, refused int
	for _, e := range entries {
		p, executed := atProvider[e.EventID]
		switch {
		case e.RefundSentAt != nil:
			sent++
			if !executed || p.RefundID != e.RefundRef || p.AmountCents != e.AmountCents || p.Currency != e.Currency || p.OrderID != e.OrderID {
				t.Errorf("%s marked sent with %q for %d %s; the provider has %+v", e.EventID, e.RefundRef, e.AmountCents, e.Currency, p)
			}
		case e.RefundRefusedAt != nil:
			refused++
			if executed || !refusedAt[e.EventID] || !wantRefused[e.EventID] || !strings.Contains(e.RefundRefusal, "refused") {
				t.Errorf("%s recorded refused (%q); at the provider: executed %v, refused %v", e.EventID, e.RefundRefusal, executed, refusedAt[e.EventID])
			}
		default:
			t.Errorf("%s neither sent nor refused", e.EventID)
		}
	}
	if sent+refused != len(ids) || len(atProvider) != sent {
		t.Errorf("sent %d + refused %d of %d refunds; the provider executed %d of this test's", sent, refused, len(ids), len(atProvider))
	}
	if refused != len(wantRefused) {
		t.Errorf("%d refunds recorded refused, want the %d the provider refuses", refused, len(wantRefused))
	}
	if report.Totals.Replays == 0 {
		t.Errorf("no lost answer was sent again (replays 0): the timeouts were not exercised")
	}
	if got := testenv.MustMetric(t, reg, "ordersaga_refunds_sent_total"); int(got) != sent {
		t.Errorf("ordersaga_refunds_sent_total = %v, want %d", got, sent)
	}
	t.Logf("%d refunds: %d sent (%d requests replayed), %d refused; provider requests %d, executed %d",
		len(ids), sent, report.Totals.Replays, refused, report.Totals.Requests, report.Totals.Executed)
}

// TestRefundSender_OffWithoutAProvider: no REFUND_PROVIDER_URL, no sender, and the log says refunds are not
// being sent.
func TestRefundSender_OffWithoutAProvider(t *testing.T) {
	t.Parallel()
	cfg, err := config.FromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	stop, err := platform.StartRefundSender(context.Background(), sagatest.DeadTemporal(t), testenv.DeadStore(t), cfg,
		prometheus.NewRegistry(), slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if !strings.Contains(log.String(), "refunds are recorded but not sent") || !strings.Contains(log.String(), "REFUND_PROVIDER_URL") {
		t.Errorf("log %q does not say refunds are not being sent", log.String())
	}
}

// waitOutboxDrained waits until every refund of ids is sent or refused, and returns their rows.
func waitOutboxDrained(t *testing.T, ctx context.Context, store *sqlstore.Store, ids []string) []sqlstore.PaymentEntry {
	t.Helper()
	for {
		var entries []sqlstore.PaymentEntry
		open := 0
		for _, id := range ids {
			e, err := store.PaymentsOfOrder(ctx, strings.Replace(id, "-evt-", "-o-", 1))
			if err != nil {
				t.Fatal(err)
			}
			if len(e) != 1 {
				t.Fatalf("%s: %d payments", id, len(e))
			}
			if e[0].RefundSentAt == nil && e[0].RefundRefusedAt == nil {
				open++
			}
			entries = append(entries, e[0])
		}
		if open == 0 {
			return entries
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d refunds still in the outbox: %v", open, len(ids), ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
