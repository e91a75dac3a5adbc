package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// TestStuckStep_MarkedAndCleared: on the real server, a MarkPaid that keeps failing retryably ends its window
// (the order's StuckAfter, shortened here to 20 s from workflows.StuckAfter's 2 minutes), and the order is then
// found by StuckStep = 'MarkPaid'; once the database takes the payment again the order is PAID and no longer
// found.
func TestStuckStep_MarkedAndCleared(t *testing.T) {
	const window = 20 * time.Second
	down := &failing{activityType: "MarkPaid"}
	down.on.Store(true)
	env := sagatest.StartOn(t, testenv.MustOpenStore(t), testenv.MustOpenRedis(t), func(o *worker.Options) {
		o.Interceptors = []interceptor.WorkerInterceptor{down}
	})
	env.Stock(t, "STUCK-1", 5, 1250)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	in := workflows.OrderInput{OrderID: "stuck-1", UserID: "u-stuck", Currency: "CNY", PaymentTimeout: time.Hour,
		Lines: []ordersaga.Line{{SKU: "STUCK-1", Qty: 1}}, StuckAfter: window}
	res, err := place(ctx, env.Client, in)
	if err != nil || res.Order.Status != ordersaga.StatusAwaitingPayment {
		t.Fatalf("place: %+v %v", res, err)
	}
	id := workflows.OrderWorkflowID(in.OrderID)
	if err := env.Client.SignalWorkflow(ctx, id, "", workflows.SignalPayment,
		workflows.PaymentSignal{EventID: "evt-stuck-1", AmountCents: res.Order.AmountCents, Currency: "CNY"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	query := fmt.Sprintf("WorkflowId = '%s' AND %s = 'MarkPaid'", id, workflows.SAStuckStep.GetName())
	if !countBecomes(ctx, t, env, query, 1) {
		t.Fatalf("not found by %q within %s of the payment", query, time.Since(start))
	}
	// The server ends the window at the last attempt whose retry would pass it: with retries 0.2 s, 0.4 s, ...
	// apart, the attempt at 12.6 s of a 20 s window (the next would be at 25.4 s).
	if took := time.Since(start); took < window/2 {
		t.Fatalf("marked stuck after %s, before its window (%s) could end", took, window)
	}
	t.Logf("found by %q %s after the payment", query, time.Since(start).Round(time.Second))

	down.on.Store(false)
	var o ordersaga.Order
	if err := env.Client.GetWorkflow(ctx, id, "").Get(ctx, &o); err != nil || o.Status != ordersaga.StatusPaid {
		t.Fatalf("order %s: %s %v, want PAID", id, o.Status, err)
	}
	if !countBecomes(ctx, t, env, query, 0) {
		t.Fatalf("still found by %q once PAID", query)
	}
}

// countBecomes polls the visibility query until it counts want, or ctx ends.
func countBecomes(ctx context.Context, t *testing.T, env *sagatest.Env, query string, want int64) bool {
	t.Helper()
	for ctx.Err() == nil {
		res, err := env.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err != nil && ctx.Err() == nil {
			t.Fatal(err)
		}
		if res.GetCount() == want {
			return true
		}
		time.Sleep(time.Second)
	}
	return false
}

// failing fails every attempt of one activity type, retryably, while on.
type failing struct {
	interceptor.WorkerInterceptorBase
	activityType string
	on           atomic.Bool
}

func (f *failing) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	a := &failingActivity{f: f}
	a.Next = next
	return a
}

type failingActivity struct {
	interceptor.ActivityInboundInterceptorBase
	f *failing
}

func (a *failingActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if a.f.on.Load() && activity.GetInfo(ctx).ActivityType.Name == a.f.activityType {
		return nil, errors.New("mysql: server has gone away")
	}
	return a.Next.ExecuteActivity(ctx, in)
}
