package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/internal/webhook"
	"github.com/ordersaga/ordersaga/workflows"
)

type inventory struct {
	SKU            string `json:"sku"`
	DBStock        int64  `json:"db_stock"`
	RedisAvailable *int64 `json:"redis_available"`
	Holds          int64  `json:"holds"`
	Drift          int64  `json:"drift"`
}

func placeOrder(t *testing.T, api, key, sku string, qty int) ordersaga.Order {
	t.Helper()
	var o ordersaga.Order
	body := fmt.Sprintf(`{"user_id":"u-smoke","lines":[{"sku":%q,"qty":%d}]}`, sku, qty)
	if st := call(t, "POST", api+"/v1/orders", []byte(body), map[string]string{"Idempotency-Key": key}, &o); st != 201 {
		t.Fatalf("place %s: status %d, %+v", key, st, o)
	}
	if o.Status != ordersaga.StatusAwaitingPayment || o.PayBy == nil {
		t.Fatalf("place %s: %+v, want AWAITING_PAYMENT with a deadline", key, o)
	}
	return o
}

func getOrder(t *testing.T, api, id string) ordersaga.Order {
	t.Helper()
	var o ordersaga.Order
	if st := call(t, "GET", api+"/v1/orders/"+id, nil, nil, &o); st != 200 {
		t.Fatalf("get order %s: status %d", id, st)
	}
	return o
}

func getInventory(t *testing.T, api, sku string) inventory {
	t.Helper()
	var inv inventory
	if st := call(t, "GET", api+"/v1/inventory/"+sku, nil, nil, &inv); st != 200 {
		t.Fatalf("get inventory %s: status %d", sku, st)
	}
	return inv
}

// pay sends the payment webhook the way the payment simulator does: signed with the development secret.
func pay(t *testing.T, api string, o ordersaga.Order) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"event_id": "evt-" + o.OrderID, "order_id": o.OrderID,
		"amount_cents": o.AmountCents, "currency": "CNY", "status": "succeeded"})
	var res struct {
		Result string `json:"result"`
	}
	st := call(t, "POST", api+"/v1/payments/webhook", body,
		map[string]string{webhook.Header: webhook.Sign(time.Now(), body, devWebhookSecret)}, &res)
	if st != 200 {
		t.Fatalf("payment webhook for %s: status %d", o.OrderID, st)
	}
	return res.Result
}

// uiFinds reports whether the Temporal UI's workflow list (what its Workflows page calls) finds the workflow
// with the list query.
func uiFinds(t *testing.T, ui, query, workflowID string) string {
	t.Helper()
	var list struct {
		Executions []struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
		} `json:"executions"`
	}
	u := ui + "/api/v1/namespaces/default/workflows?" + url.Values{"query": {query}}.Encode()
	if st := call(t, "GET", u, nil, nil, &list); st != 200 {
		return fmt.Sprintf("GET %s: status %d", u, st)
	}
	for _, e := range list.Executions {
		if e.Execution.WorkflowID == workflowID {
			return ""
		}
	}
	return fmt.Sprintf("the UI's list for %s does not have %s: %+v", query, workflowID, list.Executions)
}

