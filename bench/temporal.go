package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/workflows"
)

// Task queues of the bare workflows (the real one runs on workflows.TaskQueue).
const (
	bareLocalQueue   = "bench-bare-local"
	bareRemoteQueue  = "bench-bare-activities"
	bareUpsertQueue  = "bench-bare-local-upsert"
	benchPayDeadline = 15 * time.Minute
)

// workerOptions are the order worker's production options (platform.WorkerOptions with WORKER_CONCURRENCY
// 200), with pollers as -wft-pollers says (0 = the SDK's default, as in production).
func workerOptions(o opts) worker.Options {
	return worker.Options{MaxConcurrentActivityExecutionSize: 200, MaxConcurrentWorkflowTaskExecutionSize: 200,
		MaxConcurrentWorkflowTaskPollers: o.wftPollers, MaxConcurrentActivityTaskPollers: o.wftPollers}
}

// benchTemporal is layer 3: orders accepted per second end to end (orderclient.Place, the real worker and
// activities) against the bare workflow of the same shape on the same in-process Temporal server. The
// stores are the real Redis and MariaDB ("real") or miniredis and SQLite ("embedded", the local stack).
func benchTemporal(ctx context.Context, o opts, out io.Writer) ([]pair, error) {
	var pairs []pair
	for _, stores := range o.temporalStores {
		p, err := benchTemporalOn(ctx, o, stores, out)
		if err != nil {
			return pairs, fmt.Errorf("temporal (%s stores): %w", stores, err)
		}
		pairs = append(pairs, p...)
	}
	return pairs, nil
}

func benchTemporalOn(ctx context.Context, o opts, stores string, out io.Writer) (pairs []pair, err error) {
	rs, store, cleanup, err := openStores(ctx, o, stores)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := store.SetInventory(ctx, hotSKU, 1<<40, 999); err != nil {
		return nil, err
	}
	if err := rs.SetAvailable(ctx, hotSKU, 1<<40); err != nil {
		return nil, err
	}

	rec := newRecorder()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	srv := temporaltest.NewServer(temporaltest.WithBaseClientOptions(client.Options{
		Logger: tlog.NewStructuredLogger(logger), MetricsHandler: rec,
	}))
	defer func() {
		// temporaltest reports a failed stop through its testing.T, which a command does not have.
		defer func() { _ = recover() }()
		srv.Stop()
	}()
	c := srv.GetDefaultClient()
	if err := platform.RegisterSearchAttributes(ctx, c, srv.GetDefaultNamespace()); err != nil {
		return nil, err
	}
	acts := &activities.Activities{Redis: rs, Store: store}
	srv.NewWorkerWithOptions(workflows.TaskQueue, func(r worker.Registry) { workflows.Register(r, acts) }, workerOptions(o))
	for _, q := range []string{bareLocalQueue, bareRemoteQueue, bareUpsertQueue} {
		srv.NewWorkerWithOptions(q, func(r worker.Registry) {
			r.RegisterWorkflow(BareOrderWorkflow)
			r.RegisterActivity(NoopStep)
		}, workerOptions(o))
	}

	run := "o" + randomID()
	place := func(ctx context.Context, w int, seq int64) error {
		res, err := orderclient.Place(ctx, c, workflows.OrderInput{
			OrderID: run + "-" + strconv.FormatInt(seq, 10), UserID: "bench", Currency: "CNY",
			Lines: []ordersaga.Line{{SKU: hotSKU, Qty: 1}}, PaymentTimeout: benchPayDeadline,
		})
		if err == nil && res.Order.Status != ordersaga.StatusAwaitingPayment {
			err = fmt.Errorf("order %s: %s %s", res.Order.OrderID, res.Order.Status, res.Order.ClosedReason)
		}
		return err
	}
	bare := func(queue string, local, upsert bool) op {
		prefix := "b" + randomID() + "-"
		return func(ctx context.Context, w int, seq int64) error {
			id := prefix + strconv.FormatInt(seq, 10)
			start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
				ID: workflows.OrderWorkflowID(id), TaskQueue: queue,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
				WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			}, BareOrderWorkflow, bareInput{OrderID: id, PaymentTimeout: benchPayDeadline, Local: local, Upsert: upsert})
			h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
				StartWorkflowOperation: start,
				UpdateOptions:          client.UpdateWorkflowOptions{UpdateName: workflows.UpdateReservation, WaitForStage: client.WorkflowUpdateStageCompleted},
			})
			if err != nil {
				return err
			}
			var status string
			return h.Get(ctx, &status)
		}
	}
	// Warm the server and every worker once.
	for _, f := range []op{place, bare(bareLocalQueue, true, false), bare(bareRemoteQueue, false, false), bare(bareUpsertQueue, true, true)} {
		if err := f(ctx, 0, -1); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}

	conc := o.placeConc
	rec.reset()
	real, limit := measurePair(ctx, o, conc, "temporal-"+stores, "orderclient.Place + real worker", place,
		"bare workflow: 2 no-op local activities + update", bare(bareLocalQueue, true, false))
	fmt.Fprintf(out, "\nlayer 3 (%s stores): where the time goes, Temporal SDK timers over the real and the bare side (%d + %d orders measured, plus warm-ups):\n", stores, real.Ops, limit.Ops)
	rec.write(out, "local_activity_execution_latency", "workflow_task_execution_latency", "workflow_task_schedule_to_start",
		"request_latency", "activity_execution_latency", "activity_schedule_to_start", "local_activity_total", "workflow_endtoend")
	withUpsert, limit2 := measurePair(ctx, o, conc, "", "bare + 2 search-attribute upserts", bare(bareUpsertQueue, true, true),
		"bare workflow: 2 no-op local activities + update", bare(bareLocalQueue, true, false))
	remote, limit3 := measurePair(ctx, o, conc, "", "bare with 2 regular activities", bare(bareRemoteQueue, false, false),
		"bare workflow: 2 no-op local activities + update", bare(bareLocalQueue, true, false))
	comment := fmt.Sprintf("temporaltest in process, %s stores, %d concurrent Update-with-Start", stores, conc)
	pairs = append(pairs,
		pair{Layer: "3 accepted orders end to end (" + stores + " stores)", Real: real, Limit: limit, Target: 0.9, Comment: comment},
		pair{Layer: "3 … what the 2 search-attribute upserts cost", Real: withUpsert, Limit: limit2, Comment: "bare + the order workflow's two UpsertSearchAttributes"},
		pair{Layer: "3 … what local activities bought", Real: remote, Limit: limit3, Comment: "bare with regular activities instead of local ones"},
	)
	return pairs, nil
}

