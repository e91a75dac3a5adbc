package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// ProblemTypeBase prefixes every problem type; the last path element names the kind.
const ProblemTypeBase = "https://ordersaga.dev/problems/"

// kind is one kind of error: its problem type is ProblemTypeBase + kind, and it has one status and title.
type kind string

// Every kind of error the API answers with.
const (
	kindInvalidBody        kind = "invalid-body"            // 400: not JSON, unknown field, trailing data
	kindBodyTooLarge       kind = "body-too-large"          // 400: over 64 KiB
	kindInvalidField       kind = "invalid-field"           // 400: a field or path parameter out of its range
	kindInvalidKey         kind = "invalid-idempotency-key" // 400
	kindKeyReused          kind = "idempotency-key-reused"  // 422: same key, another body
	kindSoldOut            kind = "sold-out"                // 409
	kindLimitExceeded      kind = "limit-exceeded"          // 409: the user's units of a SKU would pass its per-user limit
	kindOrderPending       kind = "order-pending"           // 409 + Retry-After: still deciding
	kindAlreadyPaid        kind = "already-paid"            // 409: cancel of a paid order
	kindShardsDecrease     kind = "shards-decrease"         // 409: a PUT of the inventory with fewer stock_shards than the SKU has
	kindUnknownSKU         kind = "unknown-sku"             // 404
	kindOrderNotFound      kind = "order-not-found"         // 404
	kindNotFound           kind = "not-found"               // 404: no such route
	kindMethodNotAllowed   kind = "method-not-allowed"      // 405
	kindInvalidSignature   kind = "invalid-signature"       // 401: payment webhook
	kindUnauthorized       kind = "unauthorized"            // 401: admin token
	kindUnauthenticated    kind = "unauthenticated"         // 401: no caller, or a bad one (CALLER_IDENTITY)
	kindForbidden          kind = "forbidden"               // 403: an order for another user than the caller
	kindUnavailable        kind = "unavailable"             // 503 + Retry-After: Temporal, Redis or the database
	kindInLine             kind = "in-line"                 // 503 + Retry-After: a ticket in a SKU's line (position)
	kindStockUnavailable   kind = "stock-unavailable"       // 503 + Retry-After: the reservation failed for a reason other than stock
	kindNotReady           kind = "not-ready"               // 503: /readyz
	kindInternal           kind = "internal"                // 500
	kindUnsupportedPayment kind = "unsupported-payment"     // 400: a payment status other than succeeded
)

