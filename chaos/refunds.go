package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// settleRefunds bounds the wait, after the orders have settled, until no recorded refund is left to send.
const settleRefunds = 2 * time.Minute

// refundCounters are the counters of the refunds at the provider that must be 0 (judgeRefunds). refunds_none_checked is
// not the system's: a run that checked no refund did not test the sender.
var refundCounters = []string{"refunds_unsent", "refunds_not_at_provider", "refunds_unknown_at_provider", "refunds_twice_at_provider",
	"refund_amount_mismatch", "refund_ref_mismatch", "refunds_refused", "refund_kills_not_resent", "refunds_none_checked"}

// providerBlackhole tells the run's refund provider to hold every refund request for d, executing nothing,
// and waits it out with the load running: the senders time out (REFUND_PROVIDER_TIMEOUT) and send again. It
// counts only when the provider held a request meanwhile (else the blackhole hit no refund: unseen).
type providerBlackhole struct {
	t   *topology
	rec *recorder
	d   time.Duration
}

func (f providerBlackhole) Name() string {
	return fmt.Sprintf("provider_blackhole_%ds", int(f.d.Seconds()))
}

func (f providerBlackhole) Inject(ctx context.Context) error {
	before, err := refundsim.Fetch(ctx, f.t.provider, nil)
	if err != nil {
		return err
	}
	if err := refundsim.PutFaults(ctx, f.t.provider, refundsim.Faults{}, f.d, nil); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(f.d + time.Second):
	}
	after, err := refundsim.Fetch(ctx, f.t.provider, nil)
	if err != nil {
		return err
	}
	held := after.Totals.Blackholed - before.Totals.Blackholed
	if held == 0 {
		f.rec.unseen()
		fmt.Fprintf(f.t.log, "chaos: refund provider blackholed %s, and no refund request reached it meanwhile: counted as unseen\n", f.d)
		return nil
	}
	f.rec.count(f.Name())
	fmt.Fprintf(f.t.log, "chaos: refund provider blackholed %s: %d refund requests held, nothing executed\n", f.d, held)
	return nil
}

// paymentRow is one payments row as the refund check reads it.
type paymentRow struct {
	EventID       string
	OrderID       string
	AmountCents   int64
	Currency      string
	Refunded      bool
	RefundSent    bool
	RefundRef     *string
	RefundRefused bool
}

// refundCounts waits until no recorded refund is left to send (or settleRefunds passes), then compares the
// provider's report with the payments rows: every recorded refund at the provider once, for its amount and
// currency, under the reference the row holds; nothing refunded at the provider that is not a recorded
// refund; every refund a worker kill hit after the provider's answer sent again (requests >= 2) and executed
// once. The run's database and provider are its own: every row and every refund is the run's.
func (r *runState) refundCounts(ctx context.Context, c map[string]int64) error {
	if err := r.waitRefundsSent(ctx); err != nil {
		return err
	}
	var rows []paymentRow
	err := r.t.store.DB().WithContext(ctx).Raw(`SELECT event_id, order_id, amount_cents, currency,
			refunded_at IS NOT NULL AS refunded, refund_sent_at IS NOT NULL AS refund_sent, refund_ref,
			refund_refused_at IS NOT NULL AS refund_refused
		FROM payments`).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("payments rows: %w", err)
	}
	rep, err := refundsim.Fetch(ctx, r.t.provider, nil) // after the rows: a row read as sent was executed before
	if err != nil {
		return err
	}
	judgeRefunds(rows, rep, r.rec.refundVictimList(), c)
	c["provider_requests"] = rep.Totals.Requests
	c["provider_executed"] = rep.Totals.Executed
	c["provider_replays"] = rep.Totals.Replays
	c["provider_blackholed"] = rep.Totals.Blackholed
	c["provider_timed_out"] = rep.Totals.TimedOut
	return nil
}

// judgeRefunds counts what is wrong between the payments rows and the provider's report into c (see
// refundCounts), with the refunds checked as a figure.
func judgeRefunds(rows []paymentRow, rep refundsim.Report, killed []string, c map[string]int64) {
	for _, k := range refundCounters {
		c[k] = 0
	}
	at := map[string][]refundsim.Entry{}
	for _, e := range rep.Refunds {
		at[e.EventID] = append(at[e.EventID], e)
	}
	recorded := map[string]bool{}
	for _, p := range rows {
		if !p.Refunded {
			continue
		}
		recorded[p.EventID] = true
		c["refunds_recorded"]++
		switch {
		case p.RefundRefused:
			c["refunds_refused"]++
		case !p.RefundSent:
			c["refunds_unsent"]++
		}
		got := at[p.EventID]
		if len(got) == 0 {
			if p.RefundSent {
				c["refunds_not_at_provider"]++
			}
			continue
		}
		c["refunds_checked"]++
		c["refunds_twice_at_provider"] += int64(len(got) - 1)
		if e := got[0]; e.AmountCents != p.AmountCents || e.Currency != p.Currency || e.OrderID != p.OrderID {
			c["refund_amount_mismatch"]++
		}
		if p.RefundSent && (p.RefundRef == nil || *p.RefundRef != got[0].RefundID) {
			c["refund_ref_mismatch"]++
		}
	}
	for ev, es := range at {
		if !recorded[ev] {
			c["refunds_unknown_at_provider"] += int64(len(es))
		}
	}
	if c["refunds_checked"] == 0 {
		c["refunds_none_checked"] = 1
	}
	c["refund_kills"] = int64(len(killed))
	for _, ev := range killed {
		if es := at[ev]; len(es) != 1 || es[0].Requests < 2 {
			c["refund_kills_not_resent"]++
		}
	}
}

// waitRefundsSent waits until no payments row is a refund neither sent nor refused, or settleRefunds passes.
func (r *runState) waitRefundsSent(ctx context.Context) error {
	deadline := time.Now().Add(settleRefunds)
	for {
		n, err := r.t.store.CountPendingRefunds(ctx)
		if err != nil {
			return err
		}
		if n == 0 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
