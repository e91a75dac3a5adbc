package refunds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/webhook"
)

// The wire contract of a provider's refund API (docs/payments.md). HTTPProvider sends it; the simulator
// (internal/refundsim, `paysim serve`) serves it.
//
// POST {base}/v1/refunds with a Refund's JSON, signed like the payment webhook (internal/webhook's format)
// in SignatureHeader, the event ID in IdempotencyKeyHeader. Answers: 201 and an Answer (a new refund); 200,
// ReplayedHeader "true" and the first request's Answer (the key was seen with the same refund); 409
// CodeIdempotencyMismatch; 422 CodeRefused (for good, and for every later request with the key); 400
// CodeBadRequest; 401 CodeInvalidSignature; 503 CodeUnavailable (nothing executed). Errors are a Problem.
const (
	// RefundsPath is where refunds are posted, under the provider's base URL.
	RefundsPath = "/v1/refunds"
	// SignatureHeader carries t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>.
	SignatureHeader = "Refund-Signature"
	// IdempotencyKeyHeader carries the refund's event ID.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is "true" on a 200 that answers an earlier request's refund.
	ReplayedHeader = "Idempotent-Replayed"
	// StatusSucceeded is the status of an executed refund.
	StatusSucceeded = "succeeded"
	// MaxAnswerBytes is the most of an answer's body either end reads.
	MaxAnswerBytes = 64 << 10
)

// Problem codes: the provider's (the "code" of a Problem) and the adapter's own (CodeAnswerMismatch).
const (
	CodeRefused             = "refused"
	CodeIdempotencyMismatch = "idempotency-mismatch"
	CodeBadRequest          = "bad-request"
	CodeInvalidSignature    = "invalid-signature"
	CodeUnavailable         = "unavailable"
	// CodeAnswerMismatch: the provider answered a refund of another event, amount or currency than asked
	// (money moved differently: a person must look).
	CodeAnswerMismatch = "answer-mismatch"
)