// openStores opens the Redis and database layers of the benchmark: its own key prefix on the real Redis and
// its own MariaDB database ("real"), or miniredis and a SQLite file ("embedded").
func openStores(ctx context.Context, o opts, kind string) (*activities.RedisStock, *activities.Store, func(), error) {
	switch kind {
	case "real":
		dsn, drop, err := createMySQLDatabase(ctx, o.mysqlDSN)
		if err != nil {
			return nil, nil, nil, err
		}
		store, err := activities.OpenDB(ctx, dsn, "")
		if err != nil {
			drop()
			return nil, nil, nil, err
		}
		rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr, PoolSize: 128, MinIdleConns: 8})
		prefix := "bench" + randomID() + ":"
		return activities.NewRedisStock(rdb, prefix, time.Hour), store, func() {
			deleteKeys(context.Background(), rdb, prefix)
			rdb.Close()
			store.Close()
			drop()
		}, nil
	case "embedded":
		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			return nil, nil, nil, err
		}
		store, err := activities.OpenDB(ctx, "", filepath.Join(o.tmp, "temporal-"+randomID()+".db"))
		if err != nil {
			mr.Close()
			return nil, nil, nil, err
		}
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), PoolSize: 128})
		return activities.NewRedisStock(rdb, "", time.Hour), store, func() {
			rdb.Close()
			store.Close()
			mr.Close()
		}, nil
	}
	return nil, nil, nil, fmt.Errorf("unknown stores %q (want real or embedded)", kind)
}

// startProfile writes a CPU profile of what runs until the returned stop, when -profile is set.
func (o opts) startProfile(name string) func() {
	if o.profileDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return func() {}
	}
	path := filepath.Join(o.profileDir, "cpu-"+name+".pprof")
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "bench: profile:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		fmt.Fprintf(os.Stderr, "bench: CPU profile in %s (go tool pprof -top %s)\n", path, path)
	}
}
