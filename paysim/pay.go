package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

// localStackSecret is the webhook secret `go run ./localstack` uses when PAYMENT_WEBHOOK_SECRET is unset, so
// paysim works against it with no setting. (paysim is a development tool: it has no secret to protect.)
const localStackSecret = "dev-webhook-secret"

// payOptions are pay's flags.
type payOptions struct {
	target   string
	secret   string
	currency string
	eventID  string
	amount   int64
	twice    bool
	late     bool
	stale    bool
}

// runPay is `paysim pay`: one payment event for an order, posted to the order API's webhook.
func runPay(ctx context.Context, args []string, getenv func(string) string, stdout, _ io.Writer) error {
	var o payOptions
	fs := newFlags("paysim pay", "paysim [flags] pay <order_id>", stdout)
	fs.StringVar(&o.target, "target", defaultTarget(getenv), "base URL of the order API (default from ORDERSAGA_URL or HTTP_ADDR)")
	// No default shown: it may be a real secret.
	fs.StringVar(&o.secret, "secret", "", "webhook secret to sign with (default: the first of PAYMENT_WEBHOOK_SECRET, else the local stack's)")
	fs.StringVar(&o.currency, "currency", or(getenv("CURRENCY"), "CNY"), "currency of the payment (default CURRENCY or CNY)")
	fs.StringVar(&o.eventID, "event-id", "", "the provider's event ID (default: a new random one)")
	fs.Int64Var(&o.amount, "amount", -1, "pay this many cents instead of the order's amount (a wrong amount is rejected_amount)")
	fs.BoolVar(&o.twice, "twice", false, "deliver the same event twice (the second is a duplicate)")
	fs.BoolVar(&o.late, "late", false, "post even when the order is no longer AWAITING_PAYMENT (the payment is refunded)")
	fs.BoolVar(&o.stale, "stale", false, "sign with a timestamp 10 minutes old (the API refuses it with 401)")
	positional, err := parseN(fs, args, 1, "want: pay <order_id>")
	if err != nil {
		return err
	}
	if o.secret == "" {
		o.secret = or(firstSecret(getenv("PAYMENT_WEBHOOK_SECRET")), localStackSecret)
	}
	if o.eventID == "" {
		o.eventID = "evt-" + randomHex(8)
	}
	return pay(ctx, &http.Client{Timeout: time.Minute}, o, positional[0], stdout)
}

func pay(ctx context.Context, hc *http.Client, o payOptions, orderID string, stdout io.Writer) error {
	target := strings.TrimSuffix(o.target, "/")
	order, err := getOrder(ctx, hc, target, orderID)
	switch {
	case err != nil && !(o.late && o.amount >= 0):
		return err
	case err != nil:
		fmt.Fprintf(stdout, "order %s: %v; paying %d %s anyway (-late)\n", orderID, err, o.amount, o.currency)
	default:
		fmt.Fprintf(stdout, "order %s: %s, amount %d, pay by %s\n", orderID, order.Status, order.AmountCents, formatTime(order.PayBy))
		if order.Status != ordersaga.StatusAwaitingPayment && !o.late {
			return fmt.Errorf("order %s is %s, not AWAITING_PAYMENT: add -late to pay it anyway (it is refunded)", orderID, order.Status)
		}
	}
	amount := o.amount
	if amount < 0 {
		amount = order.AmountCents
	}
	body, err := json.Marshal(api.PaymentEvent{
		EventID: o.eventID, OrderID: orderID, AmountCents: amount, Currency: o.currency, Status: api.PaymentSucceeded,
	})
	if err != nil {
		return err
	}
	deliveries := 1
	if o.twice {
		deliveries = 2
	}
	var failed error
	for range deliveries {
		signedAt := time.Now()
		if o.stale {
			signedAt = signedAt.Add(-10 * time.Minute)
		}
		code, answer, err := post(ctx, hc, target+"/v1/payments/webhook", body, webhook.Sign(signedAt, body, o.secret))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "event %s, %d %s: %d %s\n", o.eventID, amount, o.currency, code, strings.TrimSpace(answer))
		if code != http.StatusOK {
			failed = fmt.Errorf("the webhook answered %d", code)
		}
	}
	return failed
}

func getOrder(ctx context.Context, hc *http.Client, target, orderID string) (ordersaga.Order, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/v1/orders/"+orderID, nil)
	if err != nil {
		return ordersaga.Order{}, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return ordersaga.Order{}, fmt.Errorf("read order: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return ordersaga.Order{}, fmt.Errorf("read order: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return ordersaga.Order{}, fmt.Errorf("read order: %d %s", res.StatusCode, strings.TrimSpace(string(b)))
	}
	var o ordersaga.Order
	if err := json.Unmarshal(b, &o); err != nil {
		return ordersaga.Order{}, fmt.Errorf("read order: %w", err)
	}
	return o, nil
}

func post(ctx context.Context, hc *http.Client, url string, body []byte, signature string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.Header, signature)
	res, err := hc.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("post payment: %w", err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

func defaultTarget(getenv func(string) string) string {
	if u := getenv("ORDERSAGA_URL"); u != "" {
		return u
	}
	return "http://" + or(getenv("HTTP_ADDR"), "127.0.0.1:8080")
}

func firstSecret(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(first)
}

func formatTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
