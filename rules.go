package ordersaga

import (
	"fmt"
	"strings"
)

// The rulebook of an order: its limits (docs/http-api.md, POST /v1/orders), the one check of its lines, and
// the text of a rejection. The API, the workflow and the store all check lines with CheckLines; each words
// its own error from the LineProblem.

// Limits of a new order.
const (
	MaxLines   = 20   // lines of an order (at least 1)
	MaxQty     = 1000 // units of one line (at least 1)
	MaxNameLen = 64   // characters of a user_id or a sku (at least 1, of A-Za-z0-9-_.)

	maxOrderIDLen = 64 // characters of an order ID (at least 1, of A-Za-z0-9-_.:)
)

// The character sets.
var (
	nameChars    = NewCharset("_.-")  // of a user_id or a sku
	orderIDChars = NewCharset("_.:-") // of an order ID
)

// ValidName reports whether s can be a user_id or a sku: 1-64 characters of A-Za-z0-9-_.
func ValidName(s string) bool { return nameChars.Holds(s, MaxNameLen) }

// ValidOrderID reports whether s can be an order ID (and so a workflow ID's tail): 1-64 characters of
// A-Za-z0-9-_.:
func ValidOrderID(s string) bool { return orderIDChars.Holds(s, maxOrderIDLen) }

// A Charset is the bytes a name may hold: A-Za-z0-9 and a few more. Every order request checks its names
// against one (its user_id, its SKUs, its Idempotency-Key); a regexp did it in 3.5 % of the local stack's CPU
// at 15,000 sold-out requests/s, a table in a fraction of that (BENCHMARKS.md, "What each change bought").
type Charset [256]bool

// NewCharset is A-Za-z0-9 and the bytes of extra.
func NewCharset(extra string) *Charset {
	var c Charset
	for b := range 256 {
		c[b] = 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9'
	}
	for i := range len(extra) {
		c[extra[i]] = true
	}
	return &c
}

// Holds reports whether s is 1 to maxLen bytes, each in c.
func (c *Charset) Holds(s string, maxLen int) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	for i := range len(s) {
		if !c[s[i]] {
			return false
		}
	}
	return true
}

// LineRules chooses how strictly CheckLines checks. Every set of rules wants at least one line, a non-empty
// sku and a positive qty on each, and distinct SKUs.
type LineRules struct {
	MaxLines int   // most lines; 0: no limit
	MaxQty   int64 // most units of a line; 0: no limit
	Names    bool  // a sku must be a ValidName (else any non-empty sku)
}

var (
	// NewOrderRules are the limits of an order being placed: the API's and the workflow's.
	NewOrderRules = LineRules{MaxLines: MaxLines, MaxQty: MaxQty, Names: true}
	// StoredOrderRules are what the store needs of any lines it deducts or restores: no upper limits and no
	// character set, so that no limit can ever refuse the compensation of an order placed under others.
	StoredOrderRules = LineRules{}
)

// LineFault is what is wrong with an order's lines.
type LineFault int

// Line faults, in the order CheckLines looks for them (the count first, then line by line: sku, qty,
// duplicate).
const (
	FaultCount     LineFault = iota + 1 // too few or too many lines
	FaultSKU                            // a sku is empty or not a ValidName
	FaultQty                            // a qty is below 1 or above the limit
	FaultDuplicate                      // a sku is on an earlier line too
)

// LineProblem is the first fault CheckLines found.
type LineProblem struct {
	Fault LineFault
	Line  int // index of the faulty line in the lines checked; -1 for FaultCount
	Count int // how many lines there are
}

// Field names the faulty field as the API does: "lines", "lines[i].sku" or "lines[i].qty".
func (p *LineProblem) Field() string {
	switch p.Fault {
	case FaultCount:
		return "lines"
	case FaultQty:
		return fmt.Sprintf("lines[%d].qty", p.Line)
	}
	return fmt.Sprintf("lines[%d].sku", p.Line)
}

// CheckLines returns the first fault of lines under r, or nil.
func (r LineRules) CheckLines(lines []Line) *LineProblem {
	if len(lines) < 1 || (r.MaxLines > 0 && len(lines) > r.MaxLines) {
		return &LineProblem{Fault: FaultCount, Line: -1, Count: len(lines)}
	}
	seen := make(map[string]bool, len(lines))
	for i, l := range lines {
		fault := LineFault(0)
		switch {
		case l.SKU == "" || (r.Names && !ValidName(l.SKU)):
			fault = FaultSKU
		case l.Qty < 1 || (r.MaxQty > 0 && l.Qty > r.MaxQty):
			fault = FaultQty
		case seen[l.SKU]:
			fault = FaultDuplicate
		}
		if fault != 0 {
			return &LineProblem{Fault: fault, Line: i, Count: len(lines)}
		}
		seen[l.SKU] = true
	}
	return nil
}

