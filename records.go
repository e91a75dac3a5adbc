package ordersaga

import "time"

// The records the saga's steps exchange: the workflow passes them to its activities, the stores read and
// write them, the API shows them. They travel in Temporal payloads as JSON: a field's name never changes,
// or recorded histories stop replaying.

// OrderRecord is an order as the orders and order_lines tables hold it.
type OrderRecord struct {
	OrderID        string
	UserID         string
	Status         Status
	AmountCents    int64
	Currency       string
	PayBy          *time.Time
	PaidAt         *time.Time
	PaymentEventID string
	ClosedReason   string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Lines          []Line
}

// View is the order as the API shows it.
func (r OrderRecord) View() Order {
	return Order{
		OrderID: r.OrderID, UserID: r.UserID, Status: r.Status, Lines: r.Lines, AmountCents: r.AmountCents,
		PayBy: r.PayBy, PaidAt: r.PaidAt, ClosedReason: r.ClosedReason,
	}
}

// PaymentRecord is one payment event as the payments table holds it.
type PaymentRecord struct {
	EventID     string
	OrderID     string
	AmountCents int64
	Currency    string
	Result      PaymentResult
	Detail      string
	RefundedAt  *time.Time
	CreatedAt   time.Time
}

// DeductInput is one order's deduct: every line in one transaction, and the order record with it.
type DeductInput struct {
	OrderID  string
	UserID   string
	Currency string
	PayBy    time.Time
	Lines    []Line
}

// DeductResult is the order as the database now holds it (lines priced).
type DeductResult struct {
	Lines       []Line
	AmountCents int64
	// AlreadyDone is true when an earlier attempt had committed the deduct.
	AlreadyDone bool
}

// RestoreLine says what a restore did to one line.
type RestoreLine struct {
	SKU string
	// Qty is the units given back (0 for a tombstone or a duplicate).
	Qty       int64
	Tombstone bool
	Duplicate bool
	// Sold is true when the order is PAID: its units stay sold, nothing is given back.
	Sold bool
}

// ReserveOutcome says what a reserve did.
type ReserveOutcome string

// Outcomes of a reserve. Reserved and Duplicate hold units for the order in Redis; ReservedInDB holds
// nothing: Redis could not be reached, and the order's database deduct is the only gate.
const (
	Reserved     ReserveOutcome = "reserved"
	Duplicate    ReserveOutcome = "duplicate"
	ReservedInDB ReserveOutcome = "db_only"
)

// ReleaseOutcome says what a release did.
type ReleaseOutcome string

// Outcomes of a release.
const (
	Released          ReleaseOutcome = "released"
	AlreadyReleased   ReleaseOutcome = "already_released"
	TombstoneReleased ReleaseOutcome = "tombstone"
	// KeptSold: the order is paid and its confirmed hold stays confirmed (a release of a sold order).
	KeptSold ReleaseOutcome = "kept_sold"
)

// SKUTruth is what the database says one SKU's Redis counter must be: reconciliation, the cold load and the
// admin stock set read it from the database and give it to the Redis script that sets the counter.
type SKUTruth struct {
	Stock int64
	Known bool
	// PerUserLimit is the SKU's per-user limit (0: none).
	PerUserLimit int64
	// Shards is the number of Redis counters the SKU's stock is split over (stock_shards; 0 or 1: one).
	Shards int
	// Deducted are the orders (among those asked about and those with ledger rows newer than the watermark)
	// whose DEDUCT of the SKU stands, i.e. is not restored: their units are out of db.stock.
	Deducted []string
	// Pending are orders whose RESTORE of the SKU (qty > 0) stands while their release may still be to come:
	// the order is not final yet, or the restore is newer than the watermark.
	Pending []string
	// Open are the orders not final yet whose DEDUCT of the SKU stands: the counter set from this truth
	// counts their units as taken, so each gets a 'C' marker if it has none (repair_avail.lua), for its
	// release to give them back.
	Open []OpenDeduct
}

// OpenDeduct is an open order's standing deduct of one SKU.
type OpenDeduct struct {
	OrderID string
	Qty     int64
}
