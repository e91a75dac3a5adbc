package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ordersaga/ordersaga/internal/webhook"
)

// fate is what the client does with an accepted order.
type fate int

const (
	fatePay fate = iota
	fateCancel
	fateExpire
)

// How an order to pay is paid: once; twice, with two event IDs (the second is refunded: the order is PAID by
// another event); or first a payment of the wrong amount (refunded: rejected_amount), then the right one.
// Two in three orders to pay make a refund, so that every run records tens of them for the refund sender.
const (
	payOnce = iota
	payTwice
	payWrongFirst
	payKinds
)

// counts are the load's figures, updated by many goroutines.
type counts struct {
	placed, accepted, soldOut, paid, refunded, rejectedAmount, duplicate, cancelled, expireLeft, retries, gaveUp, badAnswers atomic.Int64
}

// load places orders through both APIs, round-robin, and pays, cancels or leaves each accepted order to
// expire. A request that fails (network error, 5xx, 409 order-pending) is retried with the same
// Idempotency-Key against the other API, as a real client does.
type load struct {
	run  string // the run's tag, in every key
	urls []string
	skus []string
	hc   *http.Client
	n    atomic.Int64
	rr   atomic.Int64
	c    counts

	mu       sync.Mutex
	keyOrder map[string]map[string]bool // Idempotency-Key -> order IDs answered 201 for it
	accepted map[string]string          // order ID -> its key
	refused  map[string]string          // Idempotency-Key -> the user of a request answered 409 (sold out, over the limit)
}

func newLoad(run string, urls, skus []string) *load {
	return &load{run: run, urls: urls, skus: skus,
		hc:       &http.Client{Timeout: 45 * time.Second},
		keyOrder: map[string]map[string]bool{}, accepted: map[string]string{}, refused: map[string]string{}}
}

// drive starts orders at rate per second until stop is closed and at least minOrders have started in this
// call, then waits for every started order's client to finish.
func (l *load) drive(ctx context.Context, rate float64, minOrders int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	stopped, started := false, 0
	for {
		if stopped && started >= minOrders {
			break
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-stop:
			stopped, stop = true, nil
			continue
		case <-tick.C:
		}
		i := l.n.Add(1)
		started++
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.order(ctx, i)
		}()
	}
	wg.Wait()
}

// order is one client: place with retries, then its fate.
func (l *load) order(ctx context.Context, i int64) {
	key := fmt.Sprintf("%s-%d", l.run, i)
	body := l.orderBody(i)
	l.c.placed.Add(1)
	ord, ok := l.place(ctx, key, body)
	if !ok {
		return
	}
	switch fate(rand.IntN(10)) % 3 {
	case fatePay:
		switch rand.IntN(payKinds) {
		case payTwice:
			l.pay(ctx, "evt-"+key, ord, ord.AmountCents)
			l.pay(ctx, "evt2-"+key, ord, ord.AmountCents)
		case payWrongFirst:
			l.pay(ctx, "evtw-"+key, ord, ord.AmountCents-1)
			l.pay(ctx, "evt-"+key, ord, ord.AmountCents)
		default:
			l.pay(ctx, "evt-"+key, ord, ord.AmountCents)
		}
	case fateCancel:
		l.cancel(ctx, ord.OrderID)
	default:
		l.c.expireLeft.Add(1)
	}
}

// orderBody is one or two lines of random SKUs, one or two units each, for one of 50 users.
func (l *load) orderBody(i int64) []byte {
	type line struct {
		SKU string `json:"sku"`
		Qty int    `json:"qty"`
	}
	first := rand.IntN(len(l.skus))
	lines := []line{{l.skus[first], 1 + rand.IntN(2)}}
	if rand.IntN(3) == 0 {
		lines = append(lines, line{l.skus[(first+1)%len(l.skus)], 1})
	}
	b, _ := json.Marshal(map[string]any{"user_id": "u-" + strconv.FormatInt(i%50, 10), "lines": lines})
	return b
}

// placed is what the client keeps of a 201.
type placed struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"`
}

// retryBudget bounds how long a client keeps retrying one request.
const retryBudget = 3 * time.Minute

// place POSTs the order until it gets a final answer; ok is a 201.
func (l *load) place(ctx context.Context, key string, body []byte) (p placed, ok bool) {
	l.untilAnswered(ctx, func() (int, []byte, error) {
		return l.post(ctx, "/v1/orders", body, map[string]string{"Idempotency-Key": key})
	}, func(code int, answer []byte) {
		switch {
		case code == http.StatusCreated:
			if json.Unmarshal(answer, &p) != nil || p.OrderID == "" {
				l.c.badAnswers.Add(1)
				return
			}
			l.recordAccepted(key, p.OrderID)
			ok = true
		case code == http.StatusConflict:
			l.c.soldOut.Add(1) // sold-out or limit-exceeded: the client gives up
			l.recordRefused(key, body)
		default:
			l.c.badAnswers.Add(1) // 4xx other than 409: the client's request is wrong, a bug of this tool
		}
	})
	return p, ok
}

