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
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/devserver"
	"github.com/ordersaga/ordersaga/internal/memredis"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// Task queues of the bare workflows (the real one runs on workflows.TaskQueue).
const (
	bareLocalQueue   = "bench-bare-local"
	bareRemoteQueue  = "bench-bare-activities"
	bareUpsertQueue  = "bench-bare-local-upsert"
	bareStartSAQueue = "bench-bare-local-start-sa"
	benchPayDeadline = 15 * time.Minute
)

// workerOptions are the order worker's production options (platform.WorkerOptions with WORKER_CONCURRENCY
// 200), with pollers as -pollers says (0 = the order worker's, platform.WithOrderPollers, as in production).
func workerOptions(o opts) worker.Options {
	return worker.Options{MaxConcurrentActivityExecutionSize: 200, MaxConcurrentWorkflowTaskExecutionSize: 200,
		MaxConcurrentWorkflowTaskPollers: o.wftPollers, MaxConcurrentActivityTaskPollers: o.wftPollers}
}

// tenv is one Temporal server with the order worker (real activities on its own stores) and the bare
// workflows' workers, and the operations that place an order on each.
type tenv struct {
	c     client.Client
	place op
	// placeBefore places as orderclient.Place did before the accepted path lost its first upsert and its
	// confirm step (no search attributes at start, no ConfirmInDeduct): what that change bought.
	placeBefore op
	bare        func(queue string, local bool, upserts int) op
	close       func()
}

// newTEnv starts the workers on c and the stores ("real" or "embedded") of the real one.
func newTEnv(ctx context.Context, o opts, c client.Client, stores string) (*tenv, error) {
	rs, store, closeStores, err := openStores(ctx, o, stores)
	if err != nil {
		return nil, err
	}
	e := &tenv{c: c}
	var workers []worker.Worker
	e.close = func() {
		for _, w := range workers {
			w.Stop()
		}
		closeStores()
	}
	if err := store.SetInventory(ctx, hotSKU, 1<<40, 999); err != nil {
		e.close()
		return nil, err
	}
	if err := rs.SetAvailable(ctx, hotSKU, 1<<40); err != nil {
		e.close()
		return nil, err
	}
	acts := &activities.Activities{Redis: rs, Store: store}
	workers = append(workers, platform.NewWorker(c, acts, workerOptions(o)))
	for _, q := range []string{bareLocalQueue, bareRemoteQueue, bareUpsertQueue, bareStartSAQueue} {
		w := worker.New(c, q, platform.WithOrderPollers(workerOptions(o))) // polling as the order worker does
		w.RegisterWorkflow(BareOrderWorkflow)
		w.RegisterActivity(NoopStep)
		workers = append(workers, w)
	}
	for _, w := range workers {
		if err := w.Start(); err != nil {
			e.close()
			return nil, err
		}
	}
	run := "o" + randomID()
	e.place = func(ctx context.Context, _ int, seq int64) error {
		res, err := orderclient.Place(ctx, c, workflows.OrderInput{
			OrderID: apiOrderID("bench", run+"-"+strconv.FormatInt(seq, 10)), UserID: "bench", Currency: "CNY",
			Lines: []ordersaga.Line{{SKU: hotSKU, Qty: 1}}, PaymentTimeout: benchPayDeadline,
		})
		if err == nil && res.Order.Status != ordersaga.StatusAwaitingPayment {
			err = fmt.Errorf("order %s: %s %s", res.Order.OrderID, res.Order.Status, res.Order.ClosedReason)
		}
		return err
	}
	before := "p" + randomID() + "-"
	e.placeBefore = func(ctx context.Context, _ int, seq int64) error {
		id := apiOrderID("bench", before+strconv.FormatInt(seq, 10))
		var res workflows.Reservation
		err := updateWithStart(ctx, c, startOptions(id, workflows.TaskQueue), workflows.OrderWorkflow, workflows.OrderInput{
			OrderID: id, UserID: "bench", Currency: "CNY",
			Lines: []ordersaga.Line{{SKU: hotSKU, Qty: 1}}, PaymentTimeout: benchPayDeadline,
		}, &res)
		if err == nil && res.Order.Status != ordersaga.StatusAwaitingPayment {
			err = fmt.Errorf("order %s: %s %s", res.Order.OrderID, res.Order.Status, res.Order.ClosedReason)
		}
		return err
	}
	e.bare = func(queue string, local bool, upserts int) op {
		prefix := "b" + randomID() + "-"
		return func(ctx context.Context, _ int, seq int64) error {
			id := apiOrderID("bench", prefix+strconv.FormatInt(seq, 10))
			opts := startOptions(id, queue)
			if upserts == 1 {
				opts.TypedSearchAttributes = workflows.StartSearchAttributes(workflows.OrderInput{Lines: []ordersaga.Line{{SKU: hotSKU, Qty: 1}}})
			}
			var status string
			return updateWithStart(ctx, c, opts, BareOrderWorkflow,
				bareInput{OrderID: id, PaymentTimeout: benchPayDeadline, Local: local, Upserts: upserts}, &status)
		}
	}
	// Warm the server and every worker once.
	for _, f := range []op{e.place, e.placeBefore, e.bare(bareLocalQueue, true, 0), e.bare(bareRemoteQueue, false, 0), e.bare(bareUpsertQueue, true, 2), e.bare(bareStartSAQueue, true, 1)} {
		if err := f(ctx, 0, -globalSeq.Add(1)); err != nil {
			e.close()
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return e, nil
}

// startOptions are an order's start options on queue, as orderclient.Place gives them but without search
// attributes.
func startOptions(orderID, queue string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID: workflows.OrderWorkflowID(orderID), TaskQueue: queue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
	}
}

// updateWithStart starts wf(in) with opts and waits for its reservation update's answer into out.
func updateWithStart(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, wf, in, out any) error {
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: c.NewWithStartWorkflowOperation(opts, wf, in),
		UpdateOptions:          client.UpdateWorkflowOptions{UpdateName: workflows.UpdateReservation, WaitForStage: client.WorkflowUpdateStageCompleted},
	})
	if err != nil {
		return err
	}
	return h.Get(ctx, out)
}

