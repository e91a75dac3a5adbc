package sale

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
)

var t0 = time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func line(qty int64) []ordersaga.Line {
	return []ordersaga.Line{{SKU: "A", Qty: qty, UnitPriceCents: 100}}
}

// cleanSnapshot is a quiet run on SKU A (10 units, 100 cents each) that went right: o1 paid (2 units) after
// a payment of the wrong amount (refunded once), o2 expired and paid late (refunded once), o3 cancelled, o4
// paid only a wrong amount (refunded once) and expired.
func cleanSnapshot() Snapshot {
	payBy := ptr(t0.Add(-time.Minute))
	order := func(id, action string, qty int64, status ordersaga.Status) OrderSnapshot {
		return OrderSnapshot{OrderID: id, Key: "k-" + id, UserID: "u", Lines: line(qty), PayBy: payBy, Action: action,
			KeyOrderIDs: []string{id}, Status: status}
	}
	o3 := order("o3", ActionCancel, 1, ordersaga.StatusCancelled)
	o3.CancelStatus = ordersaga.StatusCancelled
	return Snapshot{
		TakenAt: t0, Quiet: true, Grace: time.Minute,
		SKUs: []SKUSnapshot{{SKU: "A", Initial: 10, API: &ordersaga.InventoryBody{SKU: "A", DBStock: 8, RedisAvailable: ptr[int64](8)}}},
		Orders: []OrderSnapshot{
			order("o1", ActionPay, 2, ordersaga.StatusPaid),
			order("o2", ActionLatePay, 1, ordersaga.StatusExpired),
			o3,
			order("o4", ActionWrongPay, 1, ordersaga.StatusExpired),
		},
		Payments: []PaymentSnapshot{
			{EventID: "evt-o1", OrderID: "o1", AmountCents: 200, Currency: "CNY", Results: []string{"applied", "duplicate"}},
			{EventID: "evt-late-o2", OrderID: "o2", Late: true, AmountCents: 100, Currency: "CNY", Results: []string{"refunded", "duplicate"}},
			{EventID: "evt-wrong-o1", OrderID: "o1", WrongAmount: true, AmountCents: 199, Currency: "CNY", Results: []string{"rejected_amount", "duplicate"}},
			{EventID: "evt-wrong-o4", OrderID: "o4", WrongAmount: true, AmountCents: 99, Currency: "CNY", Results: []string{"rejected_amount", "duplicate"}},
		},
		DB: &DBSnapshot{
			Stock: map[string]int64{"A": 8},
			Ledger: []LedgerRow{
				{"o1", "A", "DEDUCT", 2},
				{"o2", "A", "DEDUCT", 1}, {"o2", "A", "RESTORE", 1},
				{"o3", "A", "DEDUCT", 1}, {"o3", "A", "RESTORE", 1},
				{"o4", "A", "DEDUCT", 1}, {"o4", "A", "RESTORE", 1},
				{"o9", "A", "RESTORE", 0}, // a tombstone of an order rejected before its deduct
			},
			Orders: []DBOrder{
				{OrderID: "o1", Status: ordersaga.StatusPaid, AmountCents: 200, Currency: "CNY", PayBy: payBy, Lines: line(2)},
				{OrderID: "o2", Status: ordersaga.StatusExpired, PayBy: payBy, Lines: line(1)},
				{OrderID: "o3", Status: ordersaga.StatusCancelled, PayBy: payBy, Lines: line(1)},
				{OrderID: "o4", Status: ordersaga.StatusExpired, PayBy: payBy, Lines: line(1)},
				{OrderID: "o9", Status: ordersaga.StatusRejected, Lines: line(1)},
			},
			Payments: []DBPayment{
				{"evt-o1", "o1", "applied", 200, "CNY", false, false, "", false},
				{"evt-late-o2", "o2", "refunded", 100, "CNY", true, false, "", false},
				{"evt-wrong-o1", "o1", "rejected_amount", 199, "CNY", true, false, "", false},
				{"evt-wrong-o4", "o4", "rejected_amount", 99, "CNY", true, false, "", false},
			},
		},
	}
}

