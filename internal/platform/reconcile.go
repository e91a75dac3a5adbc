package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ordersaga/ordersaga/workflows"
)

// RunOnce starts one ReconcileWorkflow now (beside the schedule) and waits for its result: the stock summary
// and the money summary.
func RunOnce(ctx context.Context, c client.Client, in workflows.ReconcileInput) (string, workflows.ReconcileResult, error) {
	id := workflows.ReconcileOnceWorkflowID(time.Now())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             workflows.TaskQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}, workflows.ReconcileWorkflow, in)
	if err != nil {
		return id, workflows.ReconcileResult{}, fmt.Errorf("start reconciliation: %w", err)
	}
	var sum workflows.ReconcileResult
	if err := run.Get(ctx, &sum); err != nil {
		return id, sum, fmt.Errorf("reconciliation %s: %w", id, err)
	}
	return id, sum, nil
}

// ServeMetrics serves reg's metrics on addr at /metrics until the returned stop is called. It is for the
// worker, where reconciliation runs (the starter serves its own /metrics).
func ServeMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: METRICS_ADDR=%s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "addr", addr, "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
