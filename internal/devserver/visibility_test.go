package devserver_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	_ "modernc.org/sqlite"

	"github.com/ordersaga/ordersaga/workflows"
)

// The local stack drops the visibility indexes that no query of it uses: workflows are still found by ID,
// by type and by each search attribute it registers, and the indexes of those stay; the rest are gone.
func TestVisibilityIndexesTrimmed(t *testing.T) {
	t.Parallel()
	dbFile := filepath.Join(t.TempDir(), "temporal.db")
	srv := startTemporal(t, dbFile)
	defer srv.Stop()
	c := dial(t, srv.Address())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deadline := time.Now().Add(time.Minute)
	opts := client.StartWorkflowOptions{ID: "order-trimmed", TaskQueue: "nobody-polls",
		TypedSearchAttributes: temporal.NewSearchAttributes(
			workflows.SAOrderStatus.ValueSet("AWAITING_PAYMENT"),
			workflows.SAOrderSKUs.ValueSet([]string{"SKU-T"}),
			workflows.SAPaymentDeadline.ValueSet(deadline),
		)}
	if _, err := c.ExecuteWorkflow(ctx, opts, "OrderWorkflow"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"WorkflowId = 'order-trimmed'",
		"WorkflowType = 'OrderWorkflow'",
		"ExecutionStatus = 'Running'",
		"OrderStatus = 'AWAITING_PAYMENT'",
		"OrderSKUs = 'SKU-T'",
		"PaymentDeadline <= '" + deadline.Add(time.Second).UTC().Format(time.RFC3339) + "'",
	} {
		var n int
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: q})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if n = len(resp.GetExecutions()); n > 0 {
				break
			}
		}
		if n != 1 {
			t.Errorf("%s: %d workflows, want 1", q, n)
		}
	}

	db, err := sql.Open("sqlite", "file:"+dbFile+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		have[name] = true
	}
	for _, kept := range []string{"default_idx", "by_workflow_id", "by_workflow_type", "by_status", "by_keyword_01", "by_keyword_10", "by_datetime_01"} {
		if !have[kept] {
			t.Errorf("index %s dropped: a query of the local stack uses it", kept)
		}
	}
	for _, gone := range []string{"by_history_length", "by_parent_workflow_id", "by_bool_01", "by_int_03", "by_double_02", "by_temporal_keyword_01"} {
		if have[gone] {
			t.Errorf("index %s kept: no query of the local stack uses it, and every visibility write updates it", gone)
		}
	}
	if len(have) != 23 {
		t.Errorf("%d visibility indexes, want 23 of the schema's 58: %v", len(have), have)
	}
}