func TestCheckCleanRunIsOK(t *testing.T) {
	v := Check(cleanSnapshot())
	if !v.OK() {
		t.Fatalf("clean run judged bad: %+v\n%v", v.Counts, v.Findings)
	}
	if !slices.Equal(v.Sources, []string{SourceAPI, SourceDB}) {
		t.Errorf("sources = %v", v.Sources)
	}
}

func TestCheckCatchesDoctoredRuns(t *testing.T) {
	tests := []struct {
		name   string
		doctor func(*Snapshot)
		check  string
		// want is the count of check per source ("" = not checked in that source).
		want map[string]int64
	}{
		{
			name: "oversold unit: 11 units in PAID orders of 10",
			doctor: func(s *Snapshot) {
				o := s.Orders[0]
				o.OrderID, o.Key, o.KeyOrderIDs, o.Lines = "o5", "k-o5", []string{"o5"}, line(9)
				s.Orders = append(s.Orders, o)
				s.Payments = append(s.Payments, PaymentSnapshot{EventID: "evt-o5", OrderID: "o5", AmountCents: 900, Currency: "CNY", Results: []string{"applied"}})
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 0, ptr[int64](0)
				s.DB.Stock["A"] = 0
				s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o5", "A", "DEDUCT", 9})
				s.DB.Orders = append(s.DB.Orders, DBOrder{OrderID: "o5", Status: ordersaga.StatusPaid, AmountCents: 900, Currency: "CNY", PayBy: o.PayBy, Lines: line(9)})
				s.DB.Payments = append(s.DB.Payments, DBPayment{"evt-o5", "o5", "applied", 900, "CNY", false, false, "", false})
			},
			check: CheckOversold, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "oversold unit: a restore too many",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 9, ptr[int64](9)
				s.DB.Stock["A"] = 9
				s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o4", "A", "RESTORE", 1})
			},
			check: CheckOversold, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "lost unit: stock gone without a sale",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 7, ptr[int64](7)
				s.DB.Stock["A"] = 7
			},
			check: CheckLost, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "lost unit: an expired order kept its deduct",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 7, ptr[int64](7)
				s.DB.Stock["A"] = 7
				s.DB.Ledger = slices.DeleteFunc(s.DB.Ledger, func(l LedgerRow) bool { return l.OrderID == "o4" && l.Op == "RESTORE" })
			},
			check: CheckLost, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "lost unit: a leaked Redis hold",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.RedisAvailable, s.SKUs[0].API.Holds = ptr[int64](7), ptr[int64](1)
				s.Quiet = false
			},
			check: CheckLost, want: map[string]int64{SourceAPI: 1},
		},
		{
			name: "lost unit: Redis shows less than the database",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.RedisAvailable = ptr[int64](7)
			},
			check: CheckLost, want: map[string]int64{SourceAPI: 1},
		},
		{
			name: "cache drift: Redis promises more than the database",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.RedisAvailable = ptr[int64](9)
			},
			check: CheckCacheDrift, want: map[string]int64{SourceAPI: 1},
		},
		{
			name: "double refund: a late payment refunded on redelivery",
			doctor: func(s *Snapshot) {
				s.Payments[1].Results = []string{"refunded", "refunded"}
				s.DB.Payments = append(s.DB.Payments, DBPayment{"evt-late-o2", "o2", "refunded", 100, "CNY", true, false, "", false})
			},
			check: CheckRefund, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "double refund: a wrong amount refunded twice",
			doctor: func(s *Snapshot) {
				s.Payments[2].Results = []string{"rejected_amount", "rejected_amount"}
				s.DB.Payments = append(s.DB.Payments, DBPayment{"evt-wrong-o1", "o1", "rejected_amount", 199, "CNY", true, false, "", false})
			},
			check: CheckRefund, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "unsettled payment: a wrong amount recorded without its refund",
			doctor: func(s *Snapshot) {
				s.DB.Payments[2].Refunded = false
			},
			check: CheckUnsettled, want: map[string]int64{SourceAPI: 0, SourceDB: 1},
		},
		{
			name: "unsettled payment: a wrong amount answered applied",
			doctor: func(s *Snapshot) {
				s.Payments[3].Results = []string{"applied"}
			},
			check: CheckUnsettled, want: map[string]int64{SourceAPI: 1},
		},
		{
			name: "unsettled payment: a refund answered but never recorded",
			doctor: func(s *Snapshot) {
				s.DB.Payments = slices.Delete(s.DB.Payments, 1, 2)
			},
			check: CheckUnsettled, want: map[string]int64{SourceAPI: 0, SourceDB: 1},
		},
		{
			name: "unsettled payment: applied for another amount than the order's (and than the one sent)",
			doctor: func(s *Snapshot) {
				s.DB.Payments[0].AmountCents = 199
			},
			check: CheckUnsettled, want: map[string]int64{SourceAPI: 0, SourceDB: 2},
		},
		{
			name: "double refund: one event applied and refunded",
			doctor: func(s *Snapshot) {
				s.Payments[0].Results = []string{"applied", "refunded"}
			},
			check: CheckRefund, want: map[string]int64{SourceAPI: 1, SourceDB: 0},
		},
		{
			name: "duplicate deduction: two DEDUCT rows for one line",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 6, ptr[int64](6)
				s.DB.Stock["A"] = 6
				s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o1", "A", "DEDUCT", 2})
			},
			check: CheckDuplicate, want: map[string]int64{SourceAPI: 0, SourceDB: 1},
		},
		{
			name: "duplicate deduction: a PAID line taken twice and given back once (its net is right)",
			doctor: func(s *Snapshot) {
				s.DB.Ledger[0].Qty = 4
				s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o1", "A", "RESTORE", 2})
			},
			check: CheckDuplicate, want: map[string]int64{SourceAPI: 0, SourceDB: 1},
		},
		{
			name: "duplicate deduction: a line awaiting its payment taken twice",
			doctor: func(s *Snapshot) {
				payBy := ptr(t0.Add(time.Minute))
				s.Orders = append(s.Orders, OrderSnapshot{OrderID: "o6", Key: "k-o6", Lines: line(1), PayBy: payBy,
					Action: ActionExpire, KeyOrderIDs: []string{"o6"}, Status: ordersaga.StatusAwaitingPayment})
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 6, ptr[int64](6)
				s.DB.Stock["A"] = 6
				s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o6", "A", "DEDUCT", 2})
				s.DB.Orders = append(s.DB.Orders, DBOrder{OrderID: "o6", Status: ordersaga.StatusAwaitingPayment, PayBy: payBy, Lines: line(1)})
				s.Quiet = false
			},
			check: CheckDuplicate, want: map[string]int64{SourceAPI: 0, SourceDB: 1},
		},
		{
			name: "duplicate deduction: a cancelled line given back twice",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 9, ptr[int64](9)
				s.DB.Stock["A"] = 9
				s.DB.Ledger[4].Qty = 2 // o3's RESTORE
			},
			check: CheckDuplicate, want: map[string]int64{SourceAPI: 0, SourceDB: 1},
		},
		{
			name: "state error: a PAID line given back",
			doctor: func(s *Snapshot) {
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 10, ptr[int64](10)
				s.DB.Stock["A"] = 10
				s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o1", "A", "RESTORE", 2})
			},
			check: CheckState, want: map[string]int64{SourceAPI: 0, SourceDB: 1},
		},
		{
			name: "duplicate deduction: one Idempotency-Key, two orders",
			doctor: func(s *Snapshot) {
				o := s.Orders[3]
				o.OrderID, o.KeyOrderIDs = "o4b", []string{"o4b"}
				s.Orders[3].KeyOrderIDs = []string{"o4", "o4b"}
				s.Orders = append(s.Orders, o)
			},
			check: CheckDuplicate, want: map[string]int64{SourceAPI: 1},
		},
		{
			name: "stuck order: awaiting payment past its deadline and the grace",
			doctor: func(s *Snapshot) {
				payBy := ptr(t0.Add(-3 * time.Minute))
				s.Orders = append(s.Orders, OrderSnapshot{OrderID: "o6", Key: "k-o6", Lines: line(1), PayBy: payBy,
					Action: ActionExpire, KeyOrderIDs: []string{"o6"}, Status: ordersaga.StatusAwaitingPayment})
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 7, ptr[int64](7)
				s.DB.Stock["A"] = 7
				s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o6", "A", "DEDUCT", 1})
				s.DB.Orders = append(s.DB.Orders, DBOrder{OrderID: "o6", Status: ordersaga.StatusAwaitingPayment, PayBy: payBy, Lines: line(1)})
				s.Quiet = false
			},
			check: CheckStuck, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "state error: a payment answered applied on an expired order",
			doctor: func(s *Snapshot) {
				s.Payments[1].Results = []string{"applied"}
				s.DB.Payments[1].Result, s.DB.Payments[1].Refunded = "applied", false
			},
			check: CheckState, want: map[string]int64{SourceAPI: 1, SourceDB: 1},
		},
		{
			name: "state error: cancel answered CANCELLED, order PAID",
			doctor: func(s *Snapshot) {
				s.Orders[2].Status = ordersaga.StatusPaid
				s.Payments = append(s.Payments, PaymentSnapshot{EventID: "evt-o3", OrderID: "o3", Results: []string{"applied"}})
				s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 7, ptr[int64](7)
				s.DB = nil
			},
			check: CheckState, want: map[string]int64{SourceAPI: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cleanSnapshot()
			tt.doctor(&s)
			v := Check(s)
			if v.OK() {
				t.Fatalf("doctored run judged OK: %+v", v.Counts)
			}
			var most int64
			for src, want := range tt.want {
				got := v.BySource[src].get(tt.check)
				if got != want {
					t.Errorf("%s %s = %d, want %d; findings:\n%v", src, tt.check, got, want, v.Findings)
				}
				most = max(most, want)
			}
			if got := v.Counts.get(tt.check); got != most {
				t.Errorf("verdict %s = %d, want %d", tt.check, got, most)
			}
		})
	}
}

