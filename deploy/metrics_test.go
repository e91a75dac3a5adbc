package deploy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
)

// TestDeployQueries_NameOnlyWhatTheProcessesExport starts the worker and the starter as the compose stack runs
// them, drives a little of a sale through the order API (orders placed, one paid and paid again, so refunded,
// one cancelled, a sold-out answer, a reconciliation run that repairs a drifted counter, a stuck step), scrapes
// both /metrics as Prometheus does, and fails if an alert, a promtool test series or a dashboard query names a
// metric or a label that neither exports (the external metrics of externalMetrics aside).
func TestDeployQueries_NameOnlyWhatTheProcessesExport(t *testing.T) {
	t.Parallel()
	queries := deployQueries(t)
	s := startMetricsStack(t)

	const sku, drifted = "METRICS-A", "METRICS-B"
	s.stock(t, sku, 2, 1250)
	s.stock(t, drifted, 5, 800)
	var orders []ordersaga.Order
	for _, key := range []string{"k-1", "k-2"} {
		status, o := s.place(t, key, "u-"+key, sku, 1)
		if status != http.StatusCreated || o.Status != ordersaga.StatusAwaitingPayment {
			t.Fatalf("place %s: %d %+v, want 201 AWAITING_PAYMENT", key, status, o)
		}
		orders = append(orders, o)
	}
	if status, _ := s.place(t, "k-3", "u-k-3", sku, 1); status != http.StatusConflict {
		t.Fatalf("place past the stock: %d, want 409 sold out", status)
	}
	if a := s.pay(t, orders[0], "evt-1"); a.Result != ordersaga.PaymentApplied {
		t.Fatalf("payment: %+v, want applied", a)
	}
	if a := s.pay(t, orders[0], "evt-2"); a.Result != ordersaga.PaymentRefunded {
		t.Fatalf("second payment of a paid order: %+v, want refunded", a)
	}
	if got := s.cancel(t, orders[1]); got != ordersaga.StatusCancelled {
		t.Fatalf("cancel: %s, want CANCELLED", got)
	}
	// Redis promises 4 units the database does not have: the run repairs the counter (kind avail_over).
	if err := s.redis.SetAvailable(context.Background(), drifted, 9); err != nil {
		t.Fatal(err)
	}
	if sum := s.reconcile(t); !strings.Contains(sum, "repairs=1") {
		t.Fatalf("reconciliation: %s, want the drifted counter repaired", sum)
	}
	s.stuckStep(t)

	// The Temporal SDK's metrics reach the registry at its next report (every second): scrape until nothing is
	// missing, or 15 s have passed.
	var problems []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		exp := Exported{}
		exp.Add(scrape(t, s.workerMetrics))
		exp.Add(scrape(t, s.apiMetrics))
		problems = problems[:0]
		for _, q := range queries {
			problems = append(problems, unexported(q, exp)...)
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("%d queries checked against the worker's and the starter's /metrics", len(queries))
}
