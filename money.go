package ordersaga

import (
	"errors"
	"fmt"
	"math/bits"
)

// The money rules: the bound of a price, the bound of an amount, the one checked computation of an order's
// amount, and the one check of a payment's fields (the webhook, the payment signal and the pay update all use
// CheckPayment; the API, the inventory store and the payments store the bounds).

// Bounds of money, in cents.
const (
	// MaxPriceCents is the largest unit price a SKU may have: 10^12 cents (10 billion units of the currency),
	// small enough that the largest order (MaxLines lines of MaxQty units at this price) fits MaxAmountCents.
	MaxPriceCents int64 = 1_000_000_000_000
	// MaxAmountCents is the largest amount an order or a payment may have: MaxLines × MaxQty × MaxPriceCents
	// (2 × 10^16), so that a sum of up to 461 of them still fits an int64 (a day's totals are summed by the
	// money check, which sums as exact decimals besides).
	MaxAmountCents int64 = MaxLines * MaxQty * MaxPriceCents

	// MaxEventIDLen is the longest payment event ID (payments.event_id VARCHAR(255)).
	MaxEventIDLen = 255
	// maxPaymentOrderIDLen is the longest order ID a payment may name (orders.order_id VARCHAR(64)).
	maxPaymentOrderIDLen = 64
)

// ErrAmountOverflow means an amount that does not fit an int64 or passes MaxAmountCents.
var ErrAmountOverflow = errors.New("amount out of range")

// CheckPrice refuses a unit price below 0 or above MaxPriceCents, naming the SKU and the field.
func CheckPrice(sku string, cents int64) error {
	if cents < 0 || cents > MaxPriceCents {
		return fmt.Errorf("%s: price_cents %d: want 0 to %d", sku, cents, MaxPriceCents)
	}
	return nil
}

// Amount is the sum of qty × unit price over the lines, checked: ErrAmountOverflow when a product or the sum
// does not fit an int64 or passes MaxAmountCents, or a qty or price is negative (never an amount that wrapped).
func Amount(lines []Line) (int64, error) {
	var sum uint64
	for _, l := range lines {
		if l.Qty < 0 || l.UnitPriceCents < 0 {
			return 0, fmt.Errorf("amount of %s: qty %d at %d cents: %w", l.SKU, l.Qty, l.UnitPriceCents, ErrAmountOverflow)
		}
		hi, lo := bits.Mul64(uint64(l.Qty), uint64(l.UnitPriceCents))
		var carry uint64
		sum, carry = bits.Add64(sum, lo, 0)
		if hi != 0 || carry != 0 || sum > uint64(MaxAmountCents) {
			return 0, fmt.Errorf("amount of %d lines passes %d cents at %s: %w", len(lines), MaxAmountCents, l.SKU, ErrAmountOverflow)
		}
	}
	return int64(sum), nil
}

// PaymentProblem is the first field of a payment that breaks the rules, and what the field wants.
type PaymentProblem struct {
	Field string // event_id, order_id, amount_cents or currency
	Want  string
}

func (p *PaymentProblem) Error() string { return p.Field + ": " + p.Want }

// paymentChars is visible ASCII: the provider's IDs are opaque.
var paymentChars = func() *Charset {
	var c Charset
	for b := 0x21; b <= 0x7e; b++ {
		c[b] = true
	}
	return &c
}()

// CheckPayment returns the first field of a payment that breaks the rules (the columns of payments bound the
// IDs; the amount is 0 to MaxAmountCents; the currency is three upper-case letters), or nil. Every way a
// payment comes in checks it with this: the webhook before it sends anything, the workflow's pay update in its
// validator, its payment signal before it handles one.
func CheckPayment(eventID, orderID string, amountCents int64, currency string) *PaymentProblem {
	switch {
	case !paymentChars.Holds(eventID, MaxEventIDLen):
		return &PaymentProblem{"event_id", fmt.Sprintf("want 1-%d visible ASCII characters", MaxEventIDLen)}
	case !paymentChars.Holds(orderID, maxPaymentOrderIDLen):
		return &PaymentProblem{"order_id", fmt.Sprintf("want 1-%d visible ASCII characters", maxPaymentOrderIDLen)}
	case amountCents < 0 || amountCents > MaxAmountCents:
		return &PaymentProblem{"amount_cents", fmt.Sprintf("want 0 to %d", MaxAmountCents)}
	case len(currency) != 3 || !upperLetters(currency):
		return &PaymentProblem{"currency", "want a 3-letter upper-case ISO 4217 code"}
	}
	return nil
}

func upperLetters(s string) bool {
	for i := range len(s) {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