// MaxStockShards is the most Redis counters a SKU's stock may be split over (stock_shards; design.md, "A
// SKU's stock in shards"). A sold-out answer of a split SKU walks every one of them.
const MaxStockShards = 64

// MaxStock is the largest stock a SKU may have: 2^53, up to which every integer is exact in a Lua number (a
// double). The scripts read the stock with tonumber and write the counter from a Lua number, which Redis turns
// into the command's argument with %.17g (Redis ≤ 7.0) or, when it is an integer, exactly (7.2 on); both are
// exact up to here. Past it tonumber rounds (2^53+1 becomes 2^53, so Redis would promise a unit the database
// does not have, or the reverse), and from 1e17 Redis 7.0 writes "1e+17", which INCRBY and DECRBY refuse.
// (Lua's own tostring, %.14g, never sees a stock: no script concatenates one.)
const MaxStock int64 = 1 << 53

// CheckStock refuses a stock below 0 or above MaxStock (ErrStockOutOfRange), naming the SKU.
func CheckStock(sku string, stock int64) error {
	if stock < 0 || stock > MaxStock {
		return fmt.Errorf("%s: stock %d: want 0 to %d: %w", sku, stock, MaxStock, ErrStockOutOfRange)
	}
	return nil
}

// CheckStored checks what the store needs of an order's lines before it deducts or restores them
// (StoredOrderRules: no upper limits, so that a compensation is never refused); op names the step.
func CheckStored(op string, orderID string, lines []Line) error {
	if orderID == "" {
		return fmt.Errorf("%s: order_id is empty", op)
	}
	p := StoredOrderRules.CheckLines(lines)
	switch {
	case p == nil:
		return nil
	case p.Fault == FaultCount:
		return fmt.Errorf("%s %s: no lines", op, orderID)
	case p.Fault == FaultDuplicate:
		return fmt.Errorf("%s %s: sku %q appears twice", op, orderID, lines[p.Line].SKU)
	}
	l := lines[p.Line]
	return fmt.Errorf("%s %s: line sku=%q qty=%d: sku must be set and qty positive", op, orderID, l.SKU, l.Qty)
}

// CheckPerUserLimit refuses a per-user limit below 0 or above MaxStock (0 is no limit), naming the SKU.
func CheckPerUserLimit(sku string, limit int64) error {
	if limit < 0 || limit > MaxStock {
		return fmt.Errorf("%s: per_user_limit %d: want 0 (no limit) to %d", sku, limit, MaxStock)
	}
	return nil
}

// RejectKind is why an order was REJECTED: the words that begin its closed_reason.
type RejectKind string

// Reject kinds.
const (
	RejectSoldOut    RejectKind = "sold out"           // a line had too few units (SKU names it)
	RejectUnknownSKU RejectKind = "unknown sku"        // a line's SKU is not in the inventory (SKU names it)
	RejectLimit      RejectKind = "limit exceeded"     // a line would pass its SKU's per-user limit (SKU, Limit, Held)
	RejectFailed     RejectKind = "reservation failed" // anything else (Failure names the failure's kind)
)

// RejectReason is why an order was REJECTED. Its String is the order's closed_reason (docs/http-api.md), and
// ParseRejectReason reads that text back (orders closed long ago are only known by their stored text).
type RejectReason struct {
	Kind    RejectKind
	SKU     string // RejectSoldOut, RejectUnknownSKU
	Failure string // RejectFailed: a short kind ("Compensated", "timeout", ...), never an error chain
	Limit   int64  // RejectLimit: the SKU's per-user limit
	Held    int64  // RejectLimit: the units the user already held or bought
}

// String is the closed_reason: "sold out: <sku>", "unknown sku: <sku>", "limit exceeded: <sku> limit <n>
// held <n>" or "reservation failed: <kind>".
func (r RejectReason) String() string {
	switch r.Kind {
	case RejectFailed:
		return string(r.Kind) + ": " + r.Failure
	case RejectLimit:
		return fmt.Sprintf("%s: %s limit %d held %d", r.Kind, r.SKU, r.Limit, r.Held)
	}
	return string(r.Kind) + ": " + r.SKU
}

// ParseRejectReason reads a closed_reason written by RejectReason.String; ok is false for any other text.
func ParseRejectReason(s string) (r RejectReason, ok bool) {
	for _, k := range []RejectKind{RejectSoldOut, RejectUnknownSKU, RejectLimit, RejectFailed} {
		if rest, found := strings.CutPrefix(s, string(k)+": "); found {
			switch k {
			case RejectFailed:
				return RejectReason{Kind: k, Failure: rest}, true
			case RejectLimit:
				r := RejectReason{Kind: k}
				if n, err := fmt.Sscanf(rest, "%s limit %d held %d", &r.SKU, &r.Limit, &r.Held); err != nil || n != 3 {
					return RejectReason{}, false
				}
				return r, true
			}
			return RejectReason{Kind: k, SKU: rest}, true
		}
	}
	return RejectReason{}, false
}
