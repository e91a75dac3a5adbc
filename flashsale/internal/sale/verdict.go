package sale

import (
	"fmt"
	"slices"
	"sort"
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
	CheckUndersold  = "undersold_units"

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
	// UndersoldUnits: units a buyer was told were sold out while they were provably free — neither held nor
	// sold whatever every request sent before the answer did (verdict_undersold.go); per SKU the most at one
	// such answer, summed over the SKUs.
	UndersoldUnits int64 `json:"undersold_units"`
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
	case CheckUndersold:
		return &c.UndersoldUnits
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
	CheckUndersold, CheckRefundsUnsent, CheckRefundsNotAtProvider, CheckRefundsUnknown, CheckRefundsTwice, CheckRefundAmountMismatch, CheckRefundRefMismatch, CheckRefundsRefused}

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
	// SoldOutJudged is the sold-out answers the undersold check judged (0 when there were none, or the snapshot
	// has no request log): a clean undersold_units means something only when it is not 0.
	SoldOutJudged int `json:"sold_out_judged"`
	// Refunds is what the check of the refunds at the provider saw (nil when it did not run).
	Refunds *RefundTotals `json:"refunds,omitempty"`
	// RefundsNotChecked says why the refunds at the provider were not checked ("" when they were, or when
	// --provider-check off).
	RefundsNotChecked string `json:"refunds_not_checked,omitempty"`
	// Fairness is what the sale buyers' visits say of the line (fairness.go; nil without a buyer log). Its
	// overtakes fail the verdict only when judged (--max-overtakes).
	Fairness *Fairness `json:"fairness,omitempty"`
}

// CheckOvertakes names the finding of overtakes above --max-overtakes (not one of AllChecks: judged only on
// demand).
const CheckOvertakes = "overtakes"

// OK reports whether the run was quiet at the end, every count is 0 and, when judged, the overtakes are
// within their bound.
func (v Verdict) OK() bool { return v.Quiet && v.Counts == (Counts{}) && !v.Fairness.Failed() }

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
	if s.Buyers != nil {
		f := judgeFairness(s.Buyers)
		j.v.Fairness = f
		if f.Failed() {
			j.v.Findings = append(j.v.Findings, Finding{Check: CheckOvertakes, Source: SourceAPI, N: f.Overtakes,
				Detail: fmt.Sprintf("%d buyers placed while a buyer of the same SKU who arrived at least %s earlier still waited and was then told sold out or left (at most %d allowed)", f.Overtakes, OvertakeLead, *f.MaxOvertakes)})
		}
	}
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
