package sale

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
)

// Names of the checks, as Finding.Check and in the report.
const (
	CheckOversold   = "oversold_units"
	CheckLost       = "lost_units"
	CheckDuplicate  = "duplicate_deductions"
	CheckStuck      = "stuck_orders"
	CheckRefund     = "double_refunds"
	CheckUnsettled  = "unsettled_payments"
	CheckState      = "state_errors"
	CheckCacheDrift = "cache_drift"
	CheckOverLimit  = "over_limit_units"

	// The refunds at the provider (verdict_refunds.go), checked when the run reads the provider's report.
	CheckRefundsUnsent        = "refunds_unsent"
	CheckRefundsNotAtProvider = "refunds_not_at_provider"
	CheckRefundsUnknown       = "refunds_unknown_at_provider"
	CheckRefundsTwice         = "refunds_twice_at_provider"
	CheckRefundAmountMismatch = "refund_amount_mismatch"
	CheckRefundRefMismatch    = "refund_ref_mismatch"
	CheckRefundsRefused       = "refunds_refused"
)

// Sources of a finding.
const (
	SourceAPI = "api"
	SourceDB  = "db"
	// SourceProvider: the refund provider's report against the database's payments rows.
	SourceProvider = "provider"
)

// Counts are the verdict's figures; every one must be 0.
type Counts struct {
	// OversoldUnits: units sold or promised beyond the stock (I2), or created by a bad restore (I1).
	OversoldUnits int64 `json:"oversold_units"`
	// LostUnits: units neither sold nor back on sale — leaked holds, deducts kept by unpaid orders,
	// stock that vanished (I1, I3).
	LostUnits int64 `json:"lost_units"`
	// DuplicateDeductions: an order line whose ledger took more units than ordered or gave back more than
	// it took (a line deducted or restored more than once, in units: the schema already refuses a second
	// row), or a second order for one Idempotency-Key (I4).
	DuplicateDeductions int64 `json:"duplicate_deductions"`
	// StuckOrders: orders still open past their payment deadline plus the grace (I5).
	StuckOrders int64 `json:"stuck_orders"`
	// DoubleRefunds: one payment event refunded more than once, or both applied and refunded (I4).
	DoubleRefunds int64 `json:"double_refunds"`
	// UnsettledPayments: captured payments neither applied to a PAID order of their amount nor refunded —
	// a row neither kept nor refunded, an applied amount that is not the order's, a payment answered 200
	// without its payments row — so captured ≠ applied + refunded (docs/payments.md).
	UnsettledPayments int64 `json:"unsettled_payments"`
	// StateErrors: a final state contradicting an answer — two applied payments on an order, a payment
	// answered "applied" on an order that is not PAID, a cancel answered CANCELLED on one that is not,
	// the API and the database disagreeing about a closed order.
	StateErrors int64 `json:"state_errors"`
	// CacheDrift: units Redis promises beyond what the database has (I3) once quiet.
	CacheDrift int64 `json:"cache_drift"`
	// OverLimitUnits: units of a SKU one user holds beyond the SKU's per-user limit, summed over the users
	// (RESERVING, AWAITING_PAYMENT and PAID orders count; only when the run set a limit).
	OverLimitUnits int64 `json:"over_limit_units"`
	// RefundsUnsent: refunds recorded on the run's orders still neither sent to the provider nor refused by
	// it after the wait (checked against the provider only).
	RefundsUnsent int64 `json:"refunds_unsent"`
	// RefundsNotAtProvider: refunds marked sent whose payment event the provider has no refund for.
	RefundsNotAtProvider int64 `json:"refunds_not_at_provider"`
	// RefundsUnknownAtProvider: refunds the provider executed for an order of the run whose event is not a
	// recorded refund (a kept payment refunded, or an event the database does not have).
	RefundsUnknownAtProvider int64 `json:"refunds_unknown_at_provider"`
	// RefundsTwiceAtProvider: a recorded refund that appears more than once in the provider's report (each
	// one past the first).
	RefundsTwiceAtProvider int64 `json:"refunds_twice_at_provider"`
	// RefundAmountMismatch: a refund whose amount or currency at the provider is not the payments row's.
	RefundAmountMismatch int64 `json:"refund_amount_mismatch"`
	// RefundRefMismatch: a sent refund whose refund_ref is not the provider's refund_id for its event.
	RefundRefMismatch int64 `json:"refund_ref_mismatch"`
	// RefundsRefused: refunds the provider refused for good, as recorded on the run's rows.
	RefundsRefused int64 `json:"refunds_refused"`
}

