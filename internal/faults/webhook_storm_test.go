package faults_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/internal/webhook"
	"github.com/ordersaga/ordersaga/workflows"
)

// The webhook's keys: the API accepts the current and the previous one (rotation); the retired one was
// rotated out before and must be refused like a forgery.
const (
	secretCurrent  = "whsec-storm-current"
	secretPrevious = "whsec-storm-previous"
	secretRetired  = "whsec-storm-retired"
	webhookPath    = "/v1/payments/webhook"
	stormSKU       = "STORM-A"
)

// stormDeliveries is the storm's size: STORM_DELIVERIES, 1,000 by default (CI); run 10,000 by hand.
func stormDeliveries(t *testing.T) int {
	t.Helper()
	v := os.Getenv("STORM_DELIVERIES")
	if v == "" {
		return 1000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("STORM_DELIVERIES=%q: want a positive number of deliveries", v)
	}
	return n
}

// hook is the real order API on httptest, its clock under the test's control.
type hook struct {
	env   *sagatest.Env
	url   string
	clock *testenv.Clock
}

func newHook(t *testing.T) *hook {
	t.Helper()
	if !testenv.RealMySQL() {
		t.Skip("the webhook storm runs on the real MariaDB: set MYSQL_DSN (e.g. root@tcp(127.0.0.1:3306)/test)")
	}
	env := sagatest.Start(t)
	clock := testenv.NewClock()
	d := api.Deps{
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Temporal: env.Client, Store: env.Store, Redis: env.Redis, Gate: admission.New(env.Redis),
		Currency: "CNY", WebhookSecrets: []string{secretCurrent, secretPrevious}, AdminToken: "storm-admin",
		PlaceTimeout: 2 * time.Minute, UpdateTimeout: 2 * time.Minute, Now: clock.Now,
	}
	srv := httptest.NewServer(api.NewServer(d))
	t.Cleanup(srv.Close)
	return &hook{env: env, url: srv.URL + webhookPath, clock: clock}
}

// delivery is one webhook request.
type delivery struct {
	body   []byte
	header string // Payment-Signature ("" sends none)
}

// send delivers d and returns the status and the answer's result (when 200).
func (h *hook) send(ctx context.Context, d delivery) (int, ordersaga.PaymentResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(d.body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if d.header != "" {
		req.Header.Set(webhook.Header, d.header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("deliver: %w", err)
	}
	defer resp.Body.Close()
	var a ordersaga.PaymentAnswer
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			return resp.StatusCode, "", fmt.Errorf("decode the answer: %w", err)
		}
	}
	return resp.StatusCode, a.Result, nil
}

// eventBody is the JSON of a succeeded payment event (a struct of strings and a number: Marshal cannot fail).
func eventBody(eventID, orderID string, amount int64) []byte {
	b, _ := json.Marshal(ordersaga.PaymentEvent{EventID: eventID, OrderID: orderID, AmountCents: amount,
		Currency: "CNY", Status: ordersaga.PaymentSucceeded})
	return b
}

// placeOrder places one order of qty 1 with the given payment timeout and returns its amount (safe to call
// from any goroutine: it fails nothing itself).
func (h *hook) placeOrder(ctx context.Context, id string, timeout time.Duration) (int64, error) {
	in := workflows.OrderInput{OrderID: id, UserID: "buyer-" + id, Currency: "CNY",
		Lines: []ordersaga.Line{{SKU: stormSKU, Qty: 1}}, PaymentTimeout: timeout}
	res, err := sagatest.UntilDecided(ctx, func() (workflows.Reservation, error) { return orderclient.Place(ctx, h.env.Client, in) })
	if err != nil {
		return 0, fmt.Errorf("place %s: %w", id, err)
	}
	if res.Order.Status != ordersaga.StatusAwaitingPayment {
		return 0, fmt.Errorf("place %s: %s, want %s", id, res.Order.Status, ordersaga.StatusAwaitingPayment)
	}
	return res.Order.AmountCents, nil
}

// stormKinds are the refused deliveries, in the order the storm cycles through them.
var stormKinds = []string{"forged_secret", "forged_header", "stale", "replayed_tampered", "replayed_stale", "retired_key"}

