// Command paysim plays the payment provider locally: it signs payment events the way the provider does
// (internal/webhook) and posts them to the order API's webhook, so a user can pay an order, pay it twice,
// pay it late or pay the wrong amount.
//
//	paysim [flags] pay <order_id>
//
// The amount is read from GET /v1/orders/{id} unless -amount is given. See docs/api.md.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

// localStackSecret is the webhook secret `go run ./localstack` uses when PAYMENT_WEBHOOK_SECRET is unset, so
// paysim works against it with no setting. (paysim is a development tool: it has no secret to protect.)
const localStackSecret = "dev-webhook-secret"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "paysim:", err)
		os.Exit(1)
	}
}

// options are paysim's flags.
type options struct {
	target   string
	secret   string
	currency string
	eventID  string
	amount   int64
	twice    bool
	late     bool
	stale    bool
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	var o options
	fs := flag.NewFlagSet("paysim", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.StringVar(&o.target, "target", defaultTarget(getenv), "base URL of the order API (default from ORDERSAGA_URL or HTTP_ADDR)")
	fs.StringVar(&o.secret, "secret", or(firstSecret(getenv("PAYMENT_WEBHOOK_SECRET")), localStackSecret),
		"webhook secret to sign with (default: the first of PAYMENT_WEBHOOK_SECRET, else the local stack's)")
	fs.StringVar(&o.currency, "currency", or(getenv("CURRENCY"), "CNY"), "currency of the payment (default CURRENCY or CNY)")
	fs.StringVar(&o.eventID, "event-id", "", "the provider's event ID (default: a new random one)")
	fs.Int64Var(&o.amount, "amount", -1, "pay this many cents instead of the order's amount (a wrong amount is rejected_amount)")
	fs.BoolVar(&o.twice, "twice", false, "deliver the same event twice (the second is a duplicate)")
	fs.BoolVar(&o.late, "late", false, "post even when the order is no longer AWAITING_PAYMENT (the payment is refunded)")
	fs.BoolVar(&o.stale, "stale", false, "sign with a timestamp 10 minutes old (the API refuses it with 401)")
	fs.Usage = func() {
		fmt.Fprintln(stdout, "usage: paysim [flags] pay <order_id>")
		fs.PrintDefaults()
	}
	var rest []string
	if len(args) > 1 {
		rest = args[1:]
	}
	// Flags may come before, between and after the words.
	var words []string
	for {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(words) != 2 || words[0] != "pay" {
		fs.Usage()
		return errors.New("want: pay <order_id>")
	}
	if o.eventID == "" {
		o.eventID = "evt-" + randomHex(8)
	}
	return pay(ctx, &http.Client{Timeout: time.Minute}, o, words[1], stdout)
}

func pay(ctx context.Context, hc *http.Client, o options, orderID string, stdout io.Writer) error {
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

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
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