// field is the count of a check (nil for a name that is not one).
func (c *Counts) field(check string) *int64 {
	switch check {
	case CheckOversold:
		return &c.OversoldUnits
	case CheckLost:
		return &c.LostUnits
	case CheckDuplicate:
		return &c.DuplicateDeductions
	case CheckStuck:
		return &c.StuckOrders
	case CheckRefund:
		return &c.DoubleRefunds
	case CheckUnsettled:
		return &c.UnsettledPayments
	case CheckState:
		return &c.StateErrors
	case CheckCacheDrift:
		return &c.CacheDrift
	case CheckOverLimit:
		return &c.OverLimitUnits
	case CheckRefundsUnsent:
		return &c.RefundsUnsent
	case CheckRefundsNotAtProvider:
		return &c.RefundsNotAtProvider
	case CheckRefundsUnknown:
		return &c.RefundsUnknownAtProvider
	case CheckRefundsTwice:
		return &c.RefundsTwiceAtProvider
	case CheckRefundAmountMismatch:
		return &c.RefundAmountMismatch
	case CheckRefundRefMismatch:
		return &c.RefundRefMismatch
	case CheckRefundsRefused:
		return &c.RefundsRefused
	}
	return nil
}

func (c Counts) get(check string) int64 {
	if f := c.field(check); f != nil {
		return *f
	}
	return 0
}

func (c *Counts) add(check string, n int64) {
	if f := c.field(check); f != nil {
		*f += n
	}
}

// AllChecks lists the checks in report order.
var AllChecks = []string{CheckOversold, CheckLost, CheckDuplicate, CheckStuck, CheckRefund, CheckUnsettled, CheckState, CheckCacheDrift, CheckOverLimit,
	CheckRefundsUnsent, CheckRefundsNotAtProvider, CheckRefundsUnknown, CheckRefundsTwice, CheckRefundAmountMismatch, CheckRefundRefMismatch, CheckRefundsRefused}

// Finding is one violation, with what it is about.
type Finding struct {
	Check   string `json:"check"`
	Source  string `json:"source"`
	SKU     string `json:"sku,omitempty"`
	UserID  string `json:"user_id,omitempty"`
	OrderID string `json:"order_id,omitempty"`
	EventID string `json:"event_id,omitempty"`
	N       int64  `json:"n"`
	Detail  string `json:"detail"`
}

// Verdict is the outcome of Check. Counts is, per check, the larger of what the API and the database
// showed (both see the same violation; adding them would count it twice).
type Verdict struct {
	Counts
	Quiet    bool              `json:"quiet"`
	Sources  []string          `json:"sources"`
	BySource map[string]Counts `json:"by_source"`
	Findings []Finding         `json:"findings"`
	// Money is the run's money per currency: what it paid (API) and what the database recorded.
	Money []MoneyTotals `json:"money"`
	// UserLimits is what the per-user limit check saw, per source (only when the run set a limit).
	UserLimits []UserLimitTotals `json:"user_limits,omitempty"`
	// Refunds is what the check of the refunds at the provider saw (nil when it did not run).
	Refunds *RefundTotals `json:"refunds,omitempty"`
	// RefundsNotChecked says why the refunds at the provider were not checked ("" when they were, or when
	// --provider-check off).
	RefundsNotChecked string `json:"refunds_not_checked,omitempty"`
}

