package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/ordersaga/ordersaga/internal/refundsim"
)

// refundPair is three recorded refunds, sent and at the provider once each (the first sent again after a
// kill: requests 2), and a kept payment: a clean pair.
func refundPair() ([]paymentRow, refundsim.Report) {
	ref := func(s string) *string { return &s }
	rows := []paymentRow{
		{EventID: "evt-a", OrderID: "o1", AmountCents: 999, Currency: "CNY"},
		{EventID: "evt2-a", OrderID: "o1", AmountCents: 999, Currency: "CNY", Refunded: true, RefundSent: true, RefundRef: ref("re_1")},
		{EventID: "evtw-b", OrderID: "o2", AmountCents: 998, Currency: "CNY", Refunded: true, RefundSent: true, RefundRef: ref("re_2")},
		{EventID: "evt-c", OrderID: "o3", AmountCents: 1998, Currency: "CNY", Refunded: true, RefundSent: true, RefundRef: ref("re_3")},
	}
	rep := refundsim.Report{Refunds: []refundsim.Entry{
		{RefundID: "re_1", EventID: "evt2-a", OrderID: "o1", AmountCents: 999, Currency: "CNY", Requests: 2},
		{RefundID: "re_2", EventID: "evtw-b", OrderID: "o2", AmountCents: 998, Currency: "CNY", Requests: 1},
		{RefundID: "re_3", EventID: "evt-c", OrderID: "o3", AmountCents: 1998, Currency: "CNY", Requests: 1},
	}}
	return rows, rep
}

// TestJudgeRefunds: a clean pair counts 0 everywhere and 3 refunds checked; each doctored pair makes its
// counter, and only it, non-zero.
func TestJudgeRefunds(t *testing.T) {
	for _, c := range []struct {
		name   string
		doctor func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string)
		want   map[string]int64
	}{
		{"clean, the killed refund sent again", func(rows []paymentRow, _ *refundsim.Report) ([]paymentRow, []string) {
			return rows, []string{"evt2-a"}
		}, nil},
		{"a refund unsent", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rows[3].RefundSent, rows[3].RefundRef = false, nil
			rep.Refunds = rep.Refunds[:2]
			return rows, nil
		}, map[string]int64{"refunds_unsent": 1}},
		{"a refund marked sent the provider lacks", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rep.Refunds = rep.Refunds[1:]
			return rows, nil
		}, map[string]int64{"refunds_not_at_provider": 1}},
		{"a kept payment refunded at the provider", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rep.Refunds = append(rep.Refunds, refundsim.Entry{RefundID: "re_9", EventID: "evt-a", OrderID: "o1", AmountCents: 999, Currency: "CNY", Requests: 1})
			return rows, nil
		}, map[string]int64{"refunds_unknown_at_provider": 1}},
		{"a refund twice at the provider", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rep.Refunds = append(rep.Refunds, rep.Refunds[1])
			return rows, nil
		}, map[string]int64{"refunds_twice_at_provider": 1}},
		{"another amount at the provider", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rep.Refunds[2].AmountCents = 1997
			return rows, nil
		}, map[string]int64{"refund_amount_mismatch": 1}},
		{"another currency at the provider", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rep.Refunds[2].Currency = "EUR"
			return rows, nil
		}, map[string]int64{"refund_amount_mismatch": 1}},
		{"refund_ref not the provider's", func(rows []paymentRow, _ *refundsim.Report) ([]paymentRow, []string) {
			other := "re_other"
			rows[1].RefundRef = &other
			return rows, nil
		}, map[string]int64{"refund_ref_mismatch": 1}},
		{"a refund refused", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rows[3].RefundSent, rows[3].RefundRef, rows[3].RefundRefused = false, nil, true
			rep.Refunds = rep.Refunds[:2]
			return rows, nil
		}, map[string]int64{"refunds_refused": 1}},
		{"the killed refund never sent again", func(rows []paymentRow, _ *refundsim.Report) ([]paymentRow, []string) {
			return rows, []string{"evtw-b"}
		}, map[string]int64{"refund_kills_not_resent": 1}},
		{"the killed refund not at the provider", func(rows []paymentRow, _ *refundsim.Report) ([]paymentRow, []string) {
			return rows, []string{"evt-gone"}
		}, map[string]int64{"refund_kills_not_resent": 1}},
		{"no refund at all", func(rows []paymentRow, rep *refundsim.Report) ([]paymentRow, []string) {
			rep.Refunds = nil
			return rows[:1], nil
		}, map[string]int64{"refunds_none_checked": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, rep := refundPair()
			rows, killed := c.doctor(rows, &rep)
			got := map[string]int64{}
			judgeRefunds(rows, rep, killed, got)
			for _, k := range refundCounters {
				if got[k] != c.want[k] {
					t.Errorf("%s = %d, want %d", k, got[k], c.want[k])
				}
			}
			if c.want == nil && got["refunds_checked"] != 3 {
				t.Errorf("refunds_checked = %d, want 3 (%v)", got["refunds_checked"], slices.Sorted(maps.Keys(got)))
			}
		})
	}
}
