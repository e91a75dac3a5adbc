package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
)

// Every test order starts at the same virtual instant and waits testTimeout for payment.
// testStart is in the future: the test environment gives local activities a deadline from its virtual clock,
// and a deadline in the real past would expire every local activity retry at once.
var testStart = time.Date(2035, 11, 11, 0, 0, 0, 0, time.UTC)

const (
	testOrderID  = "o-1111"
	testUserID   = "u-42"
	testCurrency = "CNY"
	testTimeout  = 10 * time.Minute
)

// testPrices is what the mocked DeductOrder prices each SKU at.
var testPrices = map[string]int64{"SKU-A": 999, "SKU-B": 500, "SKU-C": 1500}

// Activity names as recorded by the mocks.
const (
	actReserve  = "ReserveLine"
	actDeduct   = "DeductOrder"
	actConfirm  = "ConfirmLines"
	actRestore  = "RestoreOrder"
	actRelease  = "ReleaseLine"
	actClose    = "CloseOrder"
	actMarkPaid = "MarkPaid"
	actRecord   = "RecordPayment"
)

// call is one activity attempt as its mock saw it: a retried activity is one call per attempt.
type call struct {
	Activity string
	Input    any
}

func (c call) String() string { return fmt.Sprintf("%s%+v", c.Activity, c.Input) }

// harness runs one OrderWorkflow on virtual time with every activity mocked and recorded in the order
// the activities ran. The behaviour hooks default to the happy path; set them before run.
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	in  OrderInput

	reserve  func(ctx context.Context, in activities.LineInput) (ordersaga.ReserveOutcome, error)
	deduct   func(ctx context.Context, in ordersaga.DeductInput) (ordersaga.DeductResult, error)
	restore  func(ctx context.Context, in activities.RestoreInput) ([]ordersaga.RestoreLine, error)
	markPaid func(ctx context.Context, in activities.MarkPaidInput) error
	recordP  func(ctx context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error)
	// closeOrder answers CloseOrder (nil: the record as asked)
	closeOrder func(ctx context.Context, rec ordersaga.OrderRecord) (ordersaga.OrderRecord, error)

	// metrics counts the workflow's own metrics (the SDK's are left out).
	metrics *countingMetrics

	mu    sync.Mutex // activity mocks run on their own goroutines
	calls []call
	times []time.Time // virtual time of each call
}

func newHarness(t *testing.T, lines ...ordersaga.Line) *harness {
	t.Helper()
	if len(lines) == 0 {
		lines = []ordersaga.Line{{SKU: "SKU-A", Qty: 2}, {SKU: "SKU-B", Qty: 1}}
	}
	var suite testsuite.WorkflowTestSuite
	metrics := newCountingMetrics()
	suite.SetMetricsHandler(metrics)
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(testStart)
	env.RegisterWorkflow(OrderWorkflow)
	env.RegisterActivity(&activities.Activities{})
	h := &harness{
		t:       t,
		env:     env,
		metrics: metrics,
		in: OrderInput{
			OrderID: testOrderID, UserID: testUserID, Currency: testCurrency,
			Lines: lines, PaymentTimeout: testTimeout, ConfirmInDeduct: true,
		},
	}
	h.mockActivities()
	t.Cleanup(func() { env.AssertExpectations(t) })
	return h
}

func (h *harness) record(name string, in any) {
	now := h.env.Now().UTC()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, call{Activity: name, Input: in})
	h.times = append(h.times, now)
}

func (h *harness) recorded() ([]call, []time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]call(nil), h.calls...), append([]time.Time(nil), h.times...)
}

func (h *harness) names() []string {
	calls, _ := h.recorded()
	names := make([]string, len(calls))
	for i, c := range calls {
		names[i] = c.Activity
	}
	return names
}

// mockActivities mocks every activity (Maybe: the exact calls are asserted with assertCalls instead).
func (h *harness) mockActivities() {
	var a *activities.Activities
	h.env.OnActivity(a.ReserveLine, mock.Anything, mock.Anything).Maybe().Return(
		func(ctx context.Context, in activities.LineInput) (ordersaga.ReserveOutcome, error) {
			h.record(actReserve, in)
			if h.reserve != nil {
				return h.reserve(ctx, in)
			}
			return ordersaga.Reserved, nil
		})
	h.env.OnActivity(a.DeductOrder, mock.Anything, mock.Anything).Maybe().Return(
		func(ctx context.Context, in activities.DeductInput) (ordersaga.DeductResult, error) {
			h.record(actDeduct, in)
			if h.deduct != nil {
				return h.deduct(ctx, in.DeductInput)
			}
			lines := priced(in.Lines)
			return ordersaga.DeductResult{Lines: lines, AmountCents: mustAmount(lines)}, nil
		})
	h.env.OnActivity(a.ConfirmLines, mock.Anything, mock.Anything).Maybe().Return(
		func(_ context.Context, in activities.ConfirmInput) error {
			h.record(actConfirm, in)
			return nil
		})
	h.env.OnActivity(a.RestoreOrder, mock.Anything, mock.Anything).Maybe().Return(
		func(ctx context.Context, in activities.RestoreInput) ([]ordersaga.RestoreLine, error) {
			h.record(actRestore, in)
			if h.restore != nil {
				return h.restore(ctx, in)
			}
			out := make([]ordersaga.RestoreLine, len(in.Lines))
			for i, l := range in.Lines {
				out[i] = ordersaga.RestoreLine{SKU: l.SKU, Qty: l.Qty}
			}
			return out, nil
		})
	h.env.OnActivity(a.ReleaseLine, mock.Anything, mock.Anything).Maybe().Return(
		func(_ context.Context, in activities.LineInput) (ordersaga.ReleaseOutcome, error) {
			h.record(actRelease, in)
			return ordersaga.Released, nil
		})
	h.env.OnActivity(a.CloseOrder, mock.Anything, mock.Anything).Maybe().Return(
		func(ctx context.Context, rec ordersaga.OrderRecord) (ordersaga.OrderRecord, error) {
			h.record(actClose, rec)
			if h.closeOrder != nil {
				return h.closeOrder(ctx, rec)
			}
			return rec, nil
		})
	h.env.OnActivity(a.MarkPaid, mock.Anything, mock.Anything).Maybe().Return(
		func(ctx context.Context, in activities.MarkPaidInput) error {
			h.record(actMarkPaid, in)
			if h.markPaid != nil {
				return h.markPaid(ctx, in)
			}
			return nil
		})
	h.env.OnActivity(a.RecordPayment, mock.Anything, mock.Anything).Maybe().Return(
		func(ctx context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
			h.record(actRecord, p)
			if h.recordP != nil {
				return h.recordP(ctx, p)
			}
			return p, nil
		})
}