// UserLimitTotals is the per-user limit as one source saw it: the units of a SKU each user holds (its
// RESERVING, AWAITING_PAYMENT and PAID orders), over every (user, SKU) pair with a limit.
type UserLimitTotals struct {
	Source string `json:"source"`
	// Limit is the largest per-user limit of the run's SKUs (they all get the same, --per-user-limit).
	Limit int64 `json:"limit"`
	// Holders is the number of (user, SKU) pairs holding at least one unit; MaxUnits the most units one
	// user holds of one SKU; AtLimit the pairs holding exactly the limit, OverLimit those holding more.
	Holders   int   `json:"holders"`
	MaxUnits  int64 `json:"max_units"`
	AtLimit   int   `json:"at_limit"`
	OverLimit int   `json:"over_limit"`
}

// text is the totals in one line.
func (u UserLimitTotals) text() string {
	return fmt.Sprintf("%d: most units one user holds of a SKU %d; users at the limit %d, over it %d (of %d holding any)",
		u.Limit, u.MaxUnits, u.AtLimit, u.OverLimit, u.Holders)
}

// holding is the units one user holds of one SKU, and the orders that hold them.
type holding struct {
	units  int64
	orders []string
}

// holdStatuses are the statuses whose units count against the per-user limit (docs/http-api.md): cancelled,
// expired and rejected orders free theirs.
var holdStatuses = []ordersaga.Status{ordersaga.StatusReserving, ordersaga.StatusAwaitingPayment, ordersaga.StatusPaid}

// checkUserLimit judges the per-user limit from one source's orders: held maps (user, SKU) to what the user
// holds. It adds the source's totals; nothing when no SKU of the run has a limit.
func checkUserLimit(j *judge, s Snapshot, source string, held map[[2]string]*holding) {
	limits := map[string]int64{}
	var most int64
	for _, sku := range s.SKUs {
		if sku.PerUserLimit > 0 {
			limits[sku.SKU] = sku.PerUserLimit
			most = max(most, sku.PerUserLimit)
		}
	}
	if len(limits) == 0 {
		return
	}
	t := UserLimitTotals{Source: source, Limit: most}
	keys := slices.SortedFunc(maps.Keys(held), func(a, b [2]string) int {
		if c := strings.Compare(a[1], b[1]); c != 0 {
			return c
		}
		return strings.Compare(a[0], b[0])
	})
	for _, k := range keys {
		user, sku, h := k[0], k[1], held[k]
		limit, ok := limits[sku]
		if !ok || h.units <= 0 {
			continue
		}
		t.Holders++
		t.MaxUnits = max(t.MaxUnits, h.units)
		switch {
		case h.units == limit:
			t.AtLimit++
		case h.units > limit:
			t.OverLimit++
			j.bad(Finding{Check: CheckOverLimit, Source: source, SKU: sku, UserID: user, N: h.units - limit,
				Detail: fmt.Sprintf("holds %d units > per-user limit %d (orders %v)", h.units, limit, h.orders)})
		}
	}
	j.v.UserLimits = append(j.v.UserLimits, t)
}

// holdings sums, per (user, SKU), the units of the orders in holdStatuses.
func holdings[O any](orders []O, user func(O) string, status func(O) ordersaga.Status, id func(O) string, lines func(O) []ordersaga.Line) map[[2]string]*holding {
	out := map[[2]string]*holding{}
	for _, o := range orders {
		if !slices.Contains(holdStatuses, status(o)) {
			continue
		}
		for _, l := range lines(o) {
			k := [2]string{user(o), l.SKU}
			h := out[k]
			if h == nil {
				h = &holding{}
				out[k] = h
			}
			h.units += l.Qty
			h.orders = append(h.orders, id(o))
		}
	}
	return out
}

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

// OK reports whether the run was quiet at the end and every count is 0.
func (v Verdict) OK() bool { return v.Quiet && v.Counts == (Counts{}) }

