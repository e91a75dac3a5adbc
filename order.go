package ordersaga

import "time"

// Status is where an order is in its lifecycle (see docs/design.md).
type Status string

// Order statuses.
const (
	StatusReserving       Status = "RESERVING"
	StatusAwaitingPayment Status = "AWAITING_PAYMENT"
	StatusPaid            Status = "PAID"
	StatusExpired         Status = "EXPIRED"
	StatusCancelled       Status = "CANCELLED"
	StatusRejected        Status = "REJECTED"
)

// Final reports whether no transition leaves the status.
func (s Status) Final() bool {
	switch s {
	case StatusPaid, StatusExpired, StatusCancelled, StatusRejected:
		return true
	}
	return false
}

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case StatusReserving, StatusAwaitingPayment, StatusPaid, StatusExpired, StatusCancelled, StatusRejected:
		return true
	}
	return false
}

// Line is one SKU of an order. UnitPriceCents is set once the database has priced it.
type Line struct {
	SKU            string `json:"sku"`
	Qty            int64  `json:"qty"`
	UnitPriceCents int64  `json:"unit_price_cents"`
}

// Order is the order as the API shows it (docs/http-api.md, "The order").
type Order struct {
	OrderID      string     `json:"order_id"`
	UserID       string     `json:"user_id"`
	Status       Status     `json:"status"`
	Lines        []Line     `json:"lines"`
	AmountCents  int64      `json:"amount_cents"`
	PayBy        *time.Time `json:"pay_by"`
	PaidAt       *time.Time `json:"paid_at,omitempty"`
	ClosedReason string     `json:"closed_reason,omitempty"`
}

// PaymentResult is what became of one payment event (the webhook's `result`, and payments.result).
type PaymentResult string

// Payment results. Duplicate is only ever an answer, never stored: the first result of an event stands.
const (
	PaymentApplied        PaymentResult = "applied"
	PaymentDuplicate      PaymentResult = "duplicate"
	PaymentRefunded       PaymentResult = "refunded"
	PaymentRejectedAmount PaymentResult = "rejected_amount"
)

// Refunds reports whether a payment recorded with this result goes back to the payer: a late or second
// payment (refunded) and a payment of the wrong amount or currency (rejected_amount) are refunded at once,
// exactly once, whatever becomes of the order; only an applied payment is kept.
func (r PaymentResult) Refunds() bool {
	return r == PaymentRefunded || r == PaymentRejectedAmount
}