// run executes the workflow to completion and returns its result.
func (h *harness) run() ordersaga.Order {
	h.t.Helper()
	h.env.ExecuteWorkflow(OrderWorkflow, h.in)
	require.True(h.t, h.env.IsWorkflowCompleted(), "workflow did not complete")
	require.NoError(h.t, h.env.GetWorkflowError())
	var o ordersaga.Order
	require.NoError(h.t, h.env.GetWorkflowResult(&o))
	return o
}

func (h *harness) at(d time.Duration, fn func()) { h.env.RegisterDelayedCallback(fn, d) }

func (h *harness) signalPayment(d time.Duration, p PaymentSignal) {
	h.at(d, func() { h.env.SignalWorkflow(SignalPayment, p) })
}

// updateOutcome is what the callbacks of one update saw; read it after run.
type updateOutcome struct {
	accepted  bool
	rejected  error
	completed bool
	value     any
	err       error
	// ranBefore lists the activities that had run when the update completed, at is when (virtual time).
	ranBefore []string
	at        time.Time
}

func (h *harness) update(d time.Duration, name, id string, args ...any) *updateOutcome {
	u := &updateOutcome{}
	h.at(d, func() {
		h.env.UpdateWorkflow(name, id, &testsuite.TestUpdateCallback{
			OnAccept: func() { u.accepted = true },
			OnReject: func(err error) { u.rejected = err },
			OnComplete: func(v any, err error) {
				u.completed, u.value, u.err = true, v, err
				u.ranBefore, u.at = h.names(), h.env.Now().UTC()
			},
		}, args...)
	})
	return u
}

func (h *harness) query(d time.Duration) *ordersaga.Order {
	var o ordersaga.Order
	h.at(d, func() {
		v, err := h.env.QueryWorkflow(QueryStatus)
		if assert.NoError(h.t, err) {
			assert.NoError(h.t, v.Get(&o))
		}
	})
	return &o
}

// assertCalls checks the recorded activity calls step by step: the steps in this order, the calls inside
// one step (a parallel fan-out) in any order.
func (h *harness) assertCalls(steps ...[]call) {
	h.t.Helper()
	got, _ := h.recorded()
	var want []call
	for _, s := range steps {
		want = append(want, s...)
	}
	if !assert.Len(h.t, got, len(want), "activity calls\n got: %v\nwant: %v", got, want) {
		return
	}
	i := 0
	for k, s := range steps {
		assert.ElementsMatch(h.t, s, got[i:i+len(s)], "step %d of the activity calls\n got: %v", k, got)
		i += len(s)
	}
}

// callTimes returns the virtual times at which the named activity ran, in order.
func (h *harness) callTimes(name string) []time.Time {
	calls, times := h.recorded()
	var out []time.Time
	for i, c := range calls {
		if c.Activity == name {
			out = append(out, times[i])
		}
	}
	return out
}

func priced(lines []ordersaga.Line) []ordersaga.Line {
	out := make([]ordersaga.Line, len(lines))
	for i, l := range lines {
		out[i] = ordersaga.Line{SKU: l.SKU, Qty: l.Qty, UnitPriceCents: testPrices[l.SKU]}
	}
	return out
}

func (h *harness) amount() int64 { return mustAmount(priced(h.in.Lines)) }

// mustAmount is the lines' amount; the tests' prices always fit.
func mustAmount(lines []ordersaga.Line) int64 {
	a, err := ordersaga.Amount(lines)
	if err != nil {
		panic(err)
	}
	return a
}

func (h *harness) payBy() time.Time { return testStart.Add(h.in.PaymentTimeout) }

func (h *harness) payment(eventID string) PaymentSignal {
	return PaymentSignal{EventID: eventID, AmountCents: h.amount(), Currency: testCurrency}
}

func (h *harness) lineInput(l ordersaga.Line) activities.LineInput {
	return activities.LineInput{OrderID: h.in.OrderID, UserID: h.in.UserID, SKU: l.SKU, Qty: l.Qty}
}

func (h *harness) reserveAll() []call {
	out := make([]call, len(h.in.Lines))
	for i, l := range h.in.Lines {
		out[i] = call{actReserve, h.lineInput(l)}
	}
	return out
}

func (h *harness) releaseAll() []call {
	out := make([]call, len(h.in.Lines))
	for i, l := range h.in.Lines {
		out[i] = call{actRelease, h.lineInput(l)}
	}
	return out
}

// deductCall is the deduct of every line; with ConfirmInDeduct it drops the holds of every line (the default
// reserve holds each in Redis).
func (h *harness) deductCall(payBy time.Time) []call {
	var held []string
	if h.in.ConfirmInDeduct {
		held = lineSKUs(h.in.Lines)
	}
	return h.deductConfirming(payBy, held)
}

// deductConfirming is the deduct of every line that drops the holds of the lines held.
func (h *harness) deductConfirming(payBy time.Time, held []string) []call {
	return []call{{actDeduct, activities.DeductInput{DeductInput: ordersaga.DeductInput{
		OrderID: h.in.OrderID, UserID: h.in.UserID, Currency: h.in.Currency, PayBy: payBy, Lines: h.in.Lines,
	}, ConfirmHolds: held}}}
}

// confirmCall is the separate confirm step: none with ConfirmInDeduct (the deduct drops the holds).
func (h *harness) confirmCall() []call {
	if h.in.ConfirmInDeduct {
		return nil
	}
	return []call{{actConfirm, activities.ConfirmInput{OrderID: h.in.OrderID, SKUs: lineSKUs(h.in.Lines)}}}
}

func (h *harness) restoreCall(lines []ordersaga.Line) []call {
	return []call{{actRestore, activities.RestoreInput{OrderID: h.in.OrderID, Lines: lines}}}
}

