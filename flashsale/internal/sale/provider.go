package sale

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// Provider checks (--provider-check).
const (
	ProviderCheckAuto = "auto" // check when the provider answers its report, else say it was not checked
	ProviderCheckOn   = "on"   // check; an unreachable provider is an error
	ProviderCheckOff  = "off"  // never check
)

// DefaultProviderURL is the local stack's refund provider (its in-process simulator), when neither
// --provider nor REFUND_PROVIDER_URL names one.
const DefaultProviderURL = refundsim.DefaultURL

// Waits for the refunds of the run to reach the provider after the settle, and for its report.
const (
	unsentWait      = 60 * time.Second
	unsentPoll      = 500 * time.Millisecond
	providerTimeout = 10 * time.Second
)

// ProviderReport is the refund provider simulator's report (`paysim serve`'s GET /v1/refunds, every sale
// on it) and the URL it was read from.
type ProviderReport struct {
	URL string `json:"url"`
	refundsim.Report
}

// fetchProviderReport reads the report of the provider simulator at base.
func fetchProviderReport(ctx context.Context, base string) (*ProviderReport, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), providerTimeout)
	defer cancel()
	rep, err := refundsim.Fetch(ctx, base, nil)
	if err != nil {
		return nil, fmt.Errorf("provider report: %w", err)
	}
	if rep.Refunds == nil {
		return nil, fmt.Errorf("provider report: %s answered no refund list: not a refund provider simulator", base)
	}
	return &ProviderReport{URL: base, Report: rep}, nil
}

// awaitProvider is the settle's last step when the refunds at the provider are checked: it waits (up to
// unsentWait) until no refund of the run's SKUs is left to send. check says whether to read the provider's
// report (readProvider, once the database's snapshot is taken); when not, skipped says why (auto: the
// provider unreachable, or no database). With --provider-check on, either is an error.
func (r *Runner) awaitProvider(ctx context.Context) (check bool, skipped string, err error) {
	mode := r.cfg.ProviderCheck
	if mode == ProviderCheckOff {
		return false, "", nil
	}
	if r.db == nil {
		if mode == ProviderCheckOn {
			return false, "", fmt.Errorf("--provider-check on: the refunds at the provider are checked against the payments rows: give --mysql-dsn or --sqlite-path")
		}
		return false, "no database: refunds at the provider not checked", nil
	}
	if _, err := fetchProviderReport(ctx, r.cfg.ProviderURL); err != nil {
		if mode == ProviderCheckOn {
			return false, "", fmt.Errorf("--provider-check on: %w", err)
		}
		return false, "provider not reachable: refunds at the provider not checked", nil
	}
	return true, "", r.waitRefundsSent(ctx)
}

// readProvider adds the provider's report to s when check is set, else why it was not checked. It is read
// after the database's snapshot: a refund the snapshot shows sent was executed before the report was read.
func (r *Runner) readProvider(ctx context.Context, s *Snapshot, check bool, skipped string) error {
	s.ProviderSkipped = skipped
	if !check {
		return nil
	}
	rep, err := fetchProviderReport(ctx, r.cfg.ProviderURL)
	if err != nil {
		return fmt.Errorf("--provider %s answered before the wait for the refunds, not after: %w", r.cfg.ProviderURL, err)
	}
	s.Provider = rep
	return nil
}

// waitRefundsSent polls until no refund of the run's SKUs is left to send, or unsentWait passes (what is left
// then counts as refunds_unsent).
func (r *Runner) waitRefundsSent(ctx context.Context) error {
	deadline := time.Now().Add(unsentWait)
	for {
		n, err := r.db.UnsentRefunds(ctx, r.skus)
		if err != nil {
			return err
		}
		if n == 0 || time.Now().After(deadline) {
			return nil
		}
		r.mu.Lock()
		r.waiting = fmt.Sprintf("refunds still to reach the provider %d", n)
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(unsentPoll):
		}
	}
}

// UnsentRefunds counts the refunds recorded on the SKUs' orders that are neither sent nor refused.
func (d *DBReader) UnsentRefunds(ctx context.Context, skus []string) (int64, error) {
	list, args := in(skus)
	var n int64
	err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM payments
		WHERE refunded_at IS NOT NULL AND refund_sent_at IS NULL AND refund_refused_at IS NULL
		  AND order_id IN (SELECT order_id FROM order_lines WHERE sku IN `+list+`)`, args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("database: count unsent refunds: %w", err)
	}
	return n, nil
}
