package sale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

// Client speaks the order API (docs/http-api.md).
type Client struct {
	base   string
	pool   *connPool // a plain http:// target: the tool's own connections (conn.go)
	hc     *http.Client
	tmo    time.Duration
	admin  string
	secret string
	now    func() time.Time
}

// NewClient returns a client of the API at base. maxConns bounds the connections kept open; secret is the
// webhook secret (the first of a comma-separated list signs).
func NewClient(base, adminToken, webhookSecret string, maxConns int, timeout time.Duration) *Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	secret, _, _ := strings.Cut(webhookSecret, ",")
	return &Client{
		base:   strings.TrimRight(base, "/"),
		pool:   newConnPool(base, maxConns),
		hc:     &http.Client{Transport: tr, Timeout: timeout},
		tmo:    timeout,
		admin:  adminToken,
		secret: strings.TrimSpace(secret),
		now:    time.Now,
	}
}

// Close drops the idle connections.
func (c *Client) Close() {
	if c.pool != nil {
		c.pool.close()
	}
	c.hc.CloseIdleConnections()
}

// Problem is the part of an application/problem+json body the tool reads. It stays the tool's own on purpose:
// the API's (internal/api.Problem) carries the server's unexported kind and lives in the HTTP server's package,
// which links Temporal, the stores and Redis; the tool only decodes these members and ignores the rest.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// SKU is the SKU a sold-out or limit-exceeded answer names (the undersold check judges that line).
	SKU string `json:"sku,omitempty"`
	// Field is the request member an invalid-field answer names (a PUT's stock_shards, per_user_limit, …).
	Field string `json:"field,omitempty"`
	// Position is a buyer's place in the line, when a 503 says it (issue 45; absent today).
	Position *int64 `json:"position,omitempty"`
}

// soldOut reports whether the problem is the sold-out kind (the last path element of its type names the kind).
func soldOut(p Problem) bool { return strings.HasSuffix(p.Type, "/sold-out") }

// inLine reports whether an answer is a place in the SKU's line (503 …/in-line): nothing was done for the key
// but its ticket.
func inLine(a Answer) bool {
	return a.Status == http.StatusServiceUnavailable && strings.HasSuffix(a.Problem.Type, "/in-line")
}

// limitExceeded reports whether the problem is the per-user limit's refusal (409 …/limit-exceeded).
func limitExceeded(p Problem) bool { return strings.HasSuffix(p.Type, "/limit-exceeded") }

// refused reports whether a 409 is a final refusal of the order (sold out, or the user's limit reached): not
// remembered by the API, not a key still deciding, and not an error.
func refused(a Answer) bool {
	return a.Status == http.StatusConflict && (soldOut(a.Problem) || limitExceeded(a.Problem))
}

// Answer is one HTTP exchange: status, headers of interest and the decoded body.
type Answer struct {
	Status     int
	Replayed   bool
	RetryAfter time.Duration
	// HasRetryAfter is true when the answer carried a Retry-After of whole seconds (RetryAfter, maybe 0).
	HasRetryAfter bool
	// Position is the place in the line the answer gave (the Queue-Position header, else the problem's
	// position member); -1 when it gave none.
	Position int64
	// Problem is the application/problem+json body of a 4xx or 5xx answer.
	Problem Problem
	Body    []byte
	Latency time.Duration
}

// APIError is a non-2xx answer the caller did not expect.
type APIError struct {
	Op     string
	Status int
	Problem
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: HTTP %d %s: %s", e.Op, e.Status, e.Title, e.Detail)
}

func (c *Client) do(ctx context.Context, method, path string, hdr http.Header, body []byte) (Answer, error) {
	if body != nil {
		hdr = hdr.Clone()
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Set("Content-Type", "application/json")
	}
	start := time.Now()
	ex, err := c.exchange(ctx, method, path, hdr, body)
	a := Answer{Status: ex.status, Body: ex.body, Latency: time.Since(start), Position: -1}
	if err != nil {
		return a, err
	}
	a.Replayed = ex.header.Get("Idempotent-Replayed") == "true"
	if ra := ex.header.Get("Retry-After"); ra != "" {
		if secs, perr := strconv.Atoi(ra); perr == nil && secs >= 0 {
			a.RetryAfter, a.HasRetryAfter = time.Duration(secs)*time.Second, true
		}
	}
	if ex.status >= 400 {
		_ = json.Unmarshal(ex.body, &a.Problem)
	}
	if qp, perr := strconv.ParseInt(ex.header.Get("Queue-Position"), 10, 64); perr == nil && qp >= 0 {
		a.Position = qp
	} else if pp := a.Problem.Position; pp != nil && *pp >= 0 {
		a.Position = *pp
	}
	return a, nil
}