func (h *harness) closeCall(s ordersaga.Status, reason string, payBy *time.Time, lines []ordersaga.Line) []call {
	return []call{{actClose, ordersaga.OrderRecord{
		OrderID: h.in.OrderID, UserID: h.in.UserID, Status: s, Currency: h.in.Currency,
		PayBy: payBy, ClosedReason: reason, Lines: lines,
	}}}
}

func (h *harness) paymentRecord(p PaymentSignal) ordersaga.PaymentRecord {
	return ordersaga.PaymentRecord{EventID: p.EventID, OrderID: h.in.OrderID, AmountCents: p.AmountCents, Currency: p.Currency}
}

func (h *harness) markPaidCall(p PaymentSignal, paidAt time.Time) []call {
	return []call{{actMarkPaid, activities.MarkPaidInput{Payment: h.paymentRecord(p), PaidAt: paidAt}}}
}

func (h *harness) recordCall(p PaymentSignal, result ordersaga.PaymentResult, detail string) []call {
	rec := h.paymentRecord(p)
	rec.Result, rec.Detail = result, detail
	return []call{{actRecord, rec}}
}

// wantOrder is the order the workflow should return for the test input.
func (h *harness) wantOrder(s ordersaga.Status, reason string, lines []ordersaga.Line, payBy, paidAt *time.Time) ordersaga.Order {
	return ordersaga.Order{
		OrderID: h.in.OrderID, UserID: h.in.UserID, Status: s, Lines: lines,
		AmountCents: mustAmount(lines), PayBy: payBy, PaidAt: paidAt, ClosedReason: reason,
	}
}

func ptr[T any](v T) *T { return &v }

// soldOut is the error ReserveLine and DeductOrder return for a SKU without enough units.
func soldOut(sku string) error {
	err := &ordersaga.SoldOutError{SKU: sku}
	return temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeSoldOut, err, sku)
}

func TestOrderWorkflowPaid(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pay := h.payment("evt-paid")
	h.signalPayment(time.Minute, pay)
	midway := h.query(30 * time.Second)

	got := h.run()

	lines := priced(h.in.Lines)
	assert.Equal(t, int64(2*999+1*500), h.amount())
	assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", lines, ptr(h.payBy()), ptr(testStart.Add(time.Minute))), got)
	assert.Equal(t, h.wantOrder(ordersaga.StatusAwaitingPayment, "", lines, ptr(h.payBy()), nil), *midway)
	h.assertCalls(
		h.reserveAll(),
		h.deductCall(h.payBy()),
		h.confirmCall(),
		h.markPaidCall(pay, testStart.Add(time.Minute)),
	)
}

// TestOrderWorkflowConfirm: the deduct drops the holds of the lines the reserve held in Redis, and only those
// (a line reserved in the database alone has none), with no confirm step after it; a workflow started without
// ConfirmInDeduct (as every starter before it) keeps the confirm step of its own, so its history replays.
func TestOrderWorkflowConfirm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		want  func(h *harness) [][]call // the calls between the reserves and the payment
	}{
		{
			name: "in_the_deduct_for_the_lines_held_in_redis",
			setup: func(h *harness) {
				h.reserve = func(_ context.Context, in activities.LineInput) (ordersaga.ReserveOutcome, error) {
					if in.SKU == "SKU-B" {
						return ordersaga.ReservedInDB, nil
					}
					return ordersaga.Reserved, nil
				}
			},
			want: func(h *harness) [][]call { return [][]call{h.deductConfirming(h.payBy(), []string{"SKU-A"})} },
		},
		{
			name:  "a_step_of_its_own_without_ConfirmInDeduct",
			setup: func(h *harness) { h.in.ConfirmInDeduct = false },
			want: func(h *harness) [][]call {
				return [][]call{h.deductConfirming(h.payBy(), nil),
					{{actConfirm, activities.ConfirmInput{OrderID: h.in.OrderID, SKUs: []string{"SKU-A", "SKU-B"}}}}}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			tc.setup(h)
			pay := h.payment("evt-paid")
			h.signalPayment(time.Minute, pay)

			got := h.run()

			assert.Equal(t, ordersaga.StatusPaid, got.Status)
			steps := append(append([][]call{h.reserveAll()}, tc.want(h)...), h.markPaidCall(pay, testStart.Add(time.Minute)))
			h.assertCalls(steps...)
		})
	}
}