// benchTemporal is layer 3: orders accepted per second end to end (orderclient.Place, the real worker and
// activities) against the bare workflow of the same shape on the same Temporal server, on each configured
// setup: temporaltest with the real Redis and MariaDB ("real") or miniredis and SQLite ("embedded"), and
// the local stack's file-backed server ("localstack"), there with candidate server settings too.
func benchTemporal(ctx context.Context, o opts, out io.Writer) ([]pair, error) {
	var pairs []pair
	for _, setup := range o.temporalStores {
		var (
			p   []pair
			err error
		)
		if setup == "localstack" {
			p, err = benchLocalStack(ctx, o, out)
		} else {
			p, err = benchTemporalTest(ctx, o, setup, out)
		}
		for i := range p {
			p[i].Only = "temporal -temporal " + setup
		}
		pairs = append(pairs, p...)
		if err != nil {
			return pairs, fmt.Errorf("temporal (%s): %w", setup, err)
		}
	}
	return pairs, nil
}

func quietLogger() tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

func benchTemporalTest(ctx context.Context, o opts, stores string, out io.Writer) ([]pair, error) {
	rec := newRecorder()
	srv := temporaltest.NewServer(temporaltest.WithBaseClientOptions(client.Options{Logger: quietLogger(), MetricsHandler: rec}))
	defer func() {
		// temporaltest reports a failed stop through its testing.T, which a command does not have.
		defer func() { _ = recover() }()
		srv.Stop()
	}()
	c := srv.GetDefaultClient()
	if err := platform.RegisterSearchAttributes(ctx, c, srv.GetDefaultNamespace()); err != nil {
		return nil, err
	}
	e, err := newTEnv(ctx, o, c, stores)
	if err != nil {
		return nil, err
	}
	defer e.close()

	conc := o.placeConc
	rec.reset()
	real, limit := measurePair(ctx, o, conc, "temporal-"+stores, "orderclient.Place + real worker", e.place,
		"bare workflow: 2 no-op local activities + update", e.bare(bareLocalQueue, true, 0))
	fmt.Fprintf(out, "\nlayer 3 (temporaltest, %s stores): where the time goes — Temporal SDK timers over the real and the bare side (%d + %d orders measured, plus warm-ups):\n", stores, real.Ops, limit.Ops)
	rec.write(out, "local_activity_execution_latency", "workflow_task_execution_latency", "workflow_task_schedule_to_start",
		"request_latency", "activity_execution_latency", "activity_schedule_to_start")
	withUpsert, limit2 := measurePair(ctx, o, conc, "", "bare + 2 search-attribute upserts", e.bare(bareUpsertQueue, true, 2),
		"bare workflow: 2 no-op local activities + update", e.bare(bareLocalQueue, true, 0))
	startSA, limit4 := measurePair(ctx, o, conc, "", "bare + SAs at start + 1 upsert", e.bare(bareStartSAQueue, true, 1),
		"bare + 2 search-attribute upserts", e.bare(bareUpsertQueue, true, 2))
	lean, before := measurePair(ctx, o, conc, "", "orderclient.Place + real worker", e.place,
		"the order path before: upsert at start, confirm step", e.placeBefore)
	remote, limit3 := measurePair(ctx, o, conc, "", "bare with 2 regular activities", e.bare(bareRemoteQueue, false, 0),
		"bare workflow: 2 no-op local activities + update", e.bare(bareLocalQueue, true, 0))
	return []pair{
		{Layer: "3 accepted orders end to end (temporaltest, " + stores + " stores)", Real: real, Limit: limit, Target: 0.9,
			Comment: fmt.Sprintf("temporaltest in process, %s stores, %d concurrent Update-with-Start", stores, conc)},
		{Layer: "3 … what the 2 search-attribute upserts cost", Real: withUpsert, Limit: limit2, Comment: "bare + the order workflow's two UpsertSearchAttributes, same server"},
		{Layer: "3 … search attributes at start, one upsert (bare)", Real: startSA, Limit: limit4,
			Comment: "the bare workflow with OrderStatus/OrderSKUs given with the start options and one upsert (the order workflow's since 0288714), against its first upsert and the second (before; ratio > 100% = gain)"},
		leanPair(lean, before),
		{Layer: "3 … what local activities bought", Real: remote, Limit: limit3, Comment: "bare with regular activities instead of local ones, same server"},
	}, nil
}