// TestLocalStack runs the local stack in this process twice on one data directory: orders are placed, paid
// and expired over HTTP, the Temporal UI lists them by OrderStatus, and the second run finds what the first
// left, with deadlines kept.
func TestLocalStack(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	p := freePorts(t)
	env := storeEnv(t)

	// First run: the default 15-minute deadline.
	s := startStack(t, p.args(dataDir), env, &p)
	if out := s.stdout.String(); !strings.Contains(out, dataDir) || !strings.Contains(out, devAdminToken) ||
		!strings.Contains(out, s.api+"/metrics") || !strings.Contains(out, s.ui) {
		t.Errorf("the banner does not say where everything is:\n%s", out)
	}
	before := getInventory(t, s.api, "SKU-1")
	if before.DBStock != 100 || before.RedisAvailable == nil || *before.RedisAvailable != 100 {
		t.Fatalf("demo SKU-1: %+v, want 100 in the database and in Redis", before)
	}
	paid := placeOrder(t, s.api, "smoke-paid", "SKU-1", 2)
	if paid.AmountCents != 2*999 {
		t.Errorf("amount of 2 × SKU-1: %d, want %d", paid.AmountCents, 2*999)
	}
	if res := pay(t, s.api, paid); res != string(ordersaga.PaymentApplied) {
		t.Fatalf("payment: %s, want applied", res)
	}
	eventually(t, 10*time.Second, func() string {
		if o := getOrder(t, s.api, paid.OrderID); o.Status != ordersaga.StatusPaid {
			return "order " + paid.OrderID + " is " + string(o.Status)
		}
		return ""
	})
	if _, real := env["REDIS_ADDR"]; !real {
		// The stack's own client reaches the embedded Redis through an in-memory pipe; the TCP port it prints
		// serves every other client, with the same keys.
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("%s:%d", localIP, p.redis)})
		if v, err := rdb.Get(context.Background(), "inv:{SKU-1}:avail").Result(); err != nil || v != "98" {
			t.Errorf("SKU-1's counter read on the embedded Redis's port after 2 were sold: %q, %v; want 98", v, err)
		}
		rdb.Close()
	}
	waiting := placeOrder(t, s.api, "smoke-waiting", "SKU-2", 1)

	if st := call(t, "GET", s.ui+"/", nil, nil, nil); st != 200 {
		t.Errorf("Temporal UI: GET / answered %d", st)
	}
	eventually(t, 20*time.Second, func() string {
		return uiFinds(t, s.ui, "OrderStatus='PAID'", workflows.OrderWorkflowID(paid.OrderID))
	})
	var schedules struct {
		Schedules []struct {
			ScheduleID string `json:"scheduleId"`
		} `json:"schedules"`
	}
	eventually(t, 20*time.Second, func() string {
		if st := call(t, "GET", s.ui+"/api/v1/namespaces/default/schedules", nil, nil, &schedules); st != 200 {
			return fmt.Sprintf("the UI's schedule list: status %d", st)
		}
		for _, sc := range schedules.Schedules {
			if sc.ScheduleID == workflows.ReconcileScheduleID {
				return ""
			}
		}
		return fmt.Sprintf("no reconciliation Schedule in %+v", schedules.Schedules)
	})
	s.stop(t)

	// Second run on the same data directory, with new orders given 2 seconds to pay.
	env["ORDER_PAYMENT_TIMEOUT"] = "2s"
	s = startStack(t, p.args(dataDir), env, &p)
	if strings.Contains(s.stdout.String(), "Demo SKUs") {
		t.Error("the second run created the demo SKUs again")
	}
	if o := getOrder(t, s.api, paid.OrderID); o.Status != ordersaga.StatusPaid {
		t.Errorf("after the restart order %s is %s, want PAID", paid.OrderID, o.Status)
	}
	if o := getOrder(t, s.api, waiting.OrderID); o.Status != ordersaga.StatusAwaitingPayment || !o.PayBy.Equal(*waiting.PayBy) {
		t.Errorf("after the restart order %s is %s paying by %v, want AWAITING_PAYMENT by %v (its deadline kept)",
			waiting.OrderID, o.Status, o.PayBy, waiting.PayBy)
	}
	expiring := placeOrder(t, s.api, "smoke-expiring", "SKU-1", 3)
	if d := time.Until(*expiring.PayBy); d > 5*time.Second {
		t.Errorf("ORDER_PAYMENT_TIMEOUT=2s: the order pays by %v, %v from now", expiring.PayBy, d)
	}
	if inv := getInventory(t, s.api, "SKU-1"); inv.DBStock != 95 {
		t.Errorf("SKU-1 with 2 sold and 3 held: %+v, want db_stock 95", inv)
	}
	eventually(t, 30*time.Second, func() string {
		if o := getOrder(t, s.api, expiring.OrderID); o.Status != ordersaga.StatusExpired {
			return "order " + expiring.OrderID + " is " + string(o.Status)
		}
		return ""
	})
	eventually(t, 10*time.Second, func() string {
		inv := getInventory(t, s.api, "SKU-1")
		if inv.DBStock != 98 || inv.RedisAvailable == nil || *inv.RedisAvailable != 98 || inv.Holds != 0 {
			return fmt.Sprintf("SKU-1 after the expiry: %+v, want 98 in the database and in Redis, no holds", inv)
		}
		return ""
	})
	s.stop(t)
}

func TestLocalStackNamesATakenPortAndItsFlag(t *testing.T) {
	t.Parallel()
	p := freePorts(t)
	ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", localIP, p.ui))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr testenv.SyncBuffer
	err = run(t.Context(), p.args(t.TempDir()), func(string) string { return "" }, &stdout, &stderr)
	var inUse *devserver.PortInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("got %v, want a PortInUseError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(p.ui)) || !strings.Contains(msg, "--"+flagUIPort) {
		t.Errorf("%q does not name port %d and --%s", msg, p.ui, flagUIPort)
	}
}

// TestLocalStackOnAnotherTemporal runs the stack in memory against a Temporal server it did not start
// (TEMPORAL_ADDRESS): no server and no UI of its own, the rest as usual.
func TestLocalStackOnAnotherTemporal(t *testing.T) {
	t.Parallel()
	p := freePorts(t)
	other, err := devserver.FreePort(localIP)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := devserver.StartTemporal(t.Context(), devserver.TemporalOptions{
		IP: localIP, FrontendPort: other, Namespace: "default", SearchAttributes: workflows.SearchAttributes(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	env := storeEnv(t)
	env["TEMPORAL_ADDRESS"] = srv.Address()
	args := append(p.args(t.TempDir()), "--ephemeral")
	s := startStack(t, args, env, &p)
	if out := s.stdout.String(); !strings.Contains(out, srv.Address()+" (TEMPORAL_ADDRESS)") || strings.Contains(out, "Temporal UI") {
		t.Errorf("the banner does not say it uses TEMPORAL_ADDRESS without a UI of its own:\n%s", out)
	}
	o := placeOrder(t, s.api, "other-temporal", "SKU-1", 1)
	if res := pay(t, s.api, o); res != string(ordersaga.PaymentApplied) {
		t.Errorf("payment: %s, want applied", res)
	}
	s.stop(t)
}