// forge makes the i-th storm delivery against a target order: every one of them must be refused.
// genuine is a delivery captured earlier (a real payment's body and signature).
func (h *hook) forge(i int, target string, amount int64, genuine delivery) (string, delivery) {
	now := h.clock.Now()
	body := eventBody(fmt.Sprintf("storm-%06d", i), target, amount)
	kind := stormKinds[i%len(stormKinds)]
	switch kind {
	case "forged_secret":
		return kind, delivery{body, webhook.Sign(now, body, "whsec-guess-"+strconv.Itoa(i))}
	case "forged_header":
		headers := []string{"", "t=" + strconv.FormatInt(now.Unix(), 10), "v1=" + hex.EncodeToString(make([]byte, 32)),
			fmt.Sprintf("t=%d,v1=%s", now.Unix(), hex.EncodeToString(make([]byte, 32))), "garbage", "t=abc,v1=zz"}
		return kind, delivery{body, headers[(i/len(stormKinds))%len(headers)]}
	case "stale":
		skew := webhook.Tolerance + time.Duration(1+i%3600)*time.Second
		if i%2 == 0 {
			skew = -skew
		}
		return kind, delivery{body, webhook.Sign(now.Add(skew), body, secretCurrent)}
	case "replayed_tampered":
		return kind, delivery{body, genuine.header} // a genuine signature on another body
	case "replayed_stale":
		return kind, genuine // the genuine delivery itself, after the tolerance has passed
	default:
		return kind, delivery{body, webhook.Sign(now, body, secretRetired)}
	}
}

// realPayment is one real order of the money phase and how its payment is delivered.
type realPayment struct {
	orderID, eventID string
	amount           int64
	late             bool // paid after the order expired: must be refunded once
	duplicate        bool // delivered twice, one after the other
	answers          []ordersaga.PaymentResult
}

// moneyFigure is what the money phase counted.
type moneyFigure struct {
	orders, onTime, late, duplicates, previousKey int
	wrongAnswers                                  int
	genuine                                       delivery
}