// exchange sends one request and reads its answer: over the tool's own connections to a plain http://
// target, else through net/http.
func (c *Client) exchange(ctx context.Context, method, path string, hdr http.Header, body []byte) (exchanged, error) {
	if c.pool != nil {
		return c.pool.exchange(ctx, method, path, hdr, body, c.tmo)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return exchanged{}, err
	}
	maps.Copy(req.Header, hdr)
	resp, err := c.hc.Do(req)
	if err != nil {
		return exchanged{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return exchanged{status: resp.StatusCode, header: resp.Header, body: raw}, err
}

func (c *Client) want(op string, a Answer, err error, status int, into any) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if a.Status != status {
		return &APIError{Op: op, Status: a.Status, Problem: a.Problem}
	}
	if into != nil {
		if err := json.Unmarshal(a.Body, into); err != nil {
			return fmt.Errorf("%s: decode answer: %w", op, err)
		}
	}
	return nil
}

// PutInventory sets a SKU's stock, price, per-user limit and stock shards (admin). A limit of 0 is left out of
// the body (absent = no limit, docs/http-api.md), so a run without a limit works against a server that predates
// it; so is a stockShards of 0 (absent = the SKU keeps its shards, 1 for a new SKU). With a limit or shards, the
// answer must show them back (per_user_limit, stock_shards): a server that ignores the field would not apply it.
func (c *Client) PutInventory(ctx context.Context, sku string, stock, priceCents, perUserLimit int64, stockShards int) (ordersaga.InventoryBody, error) {
	body := putInventoryBody(stock, priceCents, perUserLimit, stockShards)
	a, err := c.do(ctx, http.MethodPut, "/v1/inventory/"+url.PathEscape(sku), http.Header{"Authorization": {"Bearer " + c.admin}}, body)
	var inv ordersaga.InventoryBody
	if err := c.want("put inventory "+sku, a, err, http.StatusOK, &inv); err != nil {
		if a.Status != http.StatusBadRequest {
			return inv, err
		}
		// A server from before a member refuses it as an unknown field (naming no field of the problem).
		var newer []string
		if perUserLimit > 0 && (a.Problem.Field == "" || a.Problem.Field == "per_user_limit") {
			newer = append(newer, "per_user_limit")
		}
		if stockShards > 0 && (a.Problem.Field == "" || a.Problem.Field == "stock_shards") {
			newer = append(newer, "stock_shards")
		}
		if len(newer) > 0 {
			return inv, fmt.Errorf("%w (does the server take %s yet?)", err, strings.Join(newer, " and "))
		}
		return inv, err
	}
	if perUserLimit > 0 {
		got, ok := PerUserLimitOf(a.Body)
		if !ok || got != perUserLimit {
			return inv, fmt.Errorf("put inventory %s: per_user_limit %d sent, the answer shows %s: the server does not keep the per-user limit", sku, perUserLimit, limitText(got, ok))
		}
	}
	if stockShards > 0 {
		got, ok := StockShardsOf(a.Body)
		if !ok || got != stockShards {
			return inv, fmt.Errorf("put inventory %s: stock_shards %d sent, the answer shows %s: the server does not keep the stock shards", sku, stockShards, limitText(int64(got), ok))
		}
	}
	return inv, nil
}

// putInventoryBody is the body of PUT /v1/inventory: stock and price, and the per-user limit and the stock
// shards when above 0.
func putInventoryBody(stock, priceCents, perUserLimit int64, stockShards int) []byte {
	req := map[string]int64{"stock": stock, "price_cents": priceCents}
	if perUserLimit > 0 {
		req["per_user_limit"] = perUserLimit
	}
	if stockShards > 0 {
		req["stock_shards"] = int64(stockShards)
	}
	body, _ := json.Marshal(req)
	return body
}

// StockShardsOf reads the stock_shards member of an inventory body (the Redis counters the SKU's stock is split
// over); ok is false when the body has none (a server from before stock shards) or it is not an integer.
func StockShardsOf(body []byte) (shards int, ok bool) {
	var v struct {
		StockShards *int `json:"stock_shards"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.StockShards == nil {
		return 0, false
	}
	return *v.StockShards, true
}

// PerUserLimitOf reads the per_user_limit member of an inventory body; ok is false when the body has none (a
// server from before the per-user limit) or it is not an integer.
func PerUserLimitOf(body []byte) (limit int64, ok bool) {
	var v struct {
		PerUserLimit *int64 `json:"per_user_limit"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.PerUserLimit == nil {
		return 0, false
	}
	return *v.PerUserLimit, true
}

func limitText(v int64, ok bool) string {
	if !ok {
		return "none"
	}
	return strconv.FormatInt(v, 10)
}

// GetInventory reads a SKU's inventory.
func (c *Client) GetInventory(ctx context.Context, sku string) (ordersaga.InventoryBody, error) {
	inv, _, err := c.GetInventoryShards(ctx, sku)
	return inv, err
}

// GetInventoryShards reads a SKU's inventory and its stock_shards (0 when the body has none: a server from
// before stock shards).
func (c *Client) GetInventoryShards(ctx context.Context, sku string) (ordersaga.InventoryBody, int, error) {
	a, err := c.do(ctx, http.MethodGet, "/v1/inventory/"+url.PathEscape(sku), nil, nil)
	var inv ordersaga.InventoryBody
	if err := c.want("get inventory "+sku, a, err, http.StatusOK, &inv); err != nil {
		return inv, 0, err
	}
	shards, _ := StockShardsOf(a.Body)
	return inv, shards, nil
}

// OrderRequest is the body of POST /v1/orders. It stays the tool's own: the API's request type is
// unexported (internal/api decodes it strictly and validates it), and the tool builds it from the
// ordersaga.Line it records.
type OrderRequest struct {
	UserID string           `json:"user_id"`
	Lines  []ordersaga.Line `json:"lines"`
}

// orderBody is the body of a one-line order of qty units of sku by userID.
func orderBody(userID, sku string, qty int64) []byte {
	b, _ := json.Marshal(OrderRequest{UserID: userID, Lines: []ordersaga.Line{{SKU: sku, Qty: qty}}})
	return b
}

type orderLineRequest struct {
	SKU string `json:"sku"`
	Qty int64  `json:"qty"`
}

// MarshalJSON leaves out unit_price_cents: the API rejects unknown fields and prices orders itself.
func (r OrderRequest) MarshalJSON() ([]byte, error) {
	lines := make([]orderLineRequest, len(r.Lines))
	for i, l := range r.Lines {
		lines[i] = orderLineRequest{SKU: l.SKU, Qty: l.Qty}
	}
	return json.Marshal(struct {
		UserID string             `json:"user_id"`
		Lines  []orderLineRequest `json:"lines"`
	}{r.UserID, lines})
}

// PlaceOrder posts an order with an Idempotency-Key. The answer is returned whatever its status; order is
// decoded on 201 (and on a replayed 201).
func (c *Client) PlaceOrder(ctx context.Context, key string, body []byte) (Answer, ordersaga.Order, error) {
	a, err := c.do(ctx, http.MethodPost, "/v1/orders", http.Header{"Idempotency-Key": {key}}, body)
	var o ordersaga.Order
	if err == nil && a.Status == http.StatusCreated {
		if derr := json.Unmarshal(a.Body, &o); derr != nil {
			return a, o, fmt.Errorf("place order: decode answer: %w", derr)
		}
	}
	return a, o, err
}

// GetOrder reads an order.
func (c *Client) GetOrder(ctx context.Context, id string) (ordersaga.Order, error) {
	a, err := c.do(ctx, http.MethodGet, "/v1/orders/"+url.PathEscape(id), nil, nil)
	var o ordersaga.Order
	return o, c.want("get order "+id, a, err, http.StatusOK, &o)
}

// CancelOrder cancels an order; the answer is returned with the order on 200.
func (c *Client) CancelOrder(ctx context.Context, id string) (Answer, ordersaga.Order, error) {
	a, err := c.do(ctx, http.MethodPost, "/v1/orders/"+url.PathEscape(id)+"/cancel", nil, nil)
	var o ordersaga.Order
	if err == nil && a.Status == http.StatusOK {
		if derr := json.Unmarshal(a.Body, &o); derr != nil {
			return a, o, fmt.Errorf("cancel order: decode answer: %w", derr)
		}
	}
	return a, o, err
}

// Pay delivers a signed payment event; the answer's result is decoded on 200.
// The body is the API's own ordersaga.PaymentEvent, signed by internal/webhook as the service verifies it.
func (c *Client) Pay(ctx context.Context, ev ordersaga.PaymentEvent) (Answer, ordersaga.PaymentAnswer, error) {
	body, _ := json.Marshal(ev)
	hdr := http.Header{webhook.Header: {webhook.Sign(c.now(), body, c.secret)}}
	a, err := c.do(ctx, http.MethodPost, "/v1/payments/webhook", hdr, body)
	var w ordersaga.PaymentAnswer
	if err == nil && a.Status == http.StatusOK {
		if derr := json.Unmarshal(a.Body, &w); derr != nil {
			return a, w, fmt.Errorf("webhook: decode answer: %w", derr)
		}
	}
	return a, w, err
}

// errorKind names an exchange's failure for the error counts.
func errorKind(a Answer, err error) string {
	var ne net.Error
	switch {
	case err == nil:
		if a.Problem.Type != "" {
			return fmt.Sprintf("http_%d %s", a.Status, a.Problem.Type)
		}
		return fmt.Sprintf("http_%d", a.Status)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "transport"
}
