package orderledger

import (
	"fmt"

	"github.com/ordersaga/ordersaga"
)

// NoOrder is the Status of ledger rows whose order line is not recorded: an order closed before its deduct
// leaves a RESTORE tombstone (0 units) and nothing else.
const NoOrder ordersaga.Status = ""

// Line is one order line as the ledger has it.
type Line struct {
	Status   ordersaga.Status // its order's status; NoOrder when no order line is recorded
	Qty      int64            // units ordered (0 for NoOrder)
	Deducted int64            // Σ qty of its DEDUCT rows: units taken
	Restored int64            // Σ qty of its RESTORE rows: units given back
}

// Kept is the units the line keeps out of stock: taken − given back.
func (l Line) Kept() int64 { return l.Deducted - l.Restored }

// Fault is how a line's ledger breaks the rule.
type Fault int

const (
	// None: the ledger agrees with the status.
	None Fault = iota
	// Twice: more units taken than ordered, or more given back than taken: a line deducted or restored
	// more than once (in units, whatever the rows).
	Twice
	// Status: taken and given back at most once, but what the line keeps contradicts its status (a PAID
	// line not all taken or partly given back, a closed unpaid line that keeps units, units taken by no
	// order line).
	Status
)

// Problem is a broken rule: the fault and its words.
type Problem struct {
	Fault Fault
	Text  string
}

// Check judges a line. Each line is taken at most once (0 or all its units) and given back at most once (0
// or all it took), and keeps, by status:
//
//	PAID                         all its units (taken, none given back)
//	EXPIRED, CANCELLED, REJECTED 0 (taken and given back, or never taken)
//	AWAITING_PAYMENT             all its units: the deduct records the order with its rows; 0 once its
//	                             compensation has committed and its close is not recorded yet
//	RESERVING                    0 or all (not recorded by the service: an open order either way)
//	NoOrder                      0, and nothing taken (a tombstone at most)
//
// It returns nil when the line agrees.
func Check(l Line) *Problem {
	switch {
	case l.Deducted < 0 || l.Restored < 0:
		return &Problem{Twice, fmt.Sprintf("negative ledger units (taken %d, given back %d)", l.Deducted, l.Restored)}
	case l.Status != NoOrder && l.Deducted > l.Qty:
		return &Problem{Twice, fmt.Sprintf("taken %d units of %d ordered: deducted more than once", l.Deducted, l.Qty)}
	case l.Restored > l.Deducted:
		return &Problem{Twice, fmt.Sprintf("given back %d units of %d taken: restored more than once", l.Restored, l.Deducted)}
	}
	taken := fmt.Sprintf("taken %d, given back %d of %d ordered", l.Deducted, l.Restored, l.Qty)
	if l.Status != NoOrder && l.Deducted != 0 && l.Deducted != l.Qty {
		return &Problem{Status, taken + ": a deduct takes all of a line's units or none"}
	}
	if l.Restored != 0 && l.Restored != l.Deducted {
		return &Problem{Status, taken + ": a restore gives back all a line took or nothing"}
	}
	// From here on: Deducted is 0 or Qty, Restored is 0 or Deducted.
	bad := ""
	switch l.Status {
	case ordersaga.StatusPaid:
		if l.Deducted != l.Qty || l.Restored != 0 {
			bad = "a PAID line keeps all its units"
		}
	case ordersaga.StatusExpired, ordersaga.StatusCancelled, ordersaga.StatusRejected:
		if l.Kept() != 0 {
			bad = "a closed unpaid line gives back all it took"
		}
	case ordersaga.StatusAwaitingPayment:
		if l.Deducted != l.Qty {
			bad = "an AWAITING_PAYMENT line has all its units taken"
		}
	case ordersaga.StatusReserving:
	case NoOrder:
		if l.Deducted != 0 {
			return &Problem{Status, fmt.Sprintf("taken %d, given back %d by no recorded order line", l.Deducted, l.Restored)}
		}
	default:
		return &Problem{Status, fmt.Sprintf("unknown status %q (%s)", l.Status, taken)}
	}
	if bad != "" {
		return &Problem{Status, taken + ": " + bad}
	}
	return nil
}