func TestOrderWorkflowRejected(t *testing.T) {
	t.Parallel()
	threeLines := []ordersaga.Line{{SKU: "SKU-A", Qty: 1}, {SKU: "SKU-B", Qty: 3}, {SKU: "SKU-C", Qty: 2}}
	tests := []struct {
		name  string
		lines []ordersaga.Line
		fail  func(h *harness)
		// wantReason, wantSoldOut and wantUnknown describe the REJECTED order and the Reservation answer.
		wantReason  string
		wantSoldOut string
		wantUnknown string
		// wantCalls gets the closed_reason the order was recorded with.
		wantCalls func(h *harness, reason string) [][]call
	}{
		{
			name:  "rejected_when_one_line_of_three_is_sold_out_in_redis",
			lines: threeLines,
			fail: func(h *harness) {
				h.reserve = func(_ context.Context, in activities.LineInput) (ordersaga.ReserveOutcome, error) {
					if in.SKU == "SKU-B" {
						return "", soldOut(in.SKU)
					}
					return ordersaga.Reserved, nil
				}
			},
			wantReason:  "sold out: SKU-B",
			wantSoldOut: "SKU-B",
			wantCalls: func(h *harness, reason string) [][]call {
				// No deduct and so no restore; every line is released, the sold-out one included (tombstone).
				return [][]call{
					h.reserveAll(),
					h.releaseAll(),
					h.closeCall(ordersaga.StatusRejected, reason, nil, h.in.Lines),
				}
			},
		},
		{
			name: "rejected_and_restored_when_the_database_deduct_is_sold_out",
			fail: func(h *harness) {
				h.deduct = func(context.Context, ordersaga.DeductInput) (ordersaga.DeductResult, error) {
					return ordersaga.DeductResult{}, soldOut("SKU-B")
				}
			},
			wantReason:  "sold out: SKU-B",
			wantSoldOut: "SKU-B",
			wantCalls: func(h *harness, reason string) [][]call {
				// The deduct was started, so RestoreOrder runs (tombstones) before any ReleaseLine.
				return [][]call{
					h.reserveAll(),
					h.deductCall(h.payBy()),
					h.restoreCall(h.in.Lines),
					h.releaseAll(),
					h.closeCall(ordersaga.StatusRejected, reason, nil, h.in.Lines),
				}
			},
		},
		{
			// BUG (order.go deduct): the store's unknown-SKU error carries no details, so the workflow puts the
			// placeholder "(see closed_reason)" in unknownSKU and closed_reason becomes
			// "unknown sku: (see closed_reason)": it points at itself and never names the SKU.
			name: "rejected_with_the_unknown_sku_named_when_the_database_does_not_know_it",
			fail: func(h *harness) {
				h.deduct = func(_ context.Context, in ordersaga.DeductInput) (ordersaga.DeductResult, error) {
					err := fmt.Errorf("deduct %s: %w", in.OrderID, &ordersaga.UnknownSKUError{SKU: "SKU-B"})
					return ordersaga.DeductResult{}, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeUnknownSKU, err, "SKU-B")
				}
			},
			wantUnknown: "SKU-B",
			wantCalls: func(h *harness, reason string) [][]call {
				return [][]call{
					h.reserveAll(),
					h.deductCall(h.payBy()),
					h.restoreCall(h.in.Lines),
					h.releaseAll(),
					h.closeCall(ordersaga.StatusRejected, reason, nil, h.in.Lines),
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.lines...)
			tt.fail(h)
			res := h.update(0, UpdateReservation, "reservation-1")

			got := h.run()

			assert.Equal(t, ordersaga.StatusRejected, got.Status)
			assert.Equal(t, h.in.Lines, got.Lines, "lines stay unpriced")
			assert.Zero(t, got.AmountCents)
			assert.Nil(t, got.PayBy)
			assert.Nil(t, got.PaidAt)
			require.True(t, res.completed, "reservation update did not complete")
			require.NoError(t, res.err)
			r, ok := res.value.(Reservation)
			require.True(t, ok, "reservation update returned %T", res.value)
			assert.Equal(t, got, r.Order)
			assert.Equal(t, tt.wantSoldOut, r.SoldOutSKU)
			if tt.wantUnknown != "" {
				assert.Contains(t, got.ClosedReason, tt.wantUnknown, "closed_reason names the unknown SKU")
				assert.NotContains(t, got.ClosedReason, "see closed_reason")
			} else {
				assert.Equal(t, tt.wantReason, got.ClosedReason)
			}
			assert.Equal(t, tt.wantUnknown, r.UnknownSKU)
			h.assertCalls(tt.wantCalls(h, got.ClosedReason)...)
		})
	}
}

// TestOrderWorkflowClosedUnpaid covers the orders that end unpaid after the deduct: they are compensated,
// RestoreOrder before every ReleaseLine (I3), and recorded last.
func TestOrderWorkflowClosedUnpaid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		act        func(h *harness) *updateOutcome // what happens while the order waits (nil update = none)
		wantStatus ordersaga.Status
		wantReason string
		// reasonPrefix accepts any closed_reason that starts with wantReason.
		reasonPrefix bool
		wantAt       time.Duration // when compensation starts, from the workflow start
	}{
		{
			name:       "expired_at_the_deadline_without_payment",
			act:        func(*harness) *updateOutcome { return nil },
			wantStatus: ordersaga.StatusExpired,
			wantReason: "payment deadline passed",
			wantAt:     testTimeout,
		},
		{
			name: "cancelled_by_the_cancel_signal",
			act: func(h *harness) *updateOutcome {
				h.at(2*time.Minute, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{Reason: "changed my mind"}) })
				return nil
			},
			wantStatus: ordersaga.StatusCancelled,
			wantReason: "cancelled: changed my mind",
			wantAt:     2 * time.Minute,
		},
		{
			name: "cancelled_by_the_cancel_update_which_answers_once_compensated",
			act: func(h *harness) *updateOutcome {
				return h.update(2*time.Minute, UpdateCancel, "cancel-1", "too slow")
			},
			wantStatus: ordersaga.StatusCancelled,
			wantReason: "cancelled: too slow",
			wantAt:     2 * time.Minute,
		},
		{
			// BUG (order.go awaitPayment): cancelling the workflow cancels the deadline timer, and the timer's
			// callback closes the order as EXPIRED "payment deadline passed" without looking at the error.
			name: "cancelled_when_the_workflow_is_cancelled",
			act: func(h *harness) *updateOutcome {
				h.at(2*time.Minute, h.env.CancelWorkflow)
				return nil
			},
			wantStatus:   ordersaga.StatusCancelled,
			wantReason:   "cancelled",
			reasonPrefix: true,
			wantAt:       2 * time.Minute,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			upd := tt.act(h)

			got := h.run()

			lines := priced(h.in.Lines)
			if tt.reasonPrefix && strings.HasPrefix(got.ClosedReason, tt.wantReason) {
				tt.wantReason = got.ClosedReason
			}
			assert.Equal(t, h.wantOrder(tt.wantStatus, tt.wantReason, lines, ptr(h.payBy()), nil), got)
			h.assertCalls(
				h.reserveAll(),
				h.deductCall(h.payBy()),
				h.confirmCall(),
				h.restoreCall(lines),
				h.releaseAll(),
				h.closeCall(tt.wantStatus, tt.wantReason, ptr(h.payBy()), lines),
			)
			assert.Equal(t, []time.Time{testStart.Add(tt.wantAt)}, h.callTimes(actRestore), "RestoreOrder ran at")
			if upd != nil {
				require.True(t, upd.completed, "cancel update did not complete")
				require.NoError(t, upd.err)
				o, ok := upd.value.(ordersaga.Order)
				require.True(t, ok, "cancel update returned %T", upd.value)
				assert.Equal(t, got, o)
				assert.Contains(t, upd.ranBefore, actRestore, "answered before RestoreOrder ran")
				assert.Subset(t, upd.ranBefore, []string{actRelease, actRelease}, "answered before ReleaseLine ran")
				n := 0
				for _, name := range upd.ranBefore {
					if name == actRelease {
						n++
					}
				}
				assert.Equal(t, len(h.in.Lines), n, "ReleaseLine calls before the cancel update answered")
			}
		})
	}
}