type judge struct {
	v Verdict
}

func (j *judge) bad(f Finding) {
	if f.N <= 0 {
		return
	}
	c := j.v.BySource[f.Source]
	c.add(f.Check, f.N)
	j.v.BySource[f.Source] = c
	j.v.Findings = append(j.v.Findings, f)
}

// Check judges a snapshot. It is a pure function: everything it knows is in s.
//
// It is not internal/invariants.Check, on purpose: that one reads the service's stores (the database through
// sqlstore.Store and Redis through redisstock.Store, whose address the tool is never given) and answers
// I1–I4 as lines of text for the whole database. The tool judges a run from outside, from the API's answers
// and, when given the database, a read-only snapshot of the run's own SKUs; it must count units per check
// (the report's figures), add I5 and the money, and judge a recorded snapshot again (--rejudge). The rules
// are the same as docs/design.md's I1–I5; the result types and statuses are the service's (ordersaga).
func Check(s Snapshot) Verdict {
	j := &judge{v: Verdict{Quiet: s.Quiet, BySource: map[string]Counts{SourceAPI: {}}, Sources: []string{SourceAPI}}}
	checkAPI(j, s)
	if s.DB != nil {
		j.v.Sources = append(j.v.Sources, SourceDB)
		j.v.BySource[SourceDB] = Counts{}
		checkDB(j, s)
		if s.Provider != nil {
			j.v.Sources = append(j.v.Sources, SourceProvider)
			j.v.BySource[SourceProvider] = Counts{}
			checkRefunds(j, s.DB, s.Provider)
		}
	}
	j.v.RefundsNotChecked = s.ProviderSkipped
	for _, check := range AllChecks {
		var most int64
		for _, c := range j.v.BySource {
			most = max(most, c.get(check))
		}
		j.v.Counts.add(check, most)
	}
	if !s.Quiet {
		open := 0
		for _, o := range s.Orders {
			if !o.Status.Final() {
				open++
			}
		}
		j.v.Findings = append(j.v.Findings, Finding{Check: "quiet", Source: SourceAPI, N: int64(open),
			Detail: fmt.Sprintf("not quiet when the wait ended: %d placed orders still open or holds left; the verdict is not final", open)})
	}
	if s.UnknownOutcomes > 0 {
		j.v.Findings = append(j.v.Findings, Finding{Check: "unknown_outcomes", Source: SourceAPI, N: int64(s.UnknownOutcomes),
			Detail: fmt.Sprintf("%d requests never got a usable answer: orders the API view does not know may exist (the database view sees them)", s.UnknownOutcomes)})
	}
	sortFindings(j.v.Findings)
	sort.Slice(j.v.UserLimits, func(a, b int) bool { return j.v.UserLimits[a].Source < j.v.UserLimits[b].Source })
	sort.Slice(j.v.Money, func(a, b int) bool { return j.v.Money[a].Currency < j.v.Money[b].Currency })
	return j.v
}

// units sums the units per SKU of orders in the given statuses.
func unitsBySKU[O any](orders []O, status func(O) ordersaga.Status, lines func(O) []ordersaga.Line, want ...ordersaga.Status) map[string]int64 {
	out := map[string]int64{}
	for _, o := range orders {
		if !slices.Contains(want, status(o)) {
			continue
		}
		for _, l := range lines(o) {
			out[l.SKU] += l.Qty
		}
	}
	return out
}

var openStatuses = []ordersaga.Status{ordersaga.StatusAwaitingPayment, ordersaga.StatusReserving, ""}

// stuck reports whether an order is open past its deadline plus the grace (or its status is unknown).
func stuck(s Snapshot, status ordersaga.Status, payBy *time.Time) bool {
	if status.Final() {
		return false
	}
	if status == "" || payBy == nil {
		return true
	}
	return s.TakenAt.After(payBy.Add(s.Grace))
}