// The money of the clean run: every payment sent was recorded, captured = applied + refunded to the cent.
func TestCheckCountsTheMoney(t *testing.T) {
	v := Check(cleanSnapshot())
	want := []MoneyTotals{{Currency: "CNY", SentCents: 598, Sent: 4, WrongAmountCents: 298, WrongAmount: 2,
		CapturedCents: 598, Captured: 4, AppliedCents: 200, Applied: 1, RefundedCents: 398, Refunded: 3}}
	if !slices.Equal(v.Money, want) {
		t.Errorf("money = %+v\nwant    %+v", v.Money, want)
	}
}

func TestCheckOpenOrderBeforeItsDeadlineIsNotStuckButNotQuiet(t *testing.T) {
	s := cleanSnapshot()
	s.Orders = append(s.Orders, OrderSnapshot{OrderID: "o7", Key: "k-o7", Lines: line(1), PayBy: ptr(t0.Add(time.Minute)),
		Action: ActionExpire, KeyOrderIDs: []string{"o7"}, Status: ordersaga.StatusAwaitingPayment})
	s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 7, ptr[int64](7)
	s.DB = nil
	s.Quiet = false
	v := Check(s)
	if v.Counts != (Counts{}) {
		t.Errorf("counts = %+v, want all 0; findings %v", v.Counts, v.Findings)
	}
	if v.OK() {
		t.Error("a run that was not quiet must not be OK")
	}
}