// benchLocalStack measures the local stack's setup (devserver's file-backed Temporal, miniredis, SQLite):
// real vs bare on it, then the real path on it against the real path on the server settings it had before
// they were measured (what each change bought).
func benchLocalStack(ctx context.Context, o opts, out io.Writer) ([]pair, error) {
	type server struct {
		name string
		lt   devserver.TemporalOptions
		env  *tenv
	}
	servers := []*server{
		{name: "local stack"},
		{name: "every visibility index", lt: devserver.TemporalOptions{AllVisibilityIndexes: true}},
		{name: "rollback journal + synchronous=FULL", lt: devserver.TemporalOptions{RollbackJournal: true}},
		{name: "forced search-attribute refresh", lt: devserver.TemporalOptions{ForceSearchAttributesRefresh: true}},
		{name: "both (the local stack before)", lt: devserver.TemporalOptions{RollbackJournal: true, ForceSearchAttributesRefresh: true}},
	}
	for _, s := range servers {
		addr, stop, err := startTemporal(ctx, o.tmp, s.lt, "default")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		defer stop()
		c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: "default", Logger: quietLogger()})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if s.env, err = newTEnv(ctx, o, c, "embedded"); err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		defer s.env.close()
	}
	conc := o.placeConc
	base := servers[0].env
	real, limit := measurePair(ctx, o, conc, "temporal-localstack", "orderclient.Place + real worker", base.place,
		"bare workflow: 2 no-op local activities + update", base.bare(bareLocalQueue, true, 0))
	pairs := []pair{{Layer: "3 accepted orders end to end (local stack: file-backed Temporal, miniredis, SQLite)", Real: real, Limit: limit, Target: 0.9,
		Comment: fmt.Sprintf("internal/devserver's server on a SQLite file (WAL) as the local stack runs it, %d concurrent Update-with-Start; target also ≥ 100 orders/s", conc)}}
	lean, before := measurePair(ctx, o, conc, "", "orderclient.Place + real worker", base.place,
		"the order path before: upsert at start, confirm step", base.placeBefore)
	upsert, bare := measurePair(ctx, o, conc, "", "bare + SAs at start + 1 upsert", base.bare(bareStartSAQueue, true, 1),
		"bare workflow: 2 no-op local activities + update", base.bare(bareLocalQueue, true, 0))
	pairs = append(pairs, leanPair(lean, before), pair{Layer: "3 … what the one search-attribute upsert costs", Real: upsert, Limit: bare,
		Comment: "the bare workflow with the real path's search attributes (OrderStatus/OrderSKUs at start, one upsert of OrderStatus and PaymentDeadline) against the bare workflow without any, same server"})
	for _, s := range servers[1:] {
		now, before := measurePair(ctx, o, conc, "", "real path, local stack", base.place, "real path, "+s.name, s.env.place)
		pairs = append(pairs, pair{Layer: "3 … what leaving " + s.name + " bought", Real: now, Limit: before,
			Comment: "the real path on the local stack's server against the same path on a server with " + s.name + " (ratio > 100% = gain)"})
	}
	fmt.Fprintf(out, "\nlayer 3 (local stack): %.0f orders/s accepted end to end (target ≥ 100)\n", real.Rate())
	return pairs, nil
}