func checkAPI(j *judge, s Snapshot) {
	ordStatus := func(o OrderSnapshot) ordersaga.Status { return o.Status }
	ordLines := func(o OrderSnapshot) []ordersaga.Line { return o.Lines }
	paid := unitsBySKU(s.Orders, ordStatus, ordLines, ordersaga.StatusPaid)
	live := unitsBySKU(s.Orders, ordStatus, ordLines, openStatuses...)

	for _, sku := range s.SKUs {
		inv := sku.API
		if inv == nil {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: sku.Initial,
				Detail: "inventory could not be read at the end; every unit is unaccounted for"})
			continue
		}
		sold := paid[sku.SKU] + live[sku.SKU]
		// Orders the run never heard of (lost answers) hold units the API view cannot account for: then the
		// database view, which sees every order, judges conservation alone.
		conservation := s.UnknownOutcomes == 0 || s.DB == nil
		if n := sold - sku.Initial; n > 0 {
			j.bad(Finding{Check: CheckOversold, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("units in PAID + open orders = %d > stock %d", sold, sku.Initial)})
		} else if n := inv.DBStock + sold - sku.Initial; n > 0 && conservation {
			j.bad(Finding{Check: CheckOversold, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("db_stock %d + units in PAID and open orders %d = %d > stock %d: units created (a restore too many)", inv.DBStock, sold, inv.DBStock+sold, sku.Initial)})
		} else if inv.DBStock < 0 {
			j.bad(Finding{Check: CheckOversold, Source: SourceAPI, SKU: sku.SKU, N: -inv.DBStock,
				Detail: fmt.Sprintf("db_stock %d is negative", inv.DBStock)})
		}
		if n := sku.Initial - inv.DBStock - sold; n > 0 && conservation {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("stock %d − db_stock %d − units in PAID and open orders %d = %d units neither sold nor on sale", sku.Initial, inv.DBStock, sold, n)})
		}
		if inv.RedisAvailable == nil {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: max(inv.DBStock, 0),
				Detail: "not loaded in Redis: nothing the database has can be sold"})
			continue
		}
		avail := *inv.RedisAvailable
		if n := inv.DBStock - inv.HeldUnits() - avail; n > 0 {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("redis_available %d < db_stock %d − holds %d: Redis will not sell units the database has", avail, inv.DBStock, inv.HeldUnits())})
		}
		if inv.HeldUnits() > 0 {
			j.bad(Finding{Check: CheckLost, Source: SourceAPI, SKU: sku.SKU, N: inv.HeldUnits(),
				Detail: fmt.Sprintf("%d units still held in Redis after the wait (leaked holds)", inv.HeldUnits())})
		}
		if n := avail - (inv.DBStock - inv.HeldUnits()); n > 0 {
			j.bad(Finding{Check: CheckCacheDrift, Source: SourceAPI, SKU: sku.SKU, N: n,
				Detail: fmt.Sprintf("redis_available %d > db_stock %d − holds %d (I3)", avail, inv.DBStock, inv.HeldUnits())})
		}
	}

	// The per-user limit, from the orders the run placed (their status as last read).
	checkUserLimit(j, s, SourceAPI, holdings(s.Orders, func(o OrderSnapshot) string { return o.UserID }, ordStatus,
		func(o OrderSnapshot) string { return o.OrderID }, ordLines))

	// One order per Idempotency-Key.
	keys := map[string][]string{}
	for _, o := range s.Orders {
		for _, id := range o.KeyOrderIDs {
			if !slices.Contains(keys[o.Key], id) {
				keys[o.Key] = append(keys[o.Key], id)
			}
		}
	}
	for key, ids := range keys {
		if len(ids) > 1 {
			j.bad(Finding{Check: CheckDuplicate, Source: SourceAPI, N: int64(len(ids) - 1),
				Detail: fmt.Sprintf("Idempotency-Key %s answered 201 with %d different orders %v", key, len(ids), ids)})
		}
	}

	applied := map[string][]string{} // order -> events answered applied
	unsure := map[string]bool{}      // order -> a delivery went unanswered
	for _, p := range s.Payments {
		if p.Failed > 0 {
			unsure[p.OrderID] = true
		}
		var nApplied, nRefunded int64
		for _, r := range p.Results {
			switch res := ordersaga.PaymentResult(r); {
			case res == ordersaga.PaymentApplied:
				nApplied++
			case res.Refunds(): // refunded and rejected_amount
				nRefunded++
			}
		}
		if len(p.Results) > 0 {
			m := j.money(p.Currency)
			m.Sent++
			m.SentCents += p.AmountCents
			if p.WrongAmount {
				m.WrongAmount++
				m.WrongAmountCents += p.AmountCents
			}
		}
		if p.WrongAmount && nApplied > 0 {
			j.bad(Finding{Check: CheckUnsettled, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: 1,
				Detail: fmt.Sprintf("a payment of the wrong amount (%d %s) was answered applied", p.AmountCents, p.Currency)})
		}
		if nRefunded > 1 {
			j.bad(Finding{Check: CheckRefund, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: nRefunded - 1,
				Detail: fmt.Sprintf("event answered refunded %d times (a redelivery must answer duplicate)", nRefunded)})
		}
		if nApplied > 0 && nRefunded > 0 {
			j.bad(Finding{Check: CheckRefund, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: 1,
				Detail: "event answered both applied and refunded"})
		}
		if nApplied > 1 {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: p.OrderID, EventID: p.EventID, N: nApplied - 1,
				Detail: fmt.Sprintf("event answered applied %d times (a redelivery must answer duplicate)", nApplied)})
		}
		if nApplied > 0 {
			applied[p.OrderID] = append(applied[p.OrderID], p.EventID)
		}
	}

	for _, o := range s.Orders {
		if stuck(s, o.Status, o.PayBy) {
			detail := fmt.Sprintf("status %q past its deadline plus %s", o.Status, s.Grace)
			if o.Status == "" {
				detail = "status could not be read"
			}
			j.bad(Finding{Check: CheckStuck, Source: SourceAPI, OrderID: o.OrderID, N: 1, Detail: detail})
		}
		if ev := applied[o.OrderID]; len(ev) > 1 {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: int64(len(ev) - 1),
				Detail: fmt.Sprintf("%d payment events applied to one order %v (charged twice)", len(ev), ev)})
		}
		if len(applied[o.OrderID]) > 0 && o.Status.Final() && o.Status != ordersaga.StatusPaid {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: 1,
				Detail: fmt.Sprintf("a payment was answered applied but the order is %s", o.Status)})
		}
		if o.Status == ordersaga.StatusPaid && len(applied[o.OrderID]) == 0 && !unsure[o.OrderID] {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: 1,
				Detail: "order is PAID but no payment of this run was answered applied"})
		}
		if o.CancelStatus == ordersaga.StatusCancelled && o.Status.Final() && o.Status != ordersaga.StatusCancelled {
			j.bad(Finding{Check: CheckState, Source: SourceAPI, OrderID: o.OrderID, N: 1,
				Detail: fmt.Sprintf("cancel answered CANCELLED but the order is %s", o.Status)})
		}
	}
}

func sortFindings(fs []Finding) {
	rank := func(check string) int {
		if i := slices.Index(AllChecks, check); i >= 0 {
			return i
		}
		return len(AllChecks)
	}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if rank(a.Check) != rank(b.Check) {
			return rank(a.Check) < rank(b.Check)
		}
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.SKU != b.SKU {
			return a.SKU < b.SKU
		}
		if a.UserID != b.UserID {
			return a.UserID < b.UserID
		}
		if a.OrderID != b.OrderID {
			return a.OrderID < b.OrderID
		}
		if a.EventID != b.EventID {
			return a.EventID < b.EventID
		}
		return a.Detail < b.Detail
	})
}