// untilAnswered sends a request until it gets a final answer, and gives that answer to decide: a network
// error, a 5xx or a 409 order-pending (the API's "retry with the same key") is retried with backoff, against
// the next API, until the retry budget runs out (counted as gave_up).
func (l *load) untilAnswered(ctx context.Context, send func() (int, []byte, error), decide func(code int, answer []byte)) {
	deadline := time.Now().Add(retryBudget)
	for attempt := 0; time.Now().Before(deadline) && ctx.Err() == nil; attempt++ {
		code, answer, err := send()
		pending := code == http.StatusConflict && bytes.Contains(answer, []byte("order-pending"))
		if err == nil && code < 500 && !pending {
			decide(code, answer)
			return
		}
		l.backoff(ctx, attempt)
	}
	l.c.gaveUp.Add(1)
}

// recordRefused notes a 409 for key, with the user of its body (the verdict asks the database about the key).
func (l *load) recordRefused(key string, body []byte) {
	var b struct {
		UserID string `json:"user_id"`
	}
	_ = json.Unmarshal(body, &b)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused[key] = b.UserID
}

// refusedKeys is every key answered 409, with its user.
func (l *load) refusedKeys() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.refused)
}

// recordAccepted notes a 201 for key.
func (l *load) recordAccepted(key, orderID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keyOrder[key] == nil {
		l.keyOrder[key] = map[string]bool{}
		l.c.accepted.Add(1)
	}
	l.keyOrder[key][orderID] = true
	l.accepted[orderID] = key
}

// pay delivers a signed payment event of amount for the order (signed afresh at each attempt).
func (l *load) pay(ctx context.Context, eventID string, o placed, amount int64) {
	body, _ := json.Marshal(map[string]any{"event_id": eventID, "order_id": o.OrderID,
		"amount_cents": amount, "currency": "CNY", "status": "succeeded"})
	l.untilAnswered(ctx, func() (int, []byte, error) {
		hdr := map[string]string{webhook.Header: webhook.Sign(time.Now(), body, webhookSecret)}
		return l.post(ctx, "/v1/payments/webhook", body, hdr)
	}, func(code int, answer []byte) {
		var r struct{ Result string }
		_ = json.Unmarshal(answer, &r)
		switch {
		case code != http.StatusOK:
			l.c.badAnswers.Add(1)
		case r.Result == "applied":
			l.c.paid.Add(1)
		case r.Result == "refunded":
			l.c.refunded.Add(1) // the order expired, was cancelled or PAID by another event first
		case r.Result == "rejected_amount":
			l.c.rejectedAmount.Add(1) // the wrong amount, refunded
		case r.Result == "duplicate":
			l.c.duplicate.Add(1) // an earlier delivery, whose answer was lost (its API died), was recorded
		default:
			l.c.badAnswers.Add(1)
		}
	})
}

// cancel cancels the order.
func (l *load) cancel(ctx context.Context, orderID string) {
	l.untilAnswered(ctx, func() (int, []byte, error) {
		return l.post(ctx, "/v1/orders/"+orderID+"/cancel", nil, nil)
	}, func(code int, _ []byte) {
		if code == http.StatusOK {
			l.c.cancelled.Add(1)
		} else {
			l.c.badAnswers.Add(1)
		}
	})
}

// post sends one request to the next API in turn.
func (l *load) post(ctx context.Context, path string, body []byte, hdr map[string]string) (int, []byte, error) {
	url := l.urls[int(l.rr.Add(1))%len(l.urls)] + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

// backoff waits before a retry: 100 ms doubling to 2 s, jittered.
func (l *load) backoff(ctx context.Context, attempt int) {
	l.c.retries.Add(1)
	d := min(100*time.Millisecond<<min(attempt, 5), 2*time.Second)
	d = d/2 + rand.N(d/2+1)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// duplicateKeys is the number of keys answered 201 with more than one order ID.
func (l *load) duplicateKeys() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, ids := range l.keyOrder {
		if len(ids) > 1 {
			n++
		}
	}
	return n
}

// acceptedIDs is every order ID answered 201.
func (l *load) acceptedIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.accepted))
	for id := range l.accepted {
		out = append(out, id)
	}
	return out
}
