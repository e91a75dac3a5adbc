package workflows

import (
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersaga/ordersaga"
)

// TaskQueue is where order workflows and their activities run.
const TaskQueue = "ordersaga-orders"

// Names of the order workflow's messages.
const (
	// SignalPayment carries a PaymentSignal from the payment webhook.
	SignalPayment = "payment"
	// SignalCancel carries a CancelSignal from the cancel endpoint.
	SignalCancel = "cancel"
	// QueryStatus returns the order (ordersaga.Order) as the API shows it.
	QueryStatus = "status"
	// UpdateReservation waits until the reservation is decided and returns a Reservation; it is the update
	// of Update-with-Start, so the API answers 201/409 in the request that placed the order.
	UpdateReservation = "reservation"
	// UpdatePay applies a PaymentSignal like SignalPayment and returns its ordersaga.PaymentResult once
	// decided (the webhook's answer).
	UpdatePay = "pay"
	// UpdateCancel cancels like SignalCancel and returns the order once it is final and compensated
	// (status CANCELLED, or PAID/EXPIRED/REJECTED when it was too late to cancel).
	UpdateCancel = "requestCancel"
)

// Defaults and limits of an order.
const (
	DefaultPaymentTimeout = 15 * time.Minute
	// MaxPaymentTimeout bounds the deadline so a Redis marker (TTL 7 days) always outlives its order.
	MaxPaymentTimeout = 24 * time.Hour
)

// OrderWorkflowID is the workflow ID of an order: one order, one saga, whatever retries the client makes.
func OrderWorkflowID(orderID string) string { return "order-" + orderID }

// OrderInput starts an OrderWorkflow.
type OrderInput struct {
	OrderID  string
	UserID   string
	Currency string
	// Lines carry SKU and qty; the price comes from the database at deduct time.
	Lines []ordersaga.Line
	// PaymentTimeout is how long the order waits for payment once reserved (0 = DefaultPaymentTimeout).
	PaymentTimeout time.Duration
	// ConfirmInDeduct has the deduct drop the order's Redis holds once it committed, in the same local
	// activity, instead of a ConfirmLines step of its own (one step fewer on the accepted path). Starters set
	// it (orderclient.Place); the histories of workflows started before it existed carry false and replay
	// the separate step. A field of the input rather than a workflow.GetVersion marker, which would add to
	// every order a marker and a search-attribute upsert: the commands this change removes.
	ConfirmInDeduct bool
	// StuckAfter is the window of each step of the order that must succeed (0 = StuckAfter, at most
	// MaxStuckAfter). Tests shorten it instead of waiting two minutes.
	StuckAfter time.Duration
	// Shards is, per SKU whose Redis stock is split, its shard count when the order was placed: fixed for the
	// order's life, since every step of the order walks the same shards (redisstock/shards.go). A SKU not in
	// it is not split (the histories of workflows started before splits existed have none).
	Shards map[string]int `json:",omitempty"`
}

// PaymentSignal is a payment the provider reported for an order.
type PaymentSignal struct {
	EventID     string
	AmountCents int64
	Currency    string
}

// CancelSignal asks to cancel an order awaiting payment.
type CancelSignal struct {
	Reason string
}

// Reservation is the answer of UpdateReservation: the order, and when it was rejected, why.
type Reservation struct {
	Order ordersaga.Order
	// SoldOutSKU names the line that had too few units (set only when the order was rejected as sold out).
	SoldOutSKU string
	// UnknownSKU names a line whose SKU does not exist.
	UnknownSKU string
	// LimitExceeded names the line that would have passed its SKU's per-user limit, the limit and what the
	// user already held (set only when the order was rejected for it).
	LimitExceeded *ordersaga.LimitExceededError `json:",omitempty"`
}

// Custom search attributes upserted at every status change, for operators' list queries in the Temporal UI.
var (
	SAOrderStatus     = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
	SAOrderSKUs       = temporal.NewSearchAttributeKeyKeywordList("OrderSKUs")
	SAPaymentDeadline = temporal.NewSearchAttributeKeyTime("PaymentDeadline")
	// SAStuckStep names the step that must succeed (a compensation, a record, the application or refund of a
	// payment) once a window of it (StuckAfter) ended without success; unset once the step succeeds. Set on
	// order and refund workflows alike.
	SAStuckStep = temporal.NewSearchAttributeKeyKeyword("StuckStep")
)

// StuckAfter bounds each window of a step that must succeed (its activity's schedule-to-close; the server ends
// a window at the last attempt that fits in it): a window without success sets SAStuckStep and counts
// MetricStepStuck, and the step runs again in another window, until it succeeds (must_succeed.go).
const StuckAfter = 2 * time.Minute

// MaxStuckAfter bounds OrderInput.StuckAfter.
const MaxStuckAfter = time.Hour

// Metrics the workflows report through the worker's Temporal client (the worker's METRICS_ADDR serves them
// with the suffix _total and the tags namespace, task_queue and workflow_type).
const (
	// MetricStepStuck counts the windows (StuckAfter) of a step that must succeed that ended without success
	// (tag step: the activity).
	MetricStepStuck = "ordersaga_step_stuck"
	// MetricPaymentSignalsDropped counts the payment signals dropped for a field that breaks
	// ordersaga.CheckPayment (tag field).
	MetricPaymentSignalsDropped = "ordersaga_payment_signals_dropped"
)

// StartSearchAttributes are the search attributes of an order as it starts (OrderStatus RESERVING, OrderSKUs):
// a starter passes them with the start options, and a workflow started without them (the histories of
// starters before it) upserts the same.
func StartSearchAttributes(in OrderInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(startAttributes(in.Lines)...)
}

func startAttributes(lines []ordersaga.Line) []temporal.SearchAttributeUpdate {
	return []temporal.SearchAttributeUpdate{SAOrderSKUs.ValueSet(lineSKUs(lines)), SAOrderStatus.ValueSet(string(ordersaga.StatusReserving))}
}

// lineSKUs lists the lines' SKUs in order.
func lineSKUs(lines []ordersaga.Line) []string {
	skus := make([]string, len(lines))
	for i, l := range lines {
		skus[i] = l.SKU
	}
	return skus
}

// SearchAttributes lists the custom search attributes a namespace must have registered before orders run.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		SAOrderStatus.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SAOrderSKUs.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		SAPaymentDeadline.GetName(): enumspb.INDEXED_VALUE_TYPE_DATETIME,
		SAStuckStep.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}
