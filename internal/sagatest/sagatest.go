package sagatest

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// Env is a running saga: server, client, stores and worker.
type Env struct {
	Server *temporaltest.TestServer
	Client client.Client
	Store  *sqlstore.Store
	Redis  *redisstock.Store
	Acts   *activities.Activities
	Worker worker.Worker
}

// Start brings up a Temporal test server with the order search attributes, the test's stores and a worker.
func Start(tb testing.TB) *Env {
	tb.Helper()
	return StartOn(tb, testenv.MustOpenStore(tb), testenv.MustOpenRedis(tb))
}

// StartOn is Start on stores that already exist: a second server on the stores of a first is a Temporal
// that has forgotten every workflow (namespace retention) while the database and Redis remember.
// adjust changes the worker's options (interceptors, for instance) before it starts.
func StartOn(tb testing.TB, store *sqlstore.Store, rs *redisstock.Store, adjust ...func(*worker.Options)) *Env {
	tb.Helper()
	return StartWith(tb, store, rs, nil, adjust...)
}

// StartWith is StartOn with the worker's activities adjusted before the worker starts (acts nil: as they
// are), for instance the Redis-down fallback turned on.
func StartWith(tb testing.TB, store *sqlstore.Store, rs *redisstock.Store, acts func(*activities.Activities), adjust ...func(*worker.Options)) *Env {
	tb.Helper()
	srv := NewServer(tb)
	c := srv.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := platform.RegisterSearchAttributes(ctx, c, srv.GetDefaultNamespace()); err != nil {
		tb.Fatalf("register search attributes: %v", err)
	}
	env := &Env{Server: srv, Client: c, Store: store, Redis: rs}
	env.Acts = &activities.Activities{Redis: env.Redis, Store: env.Store}
	if acts != nil {
		acts(env.Acts)
	}
	wopts := worker.Options{MaxConcurrentActivityExecutionSize: 200, MaxConcurrentWorkflowTaskExecutionSize: 200}
	for _, change := range adjust {
		change(&wopts)
	}
	w, err := platform.StartWorker(c, env.Acts, wopts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(w.Stop) // before the server stops: cleanups run last-registered first
	env.Worker = w
	return env
}

// Stock sets a SKU's stock and price in the database and loads Redis to match.
func (e *Env) Stock(tb testing.TB, sku string, stock, priceCents int64) {
	tb.Helper()
	ctx := context.Background()
	if err := e.Store.SetInventory(ctx, sku, stock, priceCents); err != nil {
		tb.Fatal(err)
	}
	if err := e.Redis.SetAvailable(ctx, sku, stock); err != nil {
		tb.Fatal(err)
	}
}

// KeyOrderID is the current order ID of the row of (user, Idempotency-Key) in idempotency_keys ("" when there
// is none): order IDs derive from the row's nonce, so only the row knows them.
func (e *Env) KeyOrderID(tb testing.TB, userID, key string) string {
	tb.Helper()
	var ids []string
	if err := e.Store.DB().Raw("SELECT order_id FROM idempotency_keys WHERE user_id = ? AND idem_key = ?", userID, key).
		Scan(&ids).Error; err != nil {
		tb.Fatal(err)
	}
	if len(ids) == 0 {
		return ""
	}
	return ids[0]
}

// CountRows counts the rows of a table matching a condition.
func (e *Env) CountRows(tb testing.TB, table, where string, args ...any) int64 {
	tb.Helper()
	var n int64
	if err := e.Store.DB().Raw("SELECT COUNT(*) FROM "+table+" WHERE "+where, args...).Scan(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return n
}

// CountWorkflows counts the executions matching a visibility query, waiting for visibility to settle on
// want (it is eventually consistent); it returns the last count seen.
func (e *Env) CountWorkflows(tb testing.TB, query string, want int64) int64 {
	tb.Helper()
	var got int64 = -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		res, err := e.Client.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		if err != nil {
			tb.Fatal(err)
		}
		if got = res.GetCount(); got == want {
			return got
		}
	}
	return got
}

// DeadTemporal is a client of a Temporal frontend that does not exist.
func DeadTemporal(tb testing.TB) client.Client {
	tb.Helper()
	c, err := client.NewLazyClient(client.Options{HostPort: testenv.HangUpAddr(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}
