package sale

import (
	"slices"
	"testing"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// providerSnapshot is cleanSnapshot with its three refunds sent and the provider's report of them: a clean
// pair. The provider also holds a refund of another run's order, which is none of this run's business.
func providerSnapshot() Snapshot {
	s := cleanSnapshot()
	rep := &ProviderReport{URL: "http://127.0.0.1:8091", Report: refundsim.Report{Totals: refundsim.Totals{Requests: 6, Executed: 4, Replays: 2}}}
	for i := range s.DB.Payments {
		p := &s.DB.Payments[i]
		if !p.Refunded {
			continue
		}
		p.RefundSent, p.RefundRef = true, "re_"+p.EventID
		rep.Refunds = append(rep.Refunds, refundsim.Entry{RefundID: p.RefundRef, EventID: p.EventID, OrderID: p.OrderID,
			AmountCents: p.AmountCents, Currency: p.Currency, Requests: 1})
	}
	rep.Refunds = append(rep.Refunds, refundsim.Entry{RefundID: "re_other", EventID: "evt-other", OrderID: "other-run", AmountCents: 5, Currency: "CNY", Requests: 1})
	s.Provider = rep
	return s
}

func TestCheckRefundsCleanPairIsOK(t *testing.T) {
	v := Check(providerSnapshot())
	if !v.OK() {
		t.Fatalf("clean pair judged bad: %+v\n%v", v.Counts, v.Findings)
	}
	if !slices.Equal(v.Sources, []string{SourceAPI, SourceDB, SourceProvider}) {
		t.Errorf("sources = %v", v.Sources)
	}
	want := RefundTotals{Provider: "http://127.0.0.1:8091", Recorded: 3, Sent: 3, AtProvider: 3, Checked: 3, Requests: 6, Executed: 4, Replays: 2}
	if v.Refunds == nil || *v.Refunds != want {
		t.Errorf("refund totals = %+v, want %+v", v.Refunds, want)
	}
}

func TestCheckRefundsWithoutProviderChecksNothing(t *testing.T) {
	s := cleanSnapshot() // its refunds are not sent: unchecked, they count nowhere
	s.ProviderSkipped = "provider not reachable: refunds at the provider not checked"
	v := Check(s)
	if !v.OK() || v.Refunds != nil || slices.Contains(v.Sources, SourceProvider) {
		t.Fatalf("= ok %v, refunds %+v, sources %v; want OK, no refund totals, no provider source", v.OK(), v.Refunds, v.Sources)
	}
	if v.RefundsNotChecked != s.ProviderSkipped {
		t.Errorf("RefundsNotChecked = %q, want the snapshot's reason", v.RefundsNotChecked)
	}
}

func TestCheckRefundsCatchesDoctoredPairs(t *testing.T) {
	// row finds the payments row of an event.
	row := func(s *Snapshot, ev string) *DBPayment {
		for i := range s.DB.Payments {
			if s.DB.Payments[i].EventID == ev {
				return &s.DB.Payments[i]
			}
		}
		t.Fatalf("no row %s", ev)
		return nil
	}
	// at finds the provider's refund of an event.
	at := func(s *Snapshot, ev string) *refundsim.Entry {
		for i := range s.Provider.Refunds {
			if s.Provider.Refunds[i].EventID == ev {
				return &s.Provider.Refunds[i]
			}
		}
		t.Fatalf("no provider refund %s", ev)
		return nil
	}
	drop := func(s *Snapshot, ev string) {
		s.Provider.Refunds = slices.DeleteFunc(s.Provider.Refunds, func(e refundsim.Entry) bool { return e.EventID == ev })
	}
	for _, c := range []struct {
		name   string
		doctor func(s *Snapshot)
		check  string
		want   int64
	}{
		{"a recorded refund never sent", func(s *Snapshot) {
			p := row(s, "evt-late-o2")
			p.RefundSent, p.RefundRef = false, ""
			drop(s, "evt-late-o2")
		}, CheckRefundsUnsent, 1},
		{"a refund marked sent the provider does not have", func(s *Snapshot) { drop(s, "evt-wrong-o4") }, CheckRefundsNotAtProvider, 1},
		{"a kept payment refunded at the provider", func(s *Snapshot) {
			s.Provider.Refunds = append(s.Provider.Refunds, refundsim.Entry{RefundID: "re_x", EventID: "evt-o1", OrderID: "o1", AmountCents: 200, Currency: "CNY"})
		}, CheckRefundsUnknown, 1},
		{"an unknown event of the run's order refunded", func(s *Snapshot) {
			s.Provider.Refunds = append(s.Provider.Refunds, refundsim.Entry{RefundID: "re_y", EventID: "evt-made-up", OrderID: "o3", AmountCents: 100, Currency: "CNY"})
		}, CheckRefundsUnknown, 1},
		{"a refund twice in the provider's report", func(s *Snapshot) {
			s.Provider.Refunds = append(s.Provider.Refunds, *at(s, "evt-wrong-o1"), *at(s, "evt-wrong-o1"))
		}, CheckRefundsTwice, 2},
		{"another amount at the provider", func(s *Snapshot) { at(s, "evt-late-o2").AmountCents = 99 }, CheckRefundAmountMismatch, 1},
		{"another currency at the provider", func(s *Snapshot) { at(s, "evt-late-o2").Currency = "EUR" }, CheckRefundAmountMismatch, 1},
		{"refund_ref not the provider's refund_id", func(s *Snapshot) { row(s, "evt-wrong-o1").RefundRef = "re_stale" }, CheckRefundRefMismatch, 1},
		{"a refund refused for good", func(s *Snapshot) {
			p := row(s, "evt-wrong-o4")
			p.RefundSent, p.RefundRef, p.RefundRefused = false, "", true
			drop(s, "evt-wrong-o4")
		}, CheckRefundsRefused, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := providerSnapshot()
			c.doctor(&s)
			v := Check(s)
			if got := v.Counts.get(c.check); got != c.want {
				t.Errorf("%s = %d, want %d (findings %v)", c.check, got, c.want, v.Findings)
			}
			for _, other := range AllChecks {
				if other != c.check && v.Counts.get(other) != 0 {
					t.Errorf("%s = %d too, want only %s (findings %v)", other, v.Counts.get(other), c.check, v.Findings)
				}
			}
			if v.OK() {
				t.Error("verdict OK")
			}
		})
	}
}