// leanPair is the row of what the start's search attributes and the confirm inside the deduct bought.
func leanPair(now, before result) pair {
	return pair{Layer: "3 … what attributes at start + the confirm in the deduct bought", Real: now, Limit: before,
		Comment: "the real path (OrderStatus/OrderSKUs with the start, the deduct drops the Redis holds) against the same workflow started as before (its first upsert and a ConfirmLines step of its own), same server (ratio > 100% = gain)"}
}

// openStores opens the Redis and database layers: a key prefix of the benchmark's own on the real Redis and
// a database of its own on MariaDB ("real"), or miniredis and a SQLite file ("embedded", as the local stack).
func openStores(ctx context.Context, o opts, kind string) (*redisstock.Store, *sqlstore.Store, func(), error) {
	switch kind {
	case "real":
		dsn, drop, err := createMySQLDatabase(ctx, o.mysqlDSN)
		if err != nil {
			return nil, nil, nil, err
		}
		store, err := sqlstore.Open(ctx, dsn, "")
		if err != nil {
			drop()
			return nil, nil, nil, err
		}
		rdb, err := platform.OpenRedis(ctx, o.redisConfig(128), nil)
		if err != nil {
			store.Close()
			drop()
			return nil, nil, nil, err
		}
		prefix := "bench" + randomID() + ":"
		return redisstock.New(rdb, prefix, time.Hour), store, func() {
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
		store, err := sqlstore.Open(ctx, "", filepath.Join(o.tmp, "orders-"+randomID()+".db"))
		if err != nil {
			mr.Close()
			return nil, nil, nil, err
		}
		// The local stack's connection to its embedded Redis: in memory, each command run by its sender.
		rdb, err := platform.OpenRedis(ctx, config.Config{RedisAddr: mr.Addr(), RedisPoolSize: 128}, memredis.Dialer(mr))
		if err != nil {
			store.Close()
			mr.Close()
			return nil, nil, nil, err
		}
		return redisstock.New(rdb, "", time.Hour), store, func() {
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