// Answer is the provider's body for an executed refund (201, or 200 when replayed).
type Answer struct {
	RefundID    string    `json:"refund_id"`
	EventID     string    `json:"event_id"`
	OrderID     string    `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
}

// Problem is the provider's body for every answer that is not a refund.
type Problem struct {
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// HTTPConfig configures an HTTPProvider.
type HTTPConfig struct {
	// URL is the provider's base URL (REFUND_PROVIDER_URL): https, or http to a loopback address.
	URL string
	// Secret is the HMAC secret the requests are signed with (REFUND_PROVIDER_SECRET).
	Secret string
	// Timeout bounds each request, whatever the caller's context (0: config.DefaultRefundProviderTimeout).
	Timeout time.Duration
}

// HTTPProvider is the Provider of a refund API that follows the wire contract above. It never puts the
// secret or a signature in an error.
type HTTPProvider struct {
	endpoint string
	secret   string
	timeout  time.Duration
	client   *http.Client
}

var _ Provider = (*HTTPProvider)(nil)

// NewHTTPProvider checks c and returns the provider, or an error naming the variable that is wrong.
func NewHTTPProvider(c HTTPConfig) (*HTTPProvider, error) {
	base := strings.TrimRight(strings.TrimSpace(c.URL), "/")
	if base == "" {
		return nil, errors.New("refund provider: REFUND_PROVIDER_URL is empty: want the provider's base URL, e.g. https://payments.example.com")
	}
	if err := config.CheckProviderURL(base); err != nil {
		return nil, fmt.Errorf("refund provider: REFUND_PROVIDER_URL=%q: %w", config.RedactURL(base), err)
	}
	if strings.TrimSpace(c.Secret) == "" {
		return nil, errors.New("refund provider: REFUND_PROVIDER_SECRET is empty: want the HMAC secret the provider checks our signatures with")
	}
	if c.Timeout < 0 {
		return nil, fmt.Errorf("refund provider: REFUND_PROVIDER_TIMEOUT %s is negative", c.Timeout)
	}
	p := &HTTPProvider{endpoint: base + RefundsPath, secret: c.Secret, timeout: c.Timeout, client: newClient()}
	if p.timeout == 0 {
		p.timeout = config.DefaultRefundProviderTimeout
	}
	return p, nil
}

// newClient is a client of the provider's own (no state shared with other users of http.DefaultTransport)
// that follows no redirect: a refund is posted to the configured URL or not at all.
func newClient() *http.Client {
	return &http.Client{
		Transport:     http.DefaultTransport.(*http.Transport).Clone(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Send posts r, signed, with its event ID as the idempotency key, and maps the answer (Provider's contract):
// a receipt for 201 and a replayed 200; a *RefusedError for 400, 409, 422, an invalid r (never sent) and
// an answer about another refund than r (CodeAnswerMismatch); any other error is retryable, a timeout
// included (the refund may have been executed: the retry is answered the same refund).
func (p *HTTPProvider) Send(ctx context.Context, r Refund) (Receipt, error) {
	if err := r.Check(); err != nil {
		return Receipt{}, &RefusedError{Code: CodeBadRequest, Reason: err.Error()}
	}
	body, err := json.Marshal(r)
	if err != nil {
		return Receipt{}, fmt.Errorf("send refund %s: %w", r.EventID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return Receipt{}, fmt.Errorf("send refund %s: %w", r.EventID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(IdempotencyKeyHeader, r.EventID)
	req.Header.Set(SignatureHeader, webhook.Sign(time.Now(), body, p.secret))
	res, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Receipt{}, fmt.Errorf("send refund %s: no answer in time (timeout %s; it may have been executed: the retry is answered the same refund): %w",
				r.EventID, p.timeout, err)
		}
		return Receipt{}, fmt.Errorf("send refund %s: %w", r.EventID, err)
	}
	defer res.Body.Close()
	answer, readErr := readAnswer(res.Body)
	return p.interpret(r, res, answer, readErr)
}

// readAnswer reads at most MaxAnswerBytes of an answer; a longer one is an error.
func readAnswer(body io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, MaxAnswerBytes+1))
	if err == nil && len(b) > MaxAnswerBytes {
		err = fmt.Errorf("the answer is longer than %d bytes", MaxAnswerBytes)
	}
	return b, err
}

// interpret maps the provider's answer to r to Send's result.
func (p *HTTPProvider) interpret(r Refund, res *http.Response, body []byte, readErr error) (Receipt, error) {
	status := res.StatusCode
	switch status {
	case http.StatusCreated, http.StatusOK:
		return p.receipt(r, status, res.Header.Get(ReplayedHeader) == "true", body, readErr)
	case http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity:
		return Receipt{}, p.refusal(r, status, body, readErr)
	case http.StatusUnauthorized, http.StatusForbidden:
		return Receipt{}, fmt.Errorf("send refund %s: the provider refused our signature (%d%s): check REFUND_PROVIDER_SECRET, the secret the provider holds for us",
			r.EventID, status, p.detail(body, readErr))
	}
	return Receipt{}, fmt.Errorf("send refund %s: the provider answered %d%s", r.EventID, status, p.detail(body, readErr))
}

// receipt reads an executed refund's answer and checks it is r's.
func (p *HTTPProvider) receipt(r Refund, status int, replayed bool, body []byte, readErr error) (Receipt, error) {
	if readErr != nil {
		return Receipt{}, fmt.Errorf("send refund %s: the provider answered %d, unreadable: %w", r.EventID, status, readErr)
	}
	var a Answer
	if err := json.Unmarshal(body, &a); err != nil {
		return Receipt{}, fmt.Errorf("send refund %s: the provider answered %d, not a refund's JSON: %w", r.EventID, status, err)
	}
	if a.RefundID == "" {
		return Receipt{}, fmt.Errorf("send refund %s: the provider answered %d without a refund_id", r.EventID, status)
	}
	if a.EventID != r.EventID || a.AmountCents != r.AmountCents || a.Currency != r.Currency {
		return Receipt{}, &RefusedError{Code: CodeAnswerMismatch, Reason: p.scrub(fmt.Sprintf(
			"asked to refund %d %s of event %s; the provider answered %d with refund %s of %d %s of event %s",
			r.AmountCents, r.Currency, r.EventID, status, a.RefundID, a.AmountCents, a.Currency, a.EventID))}
	}
	return Receipt{Ref: a.RefundID, Replayed: replayed}, nil
}

// refusal is the permanent refusal of a 400, 409 or 422: the provider's code and reason, or "http-<status>".
func (p *HTTPProvider) refusal(r Refund, status int, body []byte, readErr error) *RefusedError {
	var pr Problem
	if readErr == nil {
		_ = json.Unmarshal(body, &pr)
	}
	e := &RefusedError{Code: p.scrub(pr.Code), Reason: p.scrub(pr.Reason)}
	if e.Code == "" {
		e.Code = fmt.Sprintf("http-%d", status)
	}
	if e.Reason == "" {
		e.Reason = fmt.Sprintf("the provider answered %d to refund %s without a readable reason", status, r.EventID)
	}
	return e
}

// detail is the provider's code and reason for an error message (empty when there is none).
func (p *HTTPProvider) detail(body []byte, readErr error) string {
	var pr Problem
	if readErr != nil || json.Unmarshal(body, &pr) != nil || pr.Code == "" && pr.Reason == "" {
		return ""
	}
	return " " + p.scrub(strings.TrimSpace(pr.Code+": "+pr.Reason))
}

// maxReason bounds the provider's text in an error (it may end up in a row).
const maxReason = 1000

// hexMAC is what a v1 signature looks like.
var hexMAC = regexp.MustCompile(`[0-9a-fA-F]{64}`)

// scrub removes from the provider's text what must never be in an error or a log: our secret and
// signatures (a provider may quote the header back), and bounds its length.
func (p *HTTPProvider) scrub(s string) string {
	s = strings.ReplaceAll(s, p.secret, "[secret]")
	s = hexMAC.ReplaceAllString(s, "[signature]")
	if len(s) > maxReason {
		s = strings.ToValidUTF8(s[:maxReason], "") + "…"
	}
	return s
}
