package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersaga/ordersaga"
)

// historiesDir holds one directory per release, named <commit date YYYY-MM-DD>-<short commit> so that names
// sort in release order; each holds histories recorded by that release's code and is never changed again
// (see "Versioning" in doc.go).
var historiesDir = filepath.Join("testdata", "histories")

var releaseDirName = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9a-f]{7,40}$`)

// since20261201 is the first release recorded by TestRecordRelease (2026-12-01-bda7db0); the older one
// (2026-11-29-5218014) holds the e2e test's paid, expired and sold-out histories only.
const since20261201 = "2026-12-01"

// since20261206 is the first release that records a Temporal cancel request, a refused MarkPaid and the limit
// and unknown-SKU rejections (2026-12-06-ab6808b).
const since20261206 = "2026-12-06"

// requiredHistories are the paths every release records (TestRecordRelease in internal/e2e, one scenario
// each). since is the first release date that must have the path: a path added later is required from
// the release that adds it on, never from releases already recorded.
var requiredHistories = []struct{ name, since string }{
	{"paid", since20261201},                  // payment signal
	{"paid_update", since20261201},           // pay update
	{"expired", since20261201},               // deadline passed
	{"sold_out", since20261201},              // rejected at reserve (one line sold out, the other released)
	{"rejected_deduct", since20261201},       // reserved in Redis, refused by the database deduct
	{"cancelled_signal", since20261201},      // cancel signal
	{"cancelled_update", since20261201},      // cancel update
	{"wrong_amount_expired", since20261201},  // a payment of the wrong amount, then the deadline
	{"late_payment_refunded", since20261201}, // a payment during compensation, refunded after close
	{"duplicate_payment", since20261201},     // one event delivered three times while being applied
	{"refund", since20261201},                // RefundWorkflow
	{"reconcile", since20261201},             // ReconcileWorkflow
	{"cancel_requested", since20261206},      // a Temporal cancel request (temporal workflow cancel)
	{"mark_paid_refused", since20261206},     // MarkPaid refused by the database: recorded as refunded, then paid
	{"limit_rejected", since20261206},        // rejected at reserve: the per-user limit
	{"unknown_sku_rejected", since20261206},  // rejected at reserve: a SKU nobody knows
}

// releases lists the release directories, oldest first.
func releases(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(historiesDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() || !releaseDirName.MatchString(e.Name()) {
			t.Errorf("%s: want only release directories named <YYYY-MM-DD>-<commit>", filepath.Join(historiesDir, e.Name()))
			continue
		}
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		t.Fatalf("no release in %s", historiesDir)
	}
	return names
}

// TestReplay replays the histories of every release against the current workflows: a change that breaks
// determinism for a workflow started by any earlier release fails here. Histories are never re-recorded;
// a change of commands goes behind workflow.GetVersion (doc.go).
func TestReplay(t *testing.T) {
	for _, rel := range releases(t) {
		files, err := filepath.Glob(filepath.Join(historiesDir, rel, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("release %s has no history", rel)
		}
		for _, f := range files {
			t.Run(rel+"/"+filepath.Base(f), func(t *testing.T) {
				t.Parallel()
				replay(t, f)
			})
		}
	}
}

// replay replays one history and checks that an order ends in the status it ended in when recorded: the SDK
// compares the commands' types and IDs, not their inputs nor the result, so an expired order that replays as
// cancelled (same upsert, same compensation activities) would otherwise pass.
func replay(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	res := &resultRecorder{}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		Interceptors: []interceptor.WorkerInterceptor{res},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflow(OrderWorkflow)
	r.RegisterWorkflow(RefundWorkflow)
	r.RegisterWorkflow(ReconcileWorkflow)
	if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatalf("replay %s: %v", file, err)
	}
	done := hist.Events[len(hist.Events)-1].GetWorkflowExecutionCompletedEventAttributes()
	got, isOrder := res.result.(ordersaga.Order)
	if done == nil || !isOrder {
		return
	}
	var want ordersaga.Order
	if err := converter.GetDefaultDataConverter().FromPayloads(done.GetResult(), &want); err != nil {
		t.Fatalf("%s: recorded result: %v", file, err)
	}
	if got.Status != want.Status {
		t.Fatalf("%s: the replayed order ends %s (%s), the recorded one %s (%s)", file, got.Status, got.ClosedReason, want.Status, want.ClosedReason)
	}
}

// resultRecorder keeps what the replayed workflow returned.
type resultRecorder struct {
	interceptor.WorkerInterceptorBase
	result any
}

func (r *resultRecorder) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	i := &resultInbound{r: r}
	i.Next = next
	return i
}

type resultInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	r *resultRecorder
}

func (i *resultInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	res, err := i.Next.ExecuteWorkflow(ctx, in)
	i.r.result = res
	return res, err
}

// TestReleaseHistoriesComplete fails when a release lacks the history of a path it must have.
func TestReleaseHistoriesComplete(t *testing.T) {
	for _, rel := range releases(t) {
		for _, h := range requiredHistories {
			if rel[:len(h.since)] < h.since {
				continue
			}
			if _, err := os.Stat(filepath.Join(historiesDir, rel, h.name+".json")); err != nil {
				t.Errorf("release %s has no %s history: %v", rel, h.name, err)
			}
		}
	}
}

// TestReplay_CloseResultFromANewerActivityWorker replays a history of the 2026-12-01 release whose CloseOrder
// result says the database kept the order PAID, as a newer activity worker answers while an older workflow
// worker, which records no status upsert, runs the workflow (a rolling deploy). The upsert the current code
// adds for that answer is behind workflow.GetVersion, so the history replays.
func TestReplay_CloseResultFromANewerActivityWorker(t *testing.T) {
	f, err := os.Open(filepath.Join(historiesDir, "2026-12-01-bda7db0", "expired.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	paid, err := converter.GetDefaultDataConverter().ToPayloads(ordersaga.OrderRecord{Status: ordersaga.StatusPaid})
	if err != nil {
		t.Fatal(err)
	}
	closes := map[int64]bool{}
	injected := 0
	for _, ev := range hist.Events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "CloseOrder" {
			closes[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && closes[a.GetScheduledEventId()] {
			a.Result = paid
			injected++
		}
	}
	if injected != 1 {
		t.Fatalf("found %d CloseOrder completions in expired.json, want 1", injected)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflow(OrderWorkflow)
	if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
		t.Fatalf("replay with a PAID CloseOrder result: %v", err)
	}
}

// TestReplay_InvalidPaymentFromAnOlderRelease replays histories of the 2026-12-01 release whose payment breaks
// ordersaga.CheckPayment, as the releases before the check handled one: a signal whose event ID is longer than
// its column (applied), an update whose currency is lower-case (recorded as a wrong amount; the validator
// then let it in). Today's code drops such a payment behind workflow.GetVersion, so the histories replay.
func TestReplay_InvalidPaymentFromAnOlderRelease(t *testing.T) {
	t.Parallel()
	longID := func(p *PaymentSignal) { p.EventID = strings.Repeat("e", ordersaga.MaxEventIDLen+1) }
	lowerCurrency := func(p *PaymentSignal) { p.Currency = strings.ToLower(p.Currency) }
	for _, tc := range []struct {
		name, file string
		change     func(p *PaymentSignal)
	}{
		{"applied_signal_with_a_long_event_id", "paid.json", longID},
		{"update_with_a_lower_case_currency", "wrong_amount_expired.json", lowerCurrency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(filepath.Join(historiesDir, "2026-12-01-bda7db0", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dc := converter.GetDefaultDataConverter()
			changed := 0
			for _, ev := range hist.Events {
				var args *commonpb.Payloads
				if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.GetSignalName() == SignalPayment {
					args = a.GetInput()
				}
				if a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes(); a != nil && a.GetAcceptedRequest().GetInput().GetName() == UpdatePay {
					args = a.GetAcceptedRequest().GetInput().GetArgs()
				}
				if args == nil {
					continue
				}
				var p PaymentSignal
				if err := dc.FromPayloads(args, &p); err != nil {
					t.Fatal(err)
				}
				tc.change(&p)
				if ordersaga.CheckPayment(p.EventID, "rec-x", p.AmountCents, p.Currency) == nil {
					t.Fatalf("%+v passes the check", p)
				}
				b, err := dc.ToPayloads(p)
				if err != nil {
					t.Fatal(err)
				}
				args.Payloads = b.Payloads
				changed++
			}
			if changed != 1 {
				t.Fatalf("changed %d payments in %s, want 1", changed, tc.file)
			}
			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r.RegisterWorkflow(OrderWorkflow)
			if err := r.ReplayWorkflowHistory(nil, hist); err != nil {
				t.Fatalf("replay with an invalid payment: %v", err)
			}
		})
	}
}
