package deploy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestDeployQueries_NameOnlyWhatTheProcessesExport starts the worker and the starter as the compose stack runs
// them, drives a little of a sale through the order API (orders placed, one paid and paid again, so refunded,
// one cancelled, a sold-out answer, a buyer answered in line, a reconciliation run that repairs a drifted
// counter, a stuck step), scrapes both /metrics as Prometheus does, and fails if an alert, a promtool test
// series or a dashboard query names a metric or a label that neither exports (the external metrics of
// externalMetrics aside).
func TestDeployQueries_NameOnlyWhatTheProcessesExport(t *testing.T) {
	t.Parallel()
	queries := deployQueries(t)
	s := startMetricsStack(t)

	const sku, drifted, queued = "METRICS-A", "METRICS-B", "METRICS-C"
	s.stock(t, sku, 2, 1250)
	s.stock(t, drifted, 5, 800)
	s.stock(t, queued, 1, 900)
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
	s.answeredInLine(t, queued)
	// Redis promises 4 units the database does not have: the run repairs the counter (kind avail_over).
	if err := s.redis.SetAvailable(context.Background(), drifted, 9); err != nil {
		t.Fatal(err)
	}
	// The stack's reconciliation Schedule may run first and repair it: either run's repair counts, as long as
	// one was written down (stock_anomalies, avail_over) and the counter is back in line.
	sum := s.reconcile(t)
	if !repairedOnce(t, s, drifted) {
		t.Fatalf("reconciliation: %s, and no run repaired the drifted counter", sum)
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

// answeredInLine has a buyer answered in sku's line (sku has 1 unit): another starter's admission gate counts
// the unit as being placed while the buyer asks for it, so the buyer takes a ticket, waits its hold in the
// server and is answered 503 in-line; the starter then shows the line (ordersaga_line_length{sku}, which has
// no series while no line is seen). The other starter's placement is then given up.
func (s *metricsStack) answeredInLine(t *testing.T, sku string) {
	t.Helper()
	other := admission.New(s.redis)
	a, turn, err := other.Admit(context.Background(), admission.Ticket{}, []ordersaga.Line{{SKU: sku, Qty: 1}}, nil, time.Minute)
	if err != nil || a == nil {
		t.Fatalf("another starter's admission of %s: %+v, %v", sku, turn, err)
	}
	defer a.Done(context.Background())
	body, _ := json.Marshal(map[string]any{"user_id": "u-k-line", "lines": []map[string]any{{"sku": sku, "qty": 1}}})
	r := testenv.Do(t, http.MethodPost, s.apiURL+"/v1/orders", body, map[string]string{"Idempotency-Key": "k-line"})
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Queue-Position") == "" {
		t.Fatalf("place while another starter places the last unit: %d %v %s, want 503 in-line with a Queue-Position",
			r.Status, r.Header, r.Body)
	}
}

// repairedOnce reports whether a reconciliation run set sku's drifted counter back to the database's stock.
func repairedOnce(t *testing.T, s *metricsStack, sku string) bool {
	t.Helper()
	rows, err := s.store.Anomalies(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	repaired := false
	for _, r := range rows {
		repaired = repaired || r.SKU == sku && r.Kind == sqlstore.KindAvailOver && r.Action == sqlstore.ActionSetAvail
	}
	avail, _, err := s.redis.Available(context.Background(), sku)
	if err != nil {
		t.Fatal(err)
	}
	return repaired && avail == 5
}