func (k kind) status() int {
	switch k {
	case kindInvalidBody, kindBodyTooLarge, kindInvalidField, kindInvalidKey, kindUnsupportedPayment:
		return http.StatusBadRequest
	case kindKeyReused:
		return http.StatusUnprocessableEntity
	case kindSoldOut, kindLimitExceeded, kindOrderPending, kindAlreadyPaid, kindShardsDecrease:
		return http.StatusConflict
	case kindUnknownSKU, kindOrderNotFound, kindNotFound:
		return http.StatusNotFound
	case kindMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case kindInvalidSignature, kindUnauthorized, kindUnauthenticated:
		return http.StatusUnauthorized
	case kindForbidden:
		return http.StatusForbidden
	case kindUnavailable, kindInLine, kindStockUnavailable, kindNotReady:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (k kind) title() string {
	switch k {
	case kindInvalidBody:
		return "The request body is not valid JSON for this endpoint"
	case kindBodyTooLarge:
		return "The request body is larger than 64 KiB"
	case kindInvalidField:
		return "A field of the request is not valid"
	case kindInvalidKey:
		return "The Idempotency-Key header is missing or not valid"
	case kindKeyReused:
		return "The Idempotency-Key was used with another request body"
	case kindSoldOut:
		return "Sold out"
	case kindLimitExceeded:
		return "Per-user limit exceeded"
	case kindOrderPending:
		return "The order is still being decided"
	case kindAlreadyPaid:
		return "The order is already paid"
	case kindShardsDecrease:
		return "A SKU's stock shards cannot decrease"
	case kindUnknownSKU:
		return "Unknown SKU"
	case kindOrderNotFound:
		return "Unknown order"
	case kindNotFound:
		return "No such resource"
	case kindMethodNotAllowed:
		return "Method not allowed"
	case kindInvalidSignature:
		return "The Payment-Signature is missing, malformed, wrong or stale"
	case kindUnauthorized:
		return "A valid admin bearer token is required"
	case kindUnauthenticated:
		return "The caller is not authenticated"
	case kindForbidden:
		return "The order is for another user than the caller"
	case kindUnavailable:
		return "A backing service is unavailable"
	case kindInLine:
		return "Waiting in line"
	case kindStockUnavailable:
		return "The stock could not be reserved right now"
	case kindNotReady:
		return "Not ready"
	case kindUnsupportedPayment:
		return "Unsupported payment status"
	}
	return "Internal error"
}

// Problem is an RFC 9457 problem details object, with the extension members this API uses.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// Field names the invalid field (invalid-field, and stock_shards of shards-decrease); SKU the SKU (sold-out,
	// limit-exceeded, unknown-sku, shards-decrease);
	// PerUserLimit and Held the SKU's per-user limit and the units the user already holds (limit-exceeded);
	// OrderID the order.
	Field        string            `json:"field,omitempty"`
	SKU          string            `json:"sku,omitempty"`
	PerUserLimit *int64            `json:"per_user_limit,omitempty"`
	Held         *int64            `json:"held,omitempty"`
	OrderID      string            `json:"order_id,omitempty"`
	Checks       map[string]string `json:"checks,omitempty"`
	// Position is the tickets ahead of the request's in the SKU's line, EstimatedWait the estimated seconds
	// until its turn (in-line).
	Position      *int64   `json:"position,omitempty"`
	EstimatedWait *float64 `json:"estimated_wait_seconds,omitempty"`

	kind kind
	// retryAfter is the answer's Retry-After in seconds (0: retryAfterSeconds).
	retryAfter int
}

func newProblem(k kind, detail string) *Problem {
	return &Problem{Type: ProblemTypeBase + string(k), Title: k.title(), Status: k.status(), Detail: detail, kind: k}
}

// retryable reports whether the answer carries Retry-After.
func (p *Problem) retryable() bool {
	switch p.kind {
	case kindOrderPending, kindUnavailable, kindInLine, kindStockUnavailable:
		return true
	}
	return false
}

// writeProblem answers with p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *Problem) {
	if p.retryable() {
		after := retryAfterSeconds
		if p.retryAfter > 0 {
			after = p.retryAfter
		}
		w.Header().Set("Retry-After", strconv.Itoa(after))
	}
	writeBody(w, p.Status, "application/problem+json", mustJSON(p))
}

// writeJSON answers with v as application/json and returns the bytes written.
func writeJSON(w http.ResponseWriter, status int, v any) []byte {
	b := mustJSON(v)
	writeBody(w, status, "application/json", b)
	return b
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// mustJSON encodes values made of strings, numbers, times and slices, which cannot fail to encode.
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("api: encode response: " + err.Error())
	}
	return buf.Bytes()
}

// problemsForUnmatched answers the requests no route matches with problem+json (404, or 405 with Allow)
// instead of the mux's plain text.
func problemsForUnmatched(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := &headerRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		switch rec.status {
		case http.StatusNotFound:
			writeProblem(w, newProblem(kindNotFound, "no route for "+r.Method+" "+r.URL.Path))
		case http.StatusMethodNotAllowed:
			w.Header().Set("Allow", rec.header.Get("Allow"))
			writeProblem(w, newProblem(kindMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path))
		default: // a redirect to the clean path
			mux.ServeHTTP(w, r)
		}
	})
}

// headerRecorder keeps the status and headers the mux's own 404/405 handler would write.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(status int)      { h.status = status }
