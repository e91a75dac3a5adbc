package api

import (
	"fmt"

	"github.com/ordersaga/ordersaga"
)

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
	lines := o.lines() // in the request's order: the field names its index
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

// lines are the order's lines, in the request's order (the placement service sorts them).
func (o orderRequest) lines() []ordersaga.Line {
	out := make([]ordersaga.Line, len(o.Lines))
	for i, l := range o.Lines {
		out[i] = ordersaga.Line{SKU: l.SKU, Qty: l.Qty}
	}
	return out
}

// validOrderID reports whether id can name an order (anything else is answered 404 without a lookup): the
// workflows' ID character set.
func validOrderID(id string) bool { return ordersaga.ValidOrderID(id) }
