package sale

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// RefundTotals is what the check of the refunds at the provider saw: the run's recorded refunds and the
// provider's figures (over every refund request it got, other runs' included).
type RefundTotals struct {
	Provider string `json:"provider"`
	// Recorded: refunds on the run's payments rows; Sent, Refused and Unsent split them by their state.
	Recorded int64 `json:"recorded"`
	Sent     int64 `json:"sent"`
	Refused  int64 `json:"refused"`
	Unsent   int64 `json:"unsent"`
	// AtProvider: refunds the provider executed for the run's orders; Checked: recorded refunds found there
	// and compared (amount, currency, reference).
	AtProvider int64 `json:"at_provider"`
	Checked    int64 `json:"checked"`
	// The provider's totals: refund requests, refunds executed, replays answered.
	Requests int64 `json:"requests"`
	Executed int64 `json:"executed"`
	Replays  int64 `json:"replays"`
}

// text is the totals in one line.
func (t RefundTotals) text() string {
	return fmt.Sprintf("recorded %d (sent %d, refused %d, unsent %d); at the provider for the run's orders %d, checked %d; "+
		"provider %s: requests %d, executed %d, replays %d",
		t.Recorded, t.Sent, t.Refused, t.Unsent, t.AtProvider, t.Checked, t.Provider, t.Requests, t.Executed, t.Replays)
}

// checkRefunds judges the refunds at the provider against the run's payments rows: every recorded refund sent
// (or refused), every sent one at the provider once, for its amount and currency, under the reference the row
// holds; and nothing refunded at the provider for the run's orders that is not a recorded refund. Refunds of
// orders that are not the run's (other runs on the same provider) are left alone.
func checkRefunds(j *judge, db *DBSnapshot, prov *ProviderReport) {
	t := &RefundTotals{Provider: prov.URL, Requests: prov.Totals.Requests, Executed: prov.Totals.Executed, Replays: prov.Totals.Replays}
	j.v.Refunds = t
	ours := map[string]bool{} // the run's orders
	for _, o := range db.Orders {
		ours[o.OrderID] = true
	}
	rows := map[string]DBPayment{}
	for _, p := range db.Payments {
		ours[p.OrderID] = true
		rows[p.EventID] = p
	}
	at := map[string][]refundsim.Entry{} // event -> the provider's refunds of the run's orders
	for _, e := range prov.Refunds {
		if ours[e.OrderID] || rows[e.EventID].EventID != "" {
			at[e.EventID] = append(at[e.EventID], e)
			t.AtProvider++
		}
	}
	bad := func(check string, p DBPayment, detail string, args ...any) {
		j.bad(Finding{Check: check, Source: SourceProvider, OrderID: p.OrderID, EventID: p.EventID, N: 1, Detail: fmt.Sprintf(detail, args...)})
	}
	for _, p := range db.Payments {
		if !p.Refunded {
			continue
		}
		t.Recorded++
		got := at[p.EventID]
		switch {
		case p.RefundSent:
			t.Sent++
		case p.RefundRefused:
			t.Refused++
			bad(CheckRefundsRefused, p, "the provider refused the refund of %d %s for good", p.AmountCents, p.Currency)
		default:
			t.Unsent++
			bad(CheckRefundsUnsent, p, "refund of %d %s recorded and still not sent after the wait", p.AmountCents, p.Currency)
		}
		if len(got) == 0 {
			if p.RefundSent {
				bad(CheckRefundsNotAtProvider, p, "marked sent (refund_ref %q) but the provider has no refund for the event", p.RefundRef)
			}
			continue
		}
		t.Checked++
		if len(got) > 1 {
			j.bad(Finding{Check: CheckRefundsTwice, Source: SourceProvider, OrderID: p.OrderID, EventID: p.EventID, N: int64(len(got) - 1),
				Detail: fmt.Sprintf("the provider reports %d refunds for the event", len(got))})
		}
		e := got[0]
		if e.AmountCents != p.AmountCents || e.Currency != p.Currency {
			bad(CheckRefundAmountMismatch, p, "refunded %d %s at the provider, recorded %d %s", e.AmountCents, e.Currency, p.AmountCents, p.Currency)
		}
		if p.RefundSent && p.RefundRef != e.RefundID {
			bad(CheckRefundRefMismatch, p, "refund_ref %q, the provider's refund_id %q", p.RefundRef, e.RefundID)
		}
	}
	for _, ev := range slices.Sorted(maps.Keys(at)) {
		if p, ok := rows[ev]; ok && p.Refunded {
			continue
		}
		e := at[ev][0]
		detail := "refunded at the provider, but the database has no payment of the event"
		if p, ok := rows[ev]; ok {
			detail = fmt.Sprintf("refunded at the provider, but the payment is recorded %q and not refunded", p.Result)
		}
		j.bad(Finding{Check: CheckRefundsUnknown, Source: SourceProvider, OrderID: e.OrderID, EventID: ev, N: int64(len(at[ev])),
			Detail: fmt.Sprintf("%s (%d %s, refund_id %s)", detail, e.AmountCents, e.Currency, e.RefundID)})
	}
}