func TestOrderWorkflowMismatchedPaymentIgnored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		first      func(p PaymentSignal) PaymentSignal
		wantDetail string
	}{
		{
			name:       "paid_after_a_wrong_amount_was_rejected",
			first:      func(p PaymentSignal) PaymentSignal { p.AmountCents--; return p },
			wantDetail: "expected 2498 CNY",
		},
		{
			name:       "paid_after_a_wrong_currency_was_rejected",
			first:      func(p PaymentSignal) PaymentSignal { p.Currency = "USD"; return p },
			wantDetail: "expected 2498 CNY",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			wrong := tt.first(h.payment("evt-wrong"))
			right := h.payment("evt-right")
			h.signalPayment(time.Minute, wrong)
			between := h.query(2 * time.Minute)
			h.signalPayment(3*time.Minute, right)

			got := h.run()

			lines := priced(h.in.Lines)
			assert.Equal(t, h.wantOrder(ordersaga.StatusAwaitingPayment, "", lines, ptr(h.payBy()), nil), *between)
			assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", lines, ptr(h.payBy()), ptr(testStart.Add(3*time.Minute))), got)
			h.assertCalls(
				h.reserveAll(),
				h.deductCall(h.payBy()),
				h.confirmCall(),
				h.recordCall(wrong, ordersaga.PaymentRejectedAmount, tt.wantDetail),
				h.markPaidCall(right, testStart.Add(3*time.Minute)),
			)
		})
	}
}

func TestOrderWorkflowDuplicatePaymentSignal(t *testing.T) {
	t.Parallel()
	t.Run("applied_once_when_the_paying_event_comes_twice", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		pay := h.payment("evt-dup")
		h.at(time.Minute, func() {
			h.env.SignalWorkflow(SignalPayment, pay)
			h.env.SignalWorkflow(SignalPayment, pay)
		})

		got := h.run()

		assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", priced(h.in.Lines), ptr(h.payBy()), ptr(testStart.Add(time.Minute))), got)
		// MarkPaid once, and the duplicate is neither applied again nor recorded for refund.
		h.assertCalls(
			h.reserveAll(),
			h.deductCall(h.payBy()),
			h.confirmCall(),
			h.markPaidCall(pay, testStart.Add(time.Minute)),
		)
	})
	t.Run("rejected_once_when_a_wrong_amount_event_comes_twice_while_waiting", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		wrong := PaymentSignal{EventID: "evt-wrong", AmountCents: 1, Currency: testCurrency}
		right := h.payment("evt-right")
		h.signalPayment(time.Minute, wrong)
		h.signalPayment(2*time.Minute, wrong)
		h.signalPayment(3*time.Minute, right)

		got := h.run()

		assert.Equal(t, ordersaga.StatusPaid, got.Status)
		h.assertCalls(
			h.reserveAll(),
			h.deductCall(h.payBy()),
			h.confirmCall(),
			h.recordCall(wrong, ordersaga.PaymentRejectedAmount, "expected 2498 CNY"),
			h.markPaidCall(right, testStart.Add(3*time.Minute)),
		)
	})
}

// TestOrderWorkflowMarkPaidRefused: when the database refuses to mark the order paid, the money is recorded
// for refund and the order keeps waiting (here until it expires).
func TestOrderWorkflowMarkPaidRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.markPaid = func(context.Context, activities.MarkPaidInput) error {
		return temporal.NewNonRetryableApplicationError("order not payable", "OrderNotPayable", nil)
	}
	pay := h.payment("evt-refused")
	h.signalPayment(time.Minute, pay)
	waiting := h.query(2 * time.Minute)

	got := h.run()

	lines := priced(h.in.Lines)
	assert.Equal(t, ordersaga.StatusAwaitingPayment, waiting.Status)
	assert.Equal(t, h.wantOrder(ordersaga.StatusExpired, "payment deadline passed", lines, ptr(h.payBy()), nil), got)
	h.assertCalls(
		h.reserveAll(),
		h.deductCall(h.payBy()),
		h.confirmCall(),
		h.markPaidCall(pay, testStart.Add(time.Minute)),
		h.recordCall(pay, ordersaga.PaymentRefunded, "order could not be marked paid"),
		h.restoreCall(lines),
		h.releaseAll(),
		h.closeCall(ordersaga.StatusExpired, "payment deadline passed", ptr(h.payBy()), lines),
	)
}

// TestOrderWorkflowLatePaymentRefunded sends a payment while the compensation of a closed order runs
// (RestoreOrder fails once, so the workflow is still open during its retry backoff).
func TestOrderWorkflowLatePaymentRefunded(t *testing.T) {
	t.Parallel()
	const backoff = 200 * time.Millisecond // mustSucceedOptions.RetryPolicy.InitialInterval
	tests := []struct {
		name       string
		viaUpdate  bool
		closeAt    time.Duration
		close      func(h *harness)
		wantStatus ordersaga.Status
		wantReason string
	}{
		{
			name:       "refunded_when_the_payment_signal_arrives_after_expiry",
			closeAt:    testTimeout,
			close:      func(*harness) {},
			wantStatus: ordersaga.StatusExpired,
			wantReason: "payment deadline passed",
		},
		{
			name:      "refunded_when_the_pay_update_arrives_after_cancel",
			viaUpdate: true,
			closeAt:   time.Minute,
			close: func(h *harness) {
				h.at(time.Minute, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{}) })
			},
			wantStatus: ordersaga.StatusCancelled,
			wantReason: "cancelled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.restore = func(ctx context.Context, in activities.RestoreInput) ([]ordersaga.RestoreLine, error) {
				if activity.GetInfo(ctx).Attempt == 1 {
					return nil, errors.New("mysql: connection reset by peer")
				}
				return nil, nil
			}
			tt.close(h)
			late := h.payment("evt-late")
			var upd *updateOutcome
			if tt.viaUpdate {
				upd = h.update(tt.closeAt+backoff/2, UpdatePay, "pay-late", late)
			} else {
				h.signalPayment(tt.closeAt+backoff/2, late)
			}

			got := h.run()

			lines := priced(h.in.Lines)
			assert.Equal(t, h.wantOrder(tt.wantStatus, tt.wantReason, lines, ptr(h.payBy()), nil), got)
			h.assertCalls(
				h.reserveAll(),
				h.deductCall(h.payBy()),
				h.confirmCall(),
				h.restoreCall(lines),
				h.restoreCall(lines),
				h.releaseAll(),
				h.closeCall(tt.wantStatus, tt.wantReason, ptr(h.payBy()), lines),
				h.recordCall(late, ordersaga.PaymentRefunded, "payment arrived after the order was "+string(tt.wantStatus)),
			)
			assert.Equal(t, []time.Time{testStart.Add(tt.closeAt), testStart.Add(tt.closeAt + backoff)}, h.callTimes(actRestore))
			if upd != nil {
				require.True(t, upd.completed, "pay update did not complete")
				require.NoError(t, upd.err)
				assert.Equal(t, ordersaga.PaymentRefunded, upd.value)
			}
		})
	}
}

