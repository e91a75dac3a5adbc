package workflows

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/refunds"
	"github.com/ordersaga/ordersaga/internal/refundsend"
	"github.com/ordersaga/ordersaga/internal/refundsim"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// refundTimeout is the provider's timeout of the refund tests: the HTTP adapter's and the runs' input.
const refundTimeout = 500 * time.Millisecond

// refundEnv is a sender workflow on the SDK's test environment with the real activities: the test's store
// and the HTTP adapter to base.
func refundEnv(t *testing.T, store *sqlstore.Store, base, secret string) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	p, err := refunds.NewHTTPProvider(refunds.HTTPConfig{URL: base, Secret: secret, Timeout: refundTimeout})
	if err != nil {
		t.Fatal(err)
	}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	RegisterRefundSender(env, &activities.RefundSender{Sender: &refundsend.Sender{Outbox: store, Provider: p}})
	return env
}

func recordRefunds(t *testing.T, store *sqlstore.Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		if _, _, err := store.RecordPayment(context.Background(), ordersaga.PaymentRecord{EventID: fmt.Sprintf("%s-%03d", prefix, i),
			OrderID: prefix + "-o", AmountCents: int64(10 + i), Currency: "CNY", Result: ordersaga.PaymentRefunded}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefundSend_PagesThroughTheOutbox: more refunds than a page, a window of sends: every one sent once, in
// one run, and a second run finds nothing to send.
func TestRefundSend_PagesThroughTheOutbox(t *testing.T) {
	t.Parallel()
	sim, err := refundsim.New(refundsim.Options{Secrets: []string{"s"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	store := testenv.MustOpenStore(t)
	prefix := "pg" + testenv.RandomID(6)
	recordRefunds(t, store, prefix, 23)

	for run, want := range []int{23, 0} {
		env := refundEnv(t, store, srv.URL, "s")
		env.ExecuteWorkflow(RefundSendWorkflow, RefundSendInput{PageSize: 5, Parallel: 3, ProviderTimeout: refundTimeout})
		var res RefundSendResult
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if res.Sent != want || res.Deferred != 0 || res.Refused != 0 {
			t.Errorf("run %d: %+v, want %d sent", run, res, want)
		}
	}
	if tot := sim.Report().Totals; tot.Executed != 23 || tot.Requests != 23 {
		t.Errorf("provider totals %+v, want 23 requests, 23 executed", tot)
	}
}

// TestRefundSend_ProviderDownDefersToTheNextRun: the provider cannot be reached; the sends are retried for
// their patience, then the run ends without failing, having sent nothing and started no more sends than
// the window holds, and the refunds wait in the outbox.
func TestRefundSend_ProviderDownDefersToTheNextRun(t *testing.T) {
	t.Parallel()
	store := testenv.MustOpenStore(t)
	prefix := "dn" + testenv.RandomID(6)
	recordRefunds(t, store, prefix, 12)
	env := refundEnv(t, store, "http://"+testenv.ClosedAddr(t), "s")
	env.ExecuteWorkflow(RefundSendWorkflow, RefundSendInput{Parallel: 4, ProviderTimeout: refundTimeout, Patience: 3 * time.Second})
	var res RefundSendResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatalf("the run failed instead of deferring: %v", err)
	}
	if res.Sent != 0 || res.Deferred != 4 || res.LastError == "" {
		t.Errorf("result %+v, want the window's 4 sends deferred with their error, nothing sent", res)
	}
	left, err := store.PendingRefunds(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range left {
		if len(e.EventID) > len(prefix) && e.EventID[:len(prefix)] == prefix {
			n++
		}
	}
	if n != 12 {
		t.Errorf("%d of 12 refunds left in the outbox", n)
	}
}
