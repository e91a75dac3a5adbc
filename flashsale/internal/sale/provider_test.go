package sale

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsim"
	"github.com/ordersaga/ordersaga/internal/refundsim/refundsimtest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestProviderReportFromPaysim reads the report of a real `paysim serve` after one refund was sent to it the
// way the worker sends one (refunds.HTTPProvider), and judges it against the row the sender would have marked.
func TestProviderReportFromPaysim(t *testing.T) {
	base := refundsimtest.Start(t, "-secret", "flashsale-refund-secret")
	p, err := refunds.NewHTTPProvider(refunds.HTTPConfig{URL: base, Secret: "flashsale-refund-secret", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := refunds.Refund{EventID: "evt-late-o2", OrderID: "o2", AmountCents: 100, Currency: "CNY"}
	var rc refunds.Receipt
	for range 2 { // the second is a replay of the first
		if rc, err = p.Send(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := fetchProviderReport(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	want := refundsim.Entry{RefundID: rc.Ref, EventID: in.EventID, OrderID: in.OrderID, AmountCents: 100, Currency: "CNY", Requests: 2}
	if len(rep.Refunds) == 1 {
		rep.Refunds[0].CreatedAt = time.Time{} // the simulator's clock
	}
	if len(rep.Refunds) != 1 || rep.Refunds[0] != want {
		t.Fatalf("report refunds = %+v, want [%+v]", rep.Refunds, want)
	}
	if rep.Totals != (refundsim.Totals{Requests: 2, Executed: 1, Replays: 1}) || rep.URL != base {
		t.Errorf("report totals %+v url %q", rep.Totals, rep.URL)
	}

	s := cleanSnapshot()
	s.DB.Payments = s.DB.Payments[:2] // the kept payment and the late one's refund
	s.DB.Payments[1].RefundSent, s.DB.Payments[1].RefundRef = true, rc.Ref
	s.Payments = s.Payments[:2]
	s.Provider = rep
	if v := Check(s); v.Refunds == nil || v.Refunds.Checked != 1 || v.Counts.RefundRefMismatch != 0 || v.Counts.RefundsNotAtProvider != 0 {
		t.Errorf("judged against paysim's report: %+v %+v\n%v", v.Refunds, v.Counts, v.Findings)
	}
}

// TestAwaitProviderUnreachable: auto says once that the refunds were not checked; on is an error naming the
// flag; off does not look.
func TestAwaitProviderUnreachable(t *testing.T) {
	dead := "http://" + testenv.ClosedAddr(t)
	for _, c := range []struct {
		mode, wantSkipped, wantErr string
	}{
		{ProviderCheckAuto, "provider not reachable: refunds at the provider not checked", ""},
		{ProviderCheckOn, "", "--provider-check on"},
		{ProviderCheckOff, "", ""},
	} {
		t.Run(c.mode, func(t *testing.T) {
			r := &Runner{cfg: Config{ProviderURL: dead, ProviderCheck: c.mode}, db: &DBReader{}}
			check, skipped, err := r.awaitProvider(context.Background())
			if check || skipped != c.wantSkipped || (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("= check %v, skipped %q, err %v; want no check, %q, error %q", check, skipped, err, c.wantSkipped, c.wantErr)
			}
		})
	}
}