// TestWebhookStorm: first real orders are paid through the real webhook, 10 % delivered twice and 5 % paid
// after their order expired (each late one delivered twice at once): every payment is applied or refunded
// exactly once. Then STORM_DELIVERIES forged, stale, replayed and retired-key deliveries hit the webhook
// against orders awaiting payment: none is accepted, none records a payment, no order changes.
func TestWebhookStorm(t *testing.T) {
	h := newHook(t)
	n := stormDeliveries(t)
	m := min(max(n/20, 40), 200)
	const targets = 5
	h.env.Stock(t, stormSKU, int64(m+targets), 1999)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()

	mf := h.moneyPhase(ctx, t, m)
	moneyTook := time.Since(started)
	h.checkMoney(t, mf)

	targetIDs := make([]string, targets)
	amounts := make([]int64, targets)
	for i := range targetIDs {
		targetIDs[i] = fmt.Sprintf("storm-target-%d", i)
		var err error
		if amounts[i], err = h.placeOrder(ctx, targetIDs[i], 10*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	rowsBefore := h.env.CountRows(t, "payments", "1=1")
	h.clock.Advance(webhook.Tolerance + time.Minute) // the genuine delivery is stale from now on
	stormStart := time.Now()
	byKind, accepted, other := h.storm(ctx, t, n, targetIDs, amounts, mf.genuine)
	stormTook := time.Since(stormStart)

	recorded := h.env.CountRows(t, "payments", "event_id LIKE ?", "storm-%")
	rowsAfter := h.env.CountRows(t, "payments", "1=1")
	changed := 0
	for _, id := range targetIDs {
		rec, err := h.env.Store.Order(ctx, id)
		if err != nil || rec.Status != ordersaga.StatusAwaitingPayment {
			changed++
			t.Errorf("storm target %s: %v %v, want still %s", id, rec.Status, err, ordersaga.StatusAwaitingPayment)
		}
	}
	if accepted != 0 || other != 0 || recorded != 0 || rowsAfter != rowsBefore {
		t.Errorf("storm: %d accepted, %d answered other than 401, %d storm payments recorded, payments %d -> %d",
			accepted, other, recorded, rowsBefore, rowsAfter)
	}
	for _, id := range targetIDs {
		if _, err := orderclient.Cancel(ctx, h.env.Client, id, "storm over"); err != nil {
			t.Errorf("cancel storm target %s: %v", id, err)
		}
	}
	rep, err := invariants.Check(ctx, h.env.Store, h.env.Redis, map[string]int64{stormSKU: int64(m + targets)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("invariants after the storm:\n%s", rep)
	}
	t.Logf("RESULT webhook-storm deliveries=%d by_kind=%v accepted=%d non_401=%d storm_payments_recorded=%d orders_changed=%d storm_took=%s | "+
		"orders=%d on_time=%d duplicate_deliveries=%d late=%d (each delivered twice) previous_key=%d wrong_answers=%d "+
		"refund_rows=%d double_refunds=%d applied_rows=%d money_took=%s invariant_violations=%d",
		n, byKind, accepted, other, recorded, changed, stormTook.Round(time.Millisecond),
		mf.orders, mf.onTime, mf.duplicates, mf.late, mf.previousKey, mf.wrongAnswers,
		h.env.CountRows(t, "payments", "refunded_at IS NOT NULL"), h.doubleRefunds(t),
		h.env.CountRows(t, "payments", "result = ? AND refunded_at IS NULL", string(ordersaga.PaymentApplied)),
		moneyTook.Round(time.Millisecond), len(rep.Violations))
}

// storm sends n refused deliveries, 16 at a time, and counts them by kind, the accepted ones (200) and
// those answered other than 401.
func (h *hook) storm(ctx context.Context, t *testing.T, n int, targets []string, amounts []int64, genuine delivery) (map[string]int, int64, int64) {
	t.Helper()
	var accepted, other atomic.Int64
	byKind := map[string]int{}
	var mu sync.Mutex
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				kind, d := h.forge(i, targets[i%len(targets)], amounts[i%len(targets)], genuine)
				status, _, err := h.send(ctx, d)
				switch {
				case err != nil:
					t.Errorf("storm delivery %d (%s): %v", i, kind, err)
				case status == http.StatusOK:
					accepted.Add(1)
				case status != http.StatusUnauthorized:
					other.Add(1)
				}
				mu.Lock()
				byKind[kind]++
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return byKind, accepted.Load(), other.Load()
}

// doubleRefunds counts payment events with more than one refund row (the UNIQUE key makes it 0; the test
// checks the rows, not the schema).
func (h *hook) doubleRefunds(t *testing.T) int64 {
	t.Helper()
	var n int64
	if err := h.env.Store.DB().Raw(`SELECT COUNT(*) FROM (SELECT event_id FROM payments WHERE refunded_at IS NOT NULL
		GROUP BY event_id HAVING COUNT(*) > 1) d`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// moneyPhase places m real orders (every 20th with a 2 s payment timeout, paid only once expired) and pays
// each through the webhook: every 10th on-time payment is delivered again after its answer, every late one
// twice at once, every 7th is signed with the previous key only (inside the rotation window).
func (h *hook) moneyPhase(ctx context.Context, t *testing.T, m int) moneyFigure {
	t.Helper()
	pays := make([]*realPayment, m)
	for i := range pays {
		pays[i] = &realPayment{orderID: fmt.Sprintf("money-%03d", i), eventID: fmt.Sprintf("pay-%03d", i),
			late: i%20 == 0, duplicate: i%10 == 1}
	}
	h.each(pays, func(p *realPayment) {
		timeout := 2 * time.Minute
		if p.late {
			timeout = 2 * time.Second
		}
		var err error
		if p.amount, err = h.placeOrder(ctx, p.orderID, timeout); err != nil {
			t.Error(err)
		}
	})
	h.each(pays, func(p *realPayment) {
		if !p.late {
			return
		}
		var o ordersaga.Order
		if err := h.env.Client.GetWorkflow(ctx, workflows.OrderWorkflowID(p.orderID), "").Get(ctx, &o); err != nil || o.Status != ordersaga.StatusExpired {
			t.Errorf("late order %s: %v %v, want %s before its payment", p.orderID, o.Status, err, ordersaga.StatusExpired)
		}
	})
	mf := moneyFigure{orders: m}
	h.each(pays, func(p *realPayment) { h.pay(ctx, t, p) })
	for i, p := range pays {
		if i%7 == 0 && !p.late {
			mf.previousKey++
		}
		switch {
		case p.late:
			mf.late++
		default:
			mf.onTime++
		}
		if p.duplicate {
			mf.duplicates++
		}
		if !answersRight(p) {
			mf.wrongAnswers++
			t.Errorf("payment %s (late %v, duplicate %v): answers %v", p.eventID, p.late, p.duplicate, p.answers)
		}
	}
	mf.genuine = h.signed(pays[1], secretCurrent)
	return mf
}

// each runs f on every payment, 20 at a time.
func (h *hook) each(pays []*realPayment, f func(*realPayment)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for _, p := range pays {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			f(p)
		}()
	}
	wg.Wait()
}

// signed is p's delivery signed now with the secrets.
func (h *hook) signed(p *realPayment, secrets ...string) delivery {
	body := eventBody(p.eventID, p.orderID, p.amount)
	return delivery{body, webhook.Sign(h.clock.Now(), body, secrets...)}
}

// pay delivers p's payment as its plan says and records the answers.
func (h *hook) pay(ctx context.Context, t *testing.T, p *realPayment) {
	key := secretCurrent
	if n, _ := strconv.Atoi(p.eventID[len("pay-"):]); n%7 == 0 {
		key = secretPrevious
	}
	deliver := func() ordersaga.PaymentResult {
		status, r, err := h.send(ctx, h.signed(p, key))
		if err != nil || status != http.StatusOK {
			t.Errorf("payment %s: status %d %v", p.eventID, status, err)
		}
		return r
	}
	if p.late { // two deliveries at once
		var wg sync.WaitGroup
		res := make([]ordersaga.PaymentResult, 2)
		for i := range res {
			wg.Add(1)
			go func() { defer wg.Done(); res[i] = deliver() }()
		}
		wg.Wait()
		p.answers = res
		return
	}
	p.answers = append(p.answers, deliver())
	if p.duplicate {
		p.answers = append(p.answers, deliver())
	}
}

// answersRight: an on-time payment is applied, then answered duplicate; a late one is refunded, and its
// concurrent second delivery is refunded (the same refund workflow's answer) or duplicate.
func answersRight(p *realPayment) bool {
	if p.late {
		return len(p.answers) == 2 && slices.Contains(p.answers, ordersaga.PaymentRefunded) &&
			!hasOther(p.answers, ordersaga.PaymentRefunded, ordersaga.PaymentDuplicate)
	}
	want := []ordersaga.PaymentResult{ordersaga.PaymentApplied}
	if p.duplicate {
		want = append(want, ordersaga.PaymentDuplicate)
	}
	return fmt.Sprint(p.answers) == fmt.Sprint(want)
}

// hasOther reports an answer that is none of the allowed ones.
func hasOther(got []ordersaga.PaymentResult, allowed ...ordersaga.PaymentResult) bool {
	return slices.ContainsFunc(got, func(g ordersaga.PaymentResult) bool { return !slices.Contains(allowed, g) })
}

// checkMoney checks the payments rows and the orders of the money phase.
func (h *hook) checkMoney(t *testing.T, mf moneyFigure) {
	t.Helper()
	checks := []struct {
		what string
		got  int64
		want int
	}{
		{"payment rows", h.env.CountRows(t, "payments", "event_id LIKE ?", "pay-%"), mf.orders},
		{"applied, kept", h.env.CountRows(t, "payments", "event_id LIKE ? AND result = ? AND refunded_at IS NULL", "pay-%", string(ordersaga.PaymentApplied)), mf.onTime},
		{"refunded once", h.env.CountRows(t, "payments", "event_id LIKE ? AND result = ? AND refunded_at IS NOT NULL", "pay-%", string(ordersaga.PaymentRefunded)), mf.late},
		{"orders PAID", h.env.CountRows(t, "orders", "order_id LIKE ? AND status = ?", "money-%", string(ordersaga.StatusPaid)), mf.onTime},
		{"orders EXPIRED", h.env.CountRows(t, "orders", "order_id LIKE ? AND status = ?", "money-%", string(ordersaga.StatusExpired)), mf.late},
	}
	for _, c := range checks {
		if c.got != int64(c.want) {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
}
