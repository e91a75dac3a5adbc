package sale

import "fmt"

// MoneyTotals is the money of a run in one currency, in minor units (and as counts of payment events).
type MoneyTotals struct {
	Currency string `json:"currency"`
	// Sent: the payment events the run sent that got a 200 answer (every one is money the provider
	// captured); WrongAmount the part sent with the wrong amount on purpose.
	SentCents        int64 `json:"sent_cents"`
	Sent             int64 `json:"sent"`
	WrongAmountCents int64 `json:"wrong_amount_cents"`
	WrongAmount      int64 `json:"wrong_amount"`
	// From the database's payments rows of the run's orders: Captured = Applied (kept for PAID orders) +
	// Refunded (refunded and rejected_amount) + Unsettled (must be 0).
	CapturedCents  int64 `json:"captured_cents"`
	Captured       int64 `json:"captured"`
	AppliedCents   int64 `json:"applied_cents"`
	Applied        int64 `json:"applied"`
	RefundedCents  int64 `json:"refunded_cents"`
	Refunded       int64 `json:"refunded"`
	UnsettledCents int64 `json:"unsettled_cents"`
	Unsettled      int64 `json:"unsettled"`
}

// text is the totals in one line (amounts in minor units, counts of payment events in parentheses).
func (m MoneyTotals) text() string {
	s := fmt.Sprintf("sent %d (%d, wrong amount %d (%d))", m.SentCents, m.Sent, m.WrongAmountCents, m.WrongAmount)
	if m.Captured == 0 && m.CapturedCents == 0 {
		return s
	}
	return s + fmt.Sprintf("; recorded: captured %d (%d) = applied %d (%d) + refunded %d (%d) + unsettled %d (%d)",
		m.CapturedCents, m.Captured, m.AppliedCents, m.Applied, m.RefundedCents, m.Refunded, m.UnsettledCents, m.Unsettled)
}

// money returns the totals of a currency, adding them when new.
func (j *judge) money(currency string) *MoneyTotals {
	for i := range j.v.Money {
		if j.v.Money[i].Currency == currency {
			return &j.v.Money[i]
		}
	}
	j.v.Money = append(j.v.Money, MoneyTotals{Currency: currency})
	return &j.v.Money[len(j.v.Money)-1]
}
