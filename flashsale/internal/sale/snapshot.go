package sale

import (
	"time"

	"github.com/ordersaga/ordersaga"
)

// Snapshot is everything the verdict is judged on: the API's view of the run (inventory, every order request
// the run sent and every order it placed, every webhook answer) and, when the tool was given the database, the
// database's view.
// Check is a pure function of it, so tests can doctor one.
type Snapshot struct {
	TakenAt time.Time `json:"taken_at"`
	// Quiet is true when every order the run placed was final and no SKU had holds left.
	Quiet bool `json:"quiet"`
	// Grace is how long past its payment deadline an order may still be open (I5).
	Grace time.Duration `json:"grace"`
	// UnknownOutcomes counts buyers whose request never got a usable answer, even when asked again: an
	// order may exist that the API view does not know (the database view sees it).
	UnknownOutcomes int               `json:"unknown_outcomes"`
	SKUs            []SKUSnapshot     `json:"skus"`
	Orders          []OrderSnapshot   `json:"orders"`
	Payments        []PaymentSnapshot `json:"payments"`
	// Places is every order request the run sent, when and how it was answered (nil in a report of a flashsale
	// from before the log: the undersold check then judges nothing).
	Places *PlaceLog `json:"places,omitempty"`
	// Buyers is every sale buyer's visit: first arrival, final answer, waits (the fairness figures; nil in a
	// report of a flashsale from before it).
	Buyers *BuyerLog   `json:"buyers,omitempty"`
	DB     *DBSnapshot `json:"db,omitempty"`
	// Provider is the refund provider's report, read once no refund of the run was left to send; nil when the
	// refunds at the provider were not checked (ProviderSkipped says why, unless --provider-check off).
	Provider        *ProviderReport `json:"provider,omitempty"`
	ProviderSkipped string          `json:"provider_skipped,omitempty"`
}

// SKUSnapshot is one SKU: the stock the run set, and the inventory as GET /v1/inventory showed it at the end
// (the API's own body).
type SKUSnapshot struct {
	SKU     string `json:"sku"`
	Initial int64  `json:"initial"`
	// PerUserLimit is the per-user limit the run set (0 = none): no user may hold more units of the SKU.
	PerUserLimit int64 `json:"per_user_limit,omitempty"`
	// StartAvailable is redis_available as the PUT that set the stock answered: the stock less the holds left
	// by orders from before the run (a SKU of another run's, --sku-prefix), which the run's requests cannot
	// account for. nil when Redis had not loaded the SKU, and in a report from before the field.
	StartAvailable *int64                   `json:"start_available,omitempty"`
	API            *ordersaga.InventoryBody `json:"api,omitempty"`
	// StockShards is stock_shards as GET /v1/inventory showed it at the end: the Redis counters the SKU's
	// stock is split over (0 when the body has none: a server from before stock shards, or unreadable).
	StockShards int `json:"stock_shards,omitempty"`
}

// Order actions the run takes on an accepted order.
const (
	ActionPay     = "pay"
	ActionCancel  = "cancel"
	ActionLatePay = "late_pay"
	ActionExpire  = "expire"
	// ActionWrongThenPay: a payment of the wrong amount (refunded), then the right one (applied).
	ActionWrongThenPay = "wrong_then_pay"
	// ActionWrongPay: only a payment of the wrong amount (refunded); the order expires.
	ActionWrongPay = "wrong_pay"
)

// OrderSnapshot is one order the run placed (answered 201) and what became of it.
type OrderSnapshot struct {
	OrderID string           `json:"order_id"`
	Key     string           `json:"key"`
	UserID  string           `json:"user_id"`
	Lines   []ordersaga.Line `json:"lines"`
	PayBy   *time.Time       `json:"pay_by,omitempty"`
	Action  string           `json:"action"`
	// KeyOrderIDs is the order ID of every 201 answer to this Idempotency-Key (the first and any resend).
	KeyOrderIDs []string `json:"key_order_ids"`
	// Status is the order's last known status (GET /v1/orders/{id}); "" when it could not be read.
	Status ordersaga.Status `json:"status"`
	// CancelStatus is the status the cancel endpoint answered with ("" when not cancelled or it failed).
	CancelStatus ordersaga.Status `json:"cancel_status,omitempty"`
}

// PaymentSnapshot is one payment event the run sent and every 200 answer it got.
type PaymentSnapshot struct {
	EventID string `json:"event_id"`
	OrderID string `json:"order_id"`
	Late    bool   `json:"late"`
	// WrongAmount marks a payment sent with the wrong amount on purpose (it must be refunded).
	WrongAmount bool     `json:"wrong_amount,omitempty"`
	AmountCents int64    `json:"amount_cents"`
	Currency    string   `json:"currency"`
	Results     []string `json:"results"`
	// Failed counts deliveries that got no 200 answer (transport error, 5xx): the event may have been
	// applied without the run seeing the answer.
	Failed int `json:"failed,omitempty"`
}

// DBSnapshot is the database's view of the run's SKUs.
type DBSnapshot struct {
	Stock map[string]int64 `json:"stock"`
	// Baseline is Σ DEDUCT − Σ RESTORE of each SKU when the run started (0 for fresh SKUs).
	Baseline map[string]int64 `json:"baseline"`
	Ledger   []LedgerRow      `json:"ledger"`
	Orders   []DBOrder        `json:"orders"`
	Payments []DBPayment      `json:"payments"`
}

// LedgerRow is one stock_ledger row.
type LedgerRow struct {
	OrderID string `json:"order_id"`
	SKU     string `json:"sku"`
	Op      string `json:"op"`
	Qty     int64  `json:"qty"`
}

// DBOrder is one orders row with its lines.
type DBOrder struct {
	OrderID     string           `json:"order_id"`
	UserID      string           `json:"user_id,omitempty"`
	Status      ordersaga.Status `json:"status"`
	AmountCents int64            `json:"amount_cents"`
	Currency    string           `json:"currency"`
	PayBy       *time.Time       `json:"pay_by,omitempty"`
	Lines       []ordersaga.Line `json:"lines"`
}

// DBPayment is one payments row. It is a refund iff Refunded (refunded_at is set: results refunded and
// rejected_amount); an applied row that is not refunded is money kept for its order.
type DBPayment struct {
	EventID     string `json:"event_id"`
	OrderID     string `json:"order_id"`
	Result      string `json:"result"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"`
	Refunded    bool   `json:"refunded"`
	// RefundSent: the refund was handed to the provider (refund_sent_at set), which named it RefundRef.
	RefundSent bool   `json:"refund_sent,omitempty"`
	RefundRef  string `json:"refund_ref,omitempty"`
	// RefundRefused: the provider refused the refund for good (refund_refused_at set).
	RefundRefused bool `json:"refund_refused,omitempty"`
}

// kept reports whether the payment is money kept for its order.
func (p DBPayment) kept() bool { return p.Result == string(ordersaga.PaymentApplied) && !p.Refunded }
