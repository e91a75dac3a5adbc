package ordersaga

import (
	"errors"
	"fmt"
)

// The domain's errors: the stores return them, the activities turn them into typed Temporal errors, the API
// into problems. Match them with errors.Is and errors.As.
var (
	// ErrNotLoaded means Redis has no counter for the SKU: fail closed, never sell. Retryable.
	ErrNotLoaded = errors.New("sku not loaded in redis")
	// ErrCompensated means the step's compensation already ran (tombstone or release): a late
	// reserve/deduct must not take stock.
	ErrCompensated = errors.New("refused: order already compensated")
	// ErrUnknownSKU means the SKU is not in the inventory table.
	ErrUnknownSKU = errors.New("unknown sku")
	// ErrNotFound means a record does not exist.
	ErrNotFound = errors.New("not found")
	// ErrOrderNotPayable means a payment for an order that is not awaiting one (closed, restored or missing).
	ErrOrderNotPayable = errors.New("order is not awaiting payment")
	// ErrStockOutOfRange means a stock below 0 or above MaxStock.
	ErrStockOutOfRange = errors.New("stock out of range")
)

// SoldOutError names the SKU that did not have enough units.
type SoldOutError struct{ SKU string }

func (e *SoldOutError) Error() string { return fmt.Sprintf("sold out: %s", e.SKU) }

// UnknownSKUError names the SKU the inventory does not have; it matches ErrUnknownSKU with errors.Is.
type UnknownSKUError struct{ SKU string }

func (e *UnknownSKUError) Error() string { return fmt.Sprintf("unknown sku: %s", e.SKU) }

// Unwrap makes errors.Is(err, ErrUnknownSKU) true.
func (e *UnknownSKUError) Unwrap() error { return ErrUnknownSKU }

// IsSoldOut reports whether err is a sold-out outcome and which SKU caused it.
func IsSoldOut(err error) (string, bool) {
	var so *SoldOutError
	if errors.As(err, &so) {
		return so.SKU, true
	}
	return "", false
}

// LimitExceededError is the refusal of a line that would take the units one user holds or has bought of a
// SKU past the SKU's per-user limit: Held is what the user already held or bought (over its orders
// RESERVING, AWAITING_PAYMENT or PAID) before this order. Not remembered: the same request may succeed once
// the user's other orders are cancelled or expire.
type LimitExceededError struct {
	SKU   string
	Limit int64
	Held  int64
}

func (e *LimitExceededError) Error() string {
	return fmt.Sprintf("per-user limit of %s exceeded: limit %d, already held %d", e.SKU, e.Limit, e.Held)
}

// IsLimitExceeded reports whether err is a per-user-limit refusal, and which.
func IsLimitExceeded(err error) (*LimitExceededError, bool) {
	var le *LimitExceededError
	if errors.As(err, &le) {
		return le, true
	}
	return nil, false
}
