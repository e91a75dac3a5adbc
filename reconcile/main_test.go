package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/worker"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/workflows"
)

// The command runs one reconciliation through a worker and prints the summary and the run's anomalies, the
// day's money and its money anomalies.
func TestRun_PrintsTheSummaryAndTheAnomalies(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbPath := filepath.Join(t.TempDir(), "ordersaga.db")
	store, err := sqlstore.Open(ctx, "", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { rdb.Close() })
	rs := redisstock.New(rdb, "", 0)
	if err := store.SetInventory(ctx, "CMD", 10, 100); err != nil {
		t.Fatal(err)
	}
	if err := rs.SetAvailable(ctx, "CMD", 13); err != nil { // Redis promises 3 units too many
		t.Fatal(err)
	}
	// A payment applied to an order the database shows EXPIRED: money kept for nothing.
	now := time.Now().UTC()
	if err := store.DB().Exec(`INSERT INTO orders (order_id, user_id, status, amount_cents, currency, created_at, updated_at)
		VALUES ('cmd-o1', 'u', 'EXPIRED', 500, 'CNY', ?, ?)`, now, now).Error; err != nil {
		t.Fatal(err)
	}
	if err := store.DB().Exec(`INSERT INTO payments (event_id, order_id, amount_cents, currency, result, created_at)
		VALUES ('cmd-e1', 'cmd-o1', 500, 'CNY', 'applied', ?)`, now).Error; err != nil {
		t.Fatal(err)
	}
	srv := sagatest.NewServer(t)
	srv.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		workflows.Register(r, &activities.Activities{Redis: rs, Store: store})
	})

	env := map[string]string{
		"TEMPORAL_ADDRESS": srv.GetFrontendHostPort(), "TEMPORAL_NAMESPACE": srv.GetDefaultNamespace(), "SQLITE_PATH": dbPath,
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"reconcile", "-grace", "1s"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"drifted=1", "drift_units=3 (over 3, under 0)", "avail_set=1",
		"CMD", sqlstore.KindAvailOver, sqlstore.ActionSetAvail,
		"money: payments captured=1 applied=1 refunded=0 unsettled=0 in 1 currencies; findings=1 (new 1)",
		now.Format(sqlstore.DayLayout), sqlstore.KindAppliedNotPaid, "cmd-e1", "applied payment of an order that is EXPIRED, not PAID"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if avail, _, _ := rs.Available(ctx, "CMD"); avail != 10 {
		t.Errorf("avail after the run = %d, want 10", avail)
	}
}