// TestOrderWorkflowLatePaymentsAllRefunded sends a second late payment (a signal) while the workflow is
// refunding a first one (an update) after the order was cancelled.
//
// BUG (order.go refundLatePayments): the signal channel is drained before the update queue, and never
// again; a payment signal that arrives while the queue's refund is running (RecordPayment is an activity,
// here failing once so its retry backoff leaves the window open) stays in the channel, and the workflow
// completes without recording or refunding it, breaking "recorded and refunded exactly once".
func TestOrderWorkflowLatePaymentsAllRefunded(t *testing.T) {
	t.Parallel()
	const backoff = 200 * time.Millisecond // mustSucceedOptions.RetryPolicy.InitialInterval
	h := newHarness(t)
	h.restore = func(ctx context.Context, in activities.RestoreInput) ([]ordersaga.RestoreLine, error) {
		if activity.GetInfo(ctx).Attempt == 1 {
			return nil, errors.New("mysql: connection reset by peer")
		}
		return nil, nil
	}
	byUpdate, bySignal := h.payment("evt-late-update"), h.payment("evt-late-signal")
	h.recordP = func(ctx context.Context, p ordersaga.PaymentRecord) (ordersaga.PaymentRecord, error) {
		if p.EventID == byUpdate.EventID && activity.GetInfo(ctx).Attempt == 1 {
			return ordersaga.PaymentRecord{}, errors.New("mysql: connection reset by peer")
		}
		return p, nil
	}
	h.at(time.Minute, func() { h.env.SignalWorkflow(SignalCancel, CancelSignal{}) })
	upd := h.update(time.Minute+backoff/2, UpdatePay, "pay-late", byUpdate) // during the restore retry
	h.at(time.Minute+backoff+backoff/2, func() {                            // during the refund retry
		assert.False(t, h.env.IsWorkflowCompleted(), "the late signal reaches a running workflow")
		h.env.SignalWorkflow(SignalPayment, bySignal)
	})

	got := h.run()

	lines := priced(h.in.Lines)
	const detail = "payment arrived after the order was CANCELLED"
	assert.Equal(t, h.wantOrder(ordersaga.StatusCancelled, "cancelled", lines, ptr(h.payBy()), nil), got)
	require.True(t, upd.completed, "pay update did not complete")
	assert.Equal(t, ordersaga.PaymentRefunded, upd.value)
	h.assertCalls(
		h.reserveAll(),
		h.deductCall(h.payBy()),
		h.confirmCall(),
		h.restoreCall(lines),
		h.restoreCall(lines),
		h.releaseAll(),
		h.closeCall(ordersaga.StatusCancelled, "cancelled", ptr(h.payBy()), lines),
		h.recordCall(byUpdate, ordersaga.PaymentRefunded, detail),
		h.recordCall(byUpdate, ordersaga.PaymentRefunded, detail),
		h.recordCall(bySignal, ordersaga.PaymentRefunded, detail),
	)
}

func TestOrderWorkflowReserveRetriesTransientError(t *testing.T) {
	t.Parallel()
	const backoff = 100 * time.Millisecond // reserveOptions.RetryPolicy.InitialInterval
	h := newHarness(t)
	h.reserve = func(ctx context.Context, in activities.LineInput) (ordersaga.ReserveOutcome, error) {
		if in.SKU == "SKU-B" && activity.GetInfo(ctx).Attempt == 1 {
			return "", errors.New("redis: connection refused")
		}
		return ordersaga.Reserved, nil
	}
	pay := h.payment("evt-after-retry")
	h.signalPayment(time.Minute, pay)
	waiting := h.query(30 * time.Second)

	got := h.run()

	payBy := testStart.Add(backoff + testTimeout) // the deadline counts from the deduct
	lines := priced(h.in.Lines)
	assert.Equal(t, ordersaga.StatusAwaitingPayment, waiting.Status)
	assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", lines, ptr(payBy), ptr(testStart.Add(time.Minute))), got)
	h.assertCalls(
		append(h.reserveAll(), call{actReserve, h.lineInput(h.in.Lines[1])}),
		h.deductCall(payBy),
		h.confirmCall(),
		h.markPaidCall(pay, testStart.Add(time.Minute)),
	)
	calls, times := h.recorded()
	var skuB []time.Time
	for i, c := range calls {
		if c.Activity == actReserve && c.Input.(activities.LineInput).SKU == "SKU-B" {
			skuB = append(skuB, times[i])
		}
	}
	assert.Equal(t, []time.Time{testStart, testStart.Add(backoff)}, skuB, "SKU-B reserved twice, after the backoff")
}

func TestOrderWorkflowPayUpdate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	right := h.payment("evt-2")
	wrong := PaymentSignal{EventID: "evt-1", AmountCents: 1, Currency: testCurrency}
	// Each update goes in once the previous one has been answered.
	steps := []struct {
		name       string
		p          PaymentSignal
		wantResult ordersaga.PaymentResult
	}{
		{"rejected_amount_for_a_wrong_amount", wrong, ordersaga.PaymentRejectedAmount},
		{"duplicate_for_an_event_already_seen", PaymentSignal{EventID: "evt-1", AmountCents: h.amount(), Currency: testCurrency}, ordersaga.PaymentDuplicate},
		{"applied_for_the_right_amount", right, ordersaga.PaymentApplied},
	}
	outcomes := make([]*updateOutcome, len(steps))
	for i, s := range steps {
		outcomes[i] = h.update(time.Duration(i+1)*time.Minute, UpdatePay, fmt.Sprintf("pay-%d", i), s.p)
	}
	empty := h.update(30*time.Second, UpdatePay, "pay-empty", PaymentSignal{AmountCents: h.amount(), Currency: testCurrency})

	got := h.run()

	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			u := outcomes[i]
			require.True(t, u.completed, "update did not complete")
			require.NoError(t, u.err)
			assert.Equal(t, s.wantResult, u.value)
		})
	}
	t.Run("rejected_by_the_validator_without_an_event_id", func(t *testing.T) {
		assert.False(t, empty.accepted)
		assert.Error(t, empty.rejected)
		assert.False(t, empty.completed)
	})
	assert.Equal(t, h.wantOrder(ordersaga.StatusPaid, "", priced(h.in.Lines), ptr(h.payBy()), ptr(testStart.Add(3*time.Minute))), got)
	h.assertCalls(
		h.reserveAll(),
		h.deductCall(h.payBy()),
		h.confirmCall(),
		h.recordCall(wrong, ordersaga.PaymentRejectedAmount, "expected 2498 CNY"),
		h.markPaidCall(right, testStart.Add(3*time.Minute)),
	)
}