func TestCheckOrderBeingCompensatedHoldsNothing(t *testing.T) {
	// The workflow has decided EXPIRED and restored the database; releasing Redis and recording the close are
	// still to come. Not quiet, but nothing is oversold.
	s := cleanSnapshot()
	payBy := ptr(t0.Add(-10 * time.Second))
	s.Orders = append(s.Orders, OrderSnapshot{OrderID: "o8", Key: "k-o8", Lines: line(1), PayBy: payBy,
		Action: ActionExpire, KeyOrderIDs: []string{"o8"}, Status: ordersaga.StatusExpired})
	s.SKUs[0].API.RedisAvailable = ptr[int64](7)
	s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o8", "A", "DEDUCT", 1}, LedgerRow{"o8", "A", "RESTORE", 1})
	s.DB.Orders = append(s.DB.Orders, DBOrder{OrderID: "o8", Status: ordersaga.StatusAwaitingPayment, PayBy: payBy, Lines: line(1)})
	s.Quiet = false
	v := Check(s)
	if got := v.BySource[SourceDB].OversoldUnits; got != 0 {
		t.Errorf("db oversold = %d, want 0: %v", got, v.Findings)
	}
	if v.BySource[SourceDB].LostUnits != 0 || v.StuckOrders != 0 {
		t.Errorf("counts %+v, want no lost units in the database view and nothing stuck", v.Counts)
	}
}

