package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ordersaga/ordersaga"
)

// The Idempotency-Key's character set (docs/http-api.md); the limits of an order are ordersaga's rulebook
// (rules.go).
var idempotencyKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,255}$`)

// nameRule is the reason given for a user_id or sku that is not an ordersaga.ValidName.
const nameRule = "want 1-64 characters of A-Za-z0-9-_."

// orderRequest is the body of POST /v1/orders.
type orderRequest struct {
	UserID string        `json:"user_id"`
	Lines  []lineRequest `json:"lines"`
}

type lineRequest struct {
	SKU string `json:"sku"`
	Qty int64  `json:"qty"`
}

// fieldError names the invalid field of a request.
type fieldError struct {
	Field  string
	Reason string
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Reason }

// validate checks the body against docs/http-api.md's limits; the error names the first bad field.
func (o orderRequest) validate() *fieldError {
	if !ordersaga.ValidName(o.UserID) {
		return &fieldError{"user_id", nameRule}
	}
	lines := make([]ordersaga.Line, len(o.Lines)) // in the request's order: the field names its index
	for i, l := range o.Lines {
		lines[i] = ordersaga.Line{SKU: l.SKU, Qty: l.Qty}
	}
	p := ordersaga.NewOrderRules.CheckLines(lines)
	if p == nil {
		return nil
	}
	switch p.Fault {
	case ordersaga.FaultCount:
		return &fieldError{p.Field(), fmt.Sprintf("want 1-%d lines, got %d", ordersaga.MaxLines, p.Count)}
	case ordersaga.FaultQty:
		return &fieldError{p.Field(), fmt.Sprintf("want 1-%d, got %d", ordersaga.MaxQty, lines[p.Line].Qty)}
	case ordersaga.FaultDuplicate:
		return &fieldError{p.Field(), fmt.Sprintf("%s appears twice: SKUs must be distinct", lines[p.Line].SKU)}
	}
	return &fieldError{p.Field(), nameRule}
}

// lines are the order's lines sorted by SKU: the canonical form the fingerprint and the workflow get.
func (o orderRequest) lines() []ordersaga.Line {
	out := make([]ordersaga.Line, len(o.Lines))
	for i, l := range o.Lines {
		out[i] = ordersaga.Line{SKU: l.SKU, Qty: l.Qty}
	}
	slices.SortFunc(out, func(a, b ordersaga.Line) int { return strings.Compare(a.SKU, b.SKU) })
	return out
}

// fingerprint identifies the request's meaning: the same key with another fingerprint is refused (422).
// Lines count in SKU order, so the same lines listed in another order are the same request.
func (o orderRequest) fingerprint() string {
	var b strings.Builder
	b.WriteString(o.UserID)
	for _, l := range o.lines() {
		b.WriteString("\x00")
		b.WriteString(l.SKU)
		b.WriteString("\x00")
		b.WriteString(strconv.FormatInt(l.Qty, 10))
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// OrderID is the order ID of (user, Idempotency-Key) at a generation: "o-" and 24 hex characters of
// sha256(user \x00 key \x00 generation). The generation moves on only when that order was rejected.
func OrderID(userID, key string, generation int64) string {
	sum := sha256.Sum256([]byte(userID + "\x00" + key + "\x00" + strconv.FormatInt(generation, 10)))
	return "o-" + hex.EncodeToString(sum[:])[:24]
}

// validOrderID reports whether id can name an order (anything else is answered 404 without a lookup): the
// workflows' ID character set.
func validOrderID(id string) bool { return ordersaga.ValidOrderID(id) }