// validInput is an order ValidateInput accepts; the bad-input cases change one thing in it.
func validInput() OrderInput {
	return OrderInput{
		OrderID: testOrderID, UserID: testUserID, Currency: testCurrency,
		Lines:          []ordersaga.Line{{SKU: "SKU-A", Qty: 2}, {SKU: "SKU-B", Qty: 1}},
		PaymentTimeout: testTimeout,
	}
}

var badInputs = []struct {
	name   string
	change func(in *OrderInput)
}{
	{"rejected_without_order_id", func(in *OrderInput) { in.OrderID = "" }},
	{"rejected_with_a_space_in_order_id", func(in *OrderInput) { in.OrderID = "o 1" }},
	{"rejected_with_a_65_char_order_id", func(in *OrderInput) { in.OrderID = strings.Repeat("o", 65) }},
	{"rejected_without_user_id", func(in *OrderInput) { in.UserID = "" }},
	{"rejected_with_a_2_letter_currency", func(in *OrderInput) { in.Currency = "CN" }},
	{"rejected_without_lines", func(in *OrderInput) { in.Lines = nil }},
	{"rejected_with_21_lines", func(in *OrderInput) {
		in.Lines = nil
		for i := range 21 {
			in.Lines = append(in.Lines, ordersaga.Line{SKU: fmt.Sprintf("SKU-%d", i), Qty: 1})
		}
	}},
	{"rejected_with_an_empty_sku", func(in *OrderInput) { in.Lines[0].SKU = "" }},
	{"rejected_with_a_slash_in_sku", func(in *OrderInput) { in.Lines[0].SKU = "SKU/A" }},
	{"rejected_with_qty_0", func(in *OrderInput) { in.Lines[1].Qty = 0 }},
	{"rejected_with_a_negative_qty", func(in *OrderInput) { in.Lines[1].Qty = -1 }},
	{"rejected_with_qty_1001", func(in *OrderInput) { in.Lines[1].Qty = 1001 }},
	{"rejected_with_a_duplicate_sku", func(in *OrderInput) { in.Lines[1].SKU = in.Lines[0].SKU }},
	{"rejected_with_a_negative_timeout", func(in *OrderInput) { in.PaymentTimeout = -time.Second }},
	{"rejected_with_a_timeout_over_24h", func(in *OrderInput) { in.PaymentTimeout = MaxPaymentTimeout + time.Nanosecond }},
}

func TestValidateInput(t *testing.T) {
	t.Parallel()
	goods := []struct {
		name   string
		change func(in *OrderInput)
	}{
		{"accepted_as_is", func(*OrderInput) {}},
		{"accepted_with_the_default_timeout", func(in *OrderInput) { in.PaymentTimeout = 0 }},
		{"accepted_with_a_24h_timeout", func(in *OrderInput) { in.PaymentTimeout = MaxPaymentTimeout }},
		{"accepted_with_20_lines_of_qty_1000", func(in *OrderInput) {
			in.Lines = nil
			for i := range 20 {
				in.Lines = append(in.Lines, ordersaga.Line{SKU: fmt.Sprintf("SKU-%d", i), Qty: 1000})
			}
		}},
		{"accepted_with_every_allowed_id_char", func(in *OrderInput) { in.OrderID = "Az09._:-" }},
	}
	for _, tt := range goods {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validInput()
			tt.change(&in)
			assert.NoError(t, ValidateInput(in))
		})
	}
	for _, tt := range badInputs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := validInput()
			tt.change(&in)
			err := ValidateInput(in)
			if assert.Error(t, err) {
				assert.True(t, strings.HasPrefix(err.Error(), "order input: "), "error %q", err)
			}
		})
	}
}

func TestOrderWorkflowBadInput(t *testing.T) {
	t.Parallel()
	for _, tt := range badInputs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			in := validInput()
			tt.change(&in)

			h.env.ExecuteWorkflow(OrderWorkflow, in)

			require.True(t, h.env.IsWorkflowCompleted())
			err := h.env.GetWorkflowError()
			var appErr *temporal.ApplicationError
			require.ErrorAs(t, err, &appErr)
			assert.Equal(t, activities.ErrTypeBadInput, appErr.Type())
			assert.True(t, appErr.NonRetryable())
			assert.Empty(t, h.names(), "no activity may run for a bad input")
		})
	}
}

// recordUpserts records the workflow's search-attribute upserts; the returned func gives them once it ran.
func (h *harness) recordUpserts() func() []temporal.SearchAttributes {
	var (
		mu      sync.Mutex
		upserts []temporal.SearchAttributes
	)
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		mu.Lock()
		defer mu.Unlock()
		upserts = append(upserts, args.Get(0).(temporal.SearchAttributes))
	}).Return(nil)
	return func() []temporal.SearchAttributes {
		mu.Lock()
		defer mu.Unlock()
		return append([]temporal.SearchAttributes(nil), upserts...)
	}
}

// upserted splits upserts by attribute: the statuses, deadlines and SKU lists set, in order.
func upserted(upserts []temporal.SearchAttributes) (statuses []string, deadlines []time.Time, skus [][]string) {
	for _, sa := range upserts {
		if s, ok := sa.GetKeyword(SAOrderStatus); ok {
			statuses = append(statuses, s)
		}
		if d, ok := sa.GetTime(SAPaymentDeadline); ok {
			deadlines = append(deadlines, d)
		}
		if l, ok := sa.GetKeywordList(SAOrderSKUs); ok {
			skus = append(skus, l)
		}
	}
	return statuses, deadlines, skus
}