func TestCheckUnknownOutcomesLeaveConservationToTheDatabase(t *testing.T) {
	// An order the run never heard of holds a unit: the API view cannot tell it from a lost one.
	s := cleanSnapshot()
	s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 7, ptr[int64](7)
	s.DB.Stock["A"] = 7
	s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o-unknown", "A", "DEDUCT", 1})
	s.DB.Orders = append(s.DB.Orders, DBOrder{OrderID: "o-unknown", Status: ordersaga.StatusAwaitingPayment, PayBy: ptr(t0.Add(time.Minute)), Lines: line(1)})
	s.UnknownOutcomes = 1
	v := Check(s)
	if v.Counts != (Counts{}) {
		t.Errorf("counts %+v, want 0: %v", v.Counts, v.Findings)
	}
	s.DB = nil
	if v := Check(s); v.LostUnits != 1 {
		t.Errorf("without the database the API view must still report the unit (lost %d)", v.LostUnits)
	}
}

// limitSnapshot is the clean run with a per-user limit on A: user u holds o1 (PAID, 2 units); its expired and
// cancelled orders (o2, o3, o4) free theirs. Both views know the user of every order.
func limitSnapshot(limit int64) Snapshot {
	s := cleanSnapshot()
	s.SKUs[0].PerUserLimit = limit
	for i := range s.DB.Orders {
		s.DB.Orders[i].UserID = "u"
	}
	return s
}

func TestCheckPerUserLimitPassesAtTheLimit(t *testing.T) {
	v := Check(limitSnapshot(2))
	if !v.OK() {
		t.Fatalf("a user at the limit judged bad: %+v\n%v", v.Counts, v.Findings)
	}
	want := []UserLimitTotals{
		{Source: SourceAPI, Limit: 2, Holders: 1, MaxUnits: 2, AtLimit: 1},
		{Source: SourceDB, Limit: 2, Holders: 1, MaxUnits: 2, AtLimit: 1},
	}
	if !slices.Equal(v.UserLimits, want) {
		t.Errorf("user limits = %+v\nwant          %+v", v.UserLimits, want)
	}
	// Under the limit: nobody at it.
	if v := Check(limitSnapshot(3)); !v.OK() || v.UserLimits[0].AtLimit != 0 || v.UserLimits[0].MaxUnits != 2 {
		t.Errorf("limit 3: OK=%v %+v", v.OK(), v.UserLimits)
	}
	// No limit: no check, no totals.
	if v := Check(limitSnapshot(0)); !v.OK() || v.UserLimits != nil {
		t.Errorf("no limit: OK=%v %+v", v.OK(), v.UserLimits)
	}
}

