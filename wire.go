package ordersaga

import "time"

// The bodies of the order API (docs/http-api.md) beside the order view (Order): the service writes and reads
// them through internal/api, and the tools that speak the API from outside (paysim, the flash-sale tool)
// use these same types without linking the server.

// PaymentEvent is the body of POST /v1/payments/webhook.
type PaymentEvent struct {
	EventID     string `json:"event_id"`
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
	Status      string `json:"status"`
}

// PaymentSucceeded is the only payment status the webhook acts on.
const PaymentSucceeded = "succeeded"

// PaymentAnswer is the webhook's 200 body.
type PaymentAnswer struct {
	Result  PaymentResult `json:"result"`
	OrderID string        `json:"order_id"`
}

// InventoryBody is the body of GET and PUT /v1/inventory/{sku}.
type InventoryBody struct {
	SKU     string `json:"sku"`
	DBStock int64  `json:"db_stock"`
	// RedisAvailable is null when the SKU is not loaded in Redis; Drift is null then too (there is nothing
	// to compare, and a missing counter is never read as 0).
	RedisAvailable *int64 `json:"redis_available"`
	// Holds is null while Redis cannot be reached (the view is then the database's alone); HeldUnits reads it.
	Holds      *int64 `json:"holds"`
	PriceCents int64  `json:"price_cents"`
	// PerUserLimit is the units of the SKU one user may hold or buy (0: no limit).
	PerUserLimit int64  `json:"per_user_limit"`
	Drift        *int64 `json:"drift"`
	// StockShards is the number of Redis counters the SKU's stock is split over (1: one; MaxStockShards).
	StockShards int `json:"stock_shards"`
}

// HeldUnits is Holds, 0 when null (Redis unreachable: nothing is known to be held).
func (b InventoryBody) HeldUnits() int64 {
	if b.Holds == nil {
		return 0
	}
	return *b.Holds
}

// OrderPayments is the body of GET /v1/orders/{id}/payments: every payment event of the order, in the order
// recorded, with what became of its refund.
type OrderPayments struct {
	OrderID  string        `json:"order_id"`
	Payments []PaymentView `json:"payments"`
}

// PaymentView is one payment event of an order as the API shows it.
type PaymentView struct {
	EventID     string        `json:"event_id"`
	Result      PaymentResult `json:"result"`
	AmountCents int64         `json:"amount_cents"`
	Currency    string        `json:"currency"`
	RecordedAt  time.Time     `json:"recorded_at"`
	// Refund is null for a payment kept for the order (applied).
	Refund *RefundView `json:"refund"`
}

// The states of a refund (RefundView.Status).
const (
	// RefundPending: recorded, not yet accepted by the provider (the sender sends it).
	RefundPending = "pending"
	// RefundSent: the provider executed it; ProviderRef is its name for it.
	RefundSent = "sent"
	// RefundRefused: the provider refused it for good; a person decides (docs/payments.md).
	RefundRefused = "refused"
)

// RefundView is the refund of a payment event: recorded once with the payment, then sent to the provider.
type RefundView struct {
	Status      string     `json:"status"`
	RecordedAt  time.Time  `json:"recorded_at"`
	SentAt      *time.Time `json:"sent_at,omitempty"`
	ProviderRef string     `json:"provider_ref,omitempty"`
	RefusedAt   *time.Time `json:"refused_at,omitempty"`
	Reason      string     `json:"reason,omitempty"`
}