// TestOrderWorkflowSearchAttributesGivenAtStart: a start that carries StartSearchAttributes (as
// orderclient.Place's does) leaves the workflow nothing to upsert before AWAITING_PAYMENT.
func TestOrderWorkflowSearchAttributesGivenAtStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	require.NoError(t, h.env.SetTypedSearchAttributesOnStart(StartSearchAttributes(h.in)))
	recorded := h.recordUpserts()
	h.signalPayment(time.Minute, h.payment("evt-sa"))

	got := h.run()
	require.Equal(t, ordersaga.StatusPaid, got.Status)

	statuses, deadlines, skus := upserted(recorded())
	assert.Empty(t, skus, "OrderSKUs came with the start")
	assert.Equal(t, []string{string(ordersaga.StatusAwaitingPayment), string(ordersaga.StatusPaid)}, statuses)
	assert.Len(t, deadlines, 1)
	want := temporal.NewSearchAttributes(SAOrderSKUs.ValueSet([]string{"SKU-A", "SKU-B"}),
		SAOrderStatus.ValueSet(string(ordersaga.StatusReserving)))
	assert.Equal(t, want, StartSearchAttributes(h.in), "the start's attributes are what a start without them upserts")
}

func TestOrderWorkflowSearchAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	recorded := h.recordUpserts()
	h.signalPayment(time.Minute, h.payment("evt-sa"))

	got := h.run()
	require.Equal(t, ordersaga.StatusPaid, got.Status)

	upserts := recorded()
	statuses, deadlines, skus := upserted(upserts)
	t.Run("skus_set_once_at_start", func(t *testing.T) {
		assert.Equal(t, [][]string{{"SKU-A", "SKU-B"}}, skus)
		if assert.NotEmpty(t, upserts) {
			_, ok := upserts[0].GetKeywordList(SAOrderSKUs)
			assert.True(t, ok, "first upsert sets OrderSKUs")
		}
	})
	t.Run("payment_deadline_set_with_awaiting_payment", func(t *testing.T) {
		if assert.Len(t, deadlines, 1) {
			assert.True(t, h.payBy().Equal(deadlines[0]), "deadline %s, want %s", deadlines[0], h.payBy())
		}
		for _, sa := range upserts {
			if _, ok := sa.GetTime(SAPaymentDeadline); ok {
				s, _ := sa.GetKeyword(SAOrderStatus)
				assert.Equal(t, string(ordersaga.StatusAwaitingPayment), s)
			}
		}
	})
	t.Run("status_moves_awaiting_payment_then_paid", func(t *testing.T) {
		n := len(statuses)
		if assert.GreaterOrEqual(t, n, 2) {
			assert.Equal(t, []string{string(ordersaga.StatusAwaitingPayment), string(ordersaga.StatusPaid)}, statuses[n-2:])
		}
	})
	// BUG (order.go setup): OrderStatus is only upserted from the first status change on, so an order
	// that is still RESERVING (e.g. retrying a not-loaded SKU for up to 30s) is invisible to
	// `OrderStatus = "RESERVING"` list queries although api.go promises an upsert at every status.
	t.Run("status_reserving_searchable_from_the_start", func(t *testing.T) {
		assert.Equal(t, []string{
			string(ordersaga.StatusReserving), string(ordersaga.StatusAwaitingPayment), string(ordersaga.StatusPaid),
		}, statuses)
	})
}

// TestOrderWorkflowSecondLifeOfAPaidOrder: an order ID that lives again after Temporal forgot its PAID first
// run. Its deduct is refused, its restore answers Sold (nothing given back), so its releases keep the
// confirmed holds, and its record finds the order PAID: the workflow ends PAID, the database's word.
func TestOrderWorkflowSecondLifeOfAPaidOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	paidAt := testStart.Add(-48 * time.Hour)
	h.deduct = func(context.Context, ordersaga.DeductInput) (ordersaga.DeductResult, error) {
		return ordersaga.DeductResult{}, temporal.NewNonRetryableApplicationError("deduct: the order is PAID",
			activities.ErrTypeCompensated, ordersaga.ErrCompensated)
	}
	h.restore = func(_ context.Context, in activities.RestoreInput) ([]ordersaga.RestoreLine, error) {
		out := make([]ordersaga.RestoreLine, len(in.Lines))
		for i, l := range in.Lines {
			out[i] = ordersaga.RestoreLine{SKU: l.SKU, Sold: true}
		}
		return out, nil
	}
	h.closeOrder = func(_ context.Context, rec ordersaga.OrderRecord) (ordersaga.OrderRecord, error) {
		rec.Status, rec.ClosedReason, rec.PaidAt = ordersaga.StatusPaid, "", &paidAt
		return rec, nil
	}

	got := h.run()

	assert.Equal(t, ordersaga.StatusPaid, got.Status)
	assert.Equal(t, &paidAt, got.PaidAt)
	sold := h.releaseAll()
	for i := range sold {
		in := sold[i].Input.(activities.LineInput)
		in.Sold = true
		sold[i].Input = in
	}
	h.assertCalls(
		h.reserveAll(),
		h.deductCall(h.payBy()),
		h.restoreCall(h.in.Lines),
		sold,
		h.closeCall(ordersaga.StatusRejected, "reservation failed: "+activities.ErrTypeCompensated, nil, h.in.Lines),
	)
}

// TestOrderWorkflowWrongAmountThenExpiry: the wrong payment is recorded once (the store records it for refund
// at once), and the expiry neither applies nor records it again.
func TestOrderWorkflowWrongAmountThenExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	wrong := h.payment("evt-wrong-expire")
	wrong.AmountCents--
	h.signalPayment(time.Minute, wrong)

	got := h.run()

	assert.Equal(t, h.wantOrder(ordersaga.StatusExpired, "payment deadline passed", priced(h.in.Lines), ptr(h.payBy()), nil), got)
	h.assertCalls(
		h.reserveAll(),
		h.deductCall(h.payBy()),
		h.confirmCall(),
		h.recordCall(wrong, ordersaga.PaymentRejectedAmount, "expected 2498 CNY"),
		h.restoreCall(priced(h.in.Lines)),
		h.releaseAll(),
		h.closeCall(ordersaga.StatusExpired, "payment deadline passed", ptr(h.payBy()), priced(h.in.Lines)),
	)
}