func TestCheckPerUserLimitFailsOverTheLimit(t *testing.T) {
	tests := []struct {
		name   string
		doctor func(*Snapshot)
		want   map[string]int64
	}{
		{"the limit is 1, the user holds 2 PAID units", func(s *Snapshot) {}, map[string]int64{SourceAPI: 1, SourceDB: 1}},
		{"without the database, from the API's answers alone", func(s *Snapshot) { s.DB = nil }, map[string]int64{SourceAPI: 1}},
		{"an open order counts: a third unit still awaiting payment", func(s *Snapshot) {
			payBy := ptr(t0.Add(time.Minute))
			s.Orders = append(s.Orders, OrderSnapshot{OrderID: "o5", Key: "k-o5", UserID: "u", Lines: line(1), PayBy: payBy,
				Action: ActionExpire, KeyOrderIDs: []string{"o5"}, Status: ordersaga.StatusAwaitingPayment})
			s.SKUs[0].API.DBStock, s.SKUs[0].API.RedisAvailable = 7, ptr[int64](7)
			s.DB.Stock["A"] = 7
			s.DB.Ledger = append(s.DB.Ledger, LedgerRow{"o5", "A", "DEDUCT", 1})
			s.DB.Orders = append(s.DB.Orders, DBOrder{OrderID: "o5", UserID: "u", Status: ordersaga.StatusReserving, PayBy: payBy, Lines: line(1)})
			s.Quiet = false
		}, map[string]int64{SourceAPI: 2, SourceDB: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := limitSnapshot(1)
			tt.doctor(&s)
			v := Check(s)
			if v.OK() {
				t.Fatalf("a user over the limit judged OK: %+v", v.Counts)
			}
			var most int64
			for src, want := range tt.want {
				if got := v.BySource[src].OverLimitUnits; got != want {
					t.Errorf("%s over_limit_units = %d, want %d: %v", src, got, want, v.Findings)
				}
				most = max(most, want)
			}
			if v.OverLimitUnits != most {
				t.Errorf("verdict over_limit_units = %d, want %d", v.OverLimitUnits, most)
			}
			for _, u := range v.UserLimits {
				if u.OverLimit != 1 || u.MaxUnits != 1+tt.want[u.Source] || u.Limit != 1 {
					t.Errorf("%s totals %+v", u.Source, u)
				}
			}
			f := v.Findings[slices.IndexFunc(v.Findings, func(f Finding) bool { return f.Check == CheckOverLimit })]
			if f.UserID != "u" || f.SKU != "A" || !strings.Contains(findingText(f), "user u") {
				t.Errorf("finding %+v does not name the user and the SKU", f)
			}
		})
	}
}

// Another user's units do not add up with u's, nor do another SKU's.
func TestCheckPerUserLimitCountsPerUserAndSKU(t *testing.T) {
	s := limitSnapshot(2)
	s.Orders[0].Lines = line(1)
	s.Orders = append(s.Orders, OrderSnapshot{OrderID: "o5", Key: "k-o5", UserID: "v", Lines: line(1), Action: ActionPay,
		KeyOrderIDs: []string{"o5"}, Status: ordersaga.StatusPaid})
	s.Orders = append(s.Orders, OrderSnapshot{OrderID: "o6", Key: "k-o6", UserID: "u",
		Lines: []ordersaga.Line{{SKU: "B", Qty: 5}}, Action: ActionPay, KeyOrderIDs: []string{"o6"}, Status: ordersaga.StatusPaid})
	s.DB = nil
	j := &judge{v: Verdict{BySource: map[string]Counts{}}}
	checkUserLimit(j, s, SourceAPI, holdings(s.Orders, func(o OrderSnapshot) string { return o.UserID },
		func(o OrderSnapshot) ordersaga.Status { return o.Status }, func(o OrderSnapshot) string { return o.OrderID },
		func(o OrderSnapshot) []ordersaga.Line { return o.Lines }))
	want := []UserLimitTotals{{Source: SourceAPI, Limit: 2, Holders: 2, MaxUnits: 1}}
	if !slices.Equal(j.v.UserLimits, want) || len(j.v.Findings) != 0 {
		t.Errorf("totals %+v, findings %v; want %+v (B has no limit)", j.v.UserLimits, j.v.Findings, want)
	}
}
