package placement_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/orderclient"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/retention"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
	"github.com/ordersaga/ordersaga/internal/testenv"
	"github.com/ordersaga/ordersaga/workflows"
)

// testRetention is the tests' IDEMPOTENCY_RETENTION; they age rows with the store's clock.
const testRetention = 3 * time.Second

// retentionEnv is a service with testRetention on a saga whose store reads clk.
func retentionEnv(t *testing.T) (*env, *testenv.Clock) {
	t.Helper()
	se := sagatest.Start(t)
	clk := testenv.NewClock()
	se.Store.SetClock(clk.Now) // before the service's backfill reads it
	return serviceOn(t, se, func(c *placement.Config) { c.Retention = testRetention }), clk
}

// waitReady waits for the service's backfill of the markers (the fast path on).
func waitReady(t *testing.T, e *env) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if ready, err := e.Gate.ClaimsReady(context.Background()); err == nil && ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the idempotency markers are not ready a minute after the service started")
		}
	}
}

// marker returns the value of the key's marker ("" when there is none).
func (e *env) marker(t *testing.T, user, key string) string {
	t.Helper()
	v, err := e.Redis.Client().Get(context.Background(), e.Redis.ClaimKey(placement.MarkerName(user, key))).Result()
	if err != nil && err.Error() != "redis: nil" {
		t.Fatal(err)
	}
	return v
}

// TestPlace_KeyExpires: within the retention after its last answer a key replays; once unused for longer (its
// order closed) the same key is a new order with a new order ID, never one used before, whatever its body;
// concurrent requests on an expired key place one order.
func TestPlace_KeyExpires(t *testing.T) {
	t.Parallel()
	e, clk := retentionEnv(t)
	e.Stock(t, "RET-1", 100, 100)
	line := ordersaga.Line{SKU: "RET-1", Qty: 1}
	seen := map[string]bool{}

	first := want(t, e.place("k-ret", "u-ret", line), placement.Reserved)
	seen[first.OrderID] = true
	clk.Advance(testRetention - 100*time.Millisecond)
	if r := want(t, e.place("k-ret", "u-ret", line), placement.Replayed); r.OrderID != first.OrderID {
		t.Errorf("replay within the retention: order %s, want %s", r.OrderID, first.OrderID)
	}
	want(t, e.place("k-ret", "u-ret", ordersaga.Line{SKU: "RET-1", Qty: 2}), placement.KeyReused)

	// Past the retention after the last answer, the order closed: the same body is a new order, then replays
	// as that one.
	e.cancel(t, first.OrderID)
	clk.Advance(testRetention + time.Second)
	second := want(t, e.place("k-ret", "u-ret", line), placement.Reserved)
	if seen[second.OrderID] {
		t.Fatalf("the key's new order reused order ID %s", second.OrderID)
	}
	seen[second.OrderID] = true
	if r := want(t, e.place("k-ret", "u-ret", line), placement.Replayed); r.OrderID != second.OrderID {
		t.Errorf("replay of the renewed key: %s, want %s", r.OrderID, second.OrderID)
	}
	if m, rec := e.marker(t, "u-ret", "k-ret"), keyRow(t, e, "u-ret", "k-ret"); m != rec.Nonce {
		t.Errorf("marker %q after the renewal, want the new life's nonce %q", m, rec.Nonce)
	}

	// Past it again, another body: accepted (no 422), a third order ID.
	e.cancel(t, second.OrderID)
	clk.Advance(testRetention + time.Second)
	third := want(t, e.place("k-ret", "u-ret", ordersaga.Line{SKU: "RET-1", Qty: 3}), placement.Reserved)
	if seen[third.OrderID] {
		t.Fatalf("the key's third order reused order ID %s", third.OrderID)
	}
	seen[third.OrderID] = true
	if n := e.countRows("orders", "user_id = ?", "u-ret"); n != 3 {
		t.Errorf("%d orders, want 3", n)
	}

	// Twenty requests at once on the expired key, over three services: one new order, one answer.
	e.cancel(t, third.OrderID)
	clk.Advance(testRetention + time.Second)
	services := []*env{e, serviceOn(t, e.Env, func(c *placement.Config) { c.Retention = testRetention }),
		serviceOn(t, e.Env, func(c *placement.Config) { c.Retention = testRetention })}
	outs := atOnce(20, func(i int) placement.Outcome {
		return services[i%len(services)].place("k-ret", "u-ret", line)
	})
	for i, out := range outs {
		if (out.Kind != placement.Reserved && out.Kind != placement.Replayed) || out.OrderID != outs[0].OrderID {
			t.Errorf("request %d: %s %s, request 0: %s %s", i, out.Kind, out.OrderID, outs[0].Kind, outs[0].OrderID)
		}
	}
	if seen[outs[0].OrderID] {
		t.Errorf("the concurrent renewal reused order ID %s", outs[0].OrderID)
	}
	if n := e.countRows("orders", "user_id = ?", "u-ret"); n != 4 {
		t.Errorf("%d orders after the concurrent renewal, want 4", n)
	}
	if n := e.countRows("idempotency_keys", "user_id = ?", "u-ret"); n != 1 {
		t.Errorf("%d rows of the key, want 1 (renewed in place)", n)
	}
}

// keyRow reads the key's row.
func keyRow(t *testing.T, e *env, user, key string) sqlstore.IdempotencyRecord {
	t.Helper()
	rec, err := e.Store.IdempotencyKey(context.Background(), user, key)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestCleanup_DeletesExactlyTheExpiredRecordsWhileOrdersArePlaced: 600 expired keys (more than a batch), 40
// within the retention; while the cleanup runs in batches of 100, new keys are placed and five expired keys
// are used again (with another body). Afterwards every expired key not used again has neither row nor
// marker, every other key has its row and a marker carrying its row's nonce (the keys within the retention
// untouched), and the cleanup counted what it deleted. Then the fast path answers a deleted key as the new
// key it is: sold out from Redis alone, or a new order with a new order ID.
func TestCleanup_DeletesExactlyTheExpiredRecordsWhileOrdersArePlaced(t *testing.T) {
	t.Parallel()
	e, clk := retentionEnv(t)
	ctx := context.Background()
	e.Stock(t, "CLEAN-1", 1000, 100)
	waitReady(t, e)
	const expired, live, reused, placed, batch = 600, 40, 5, 10, 100
	type key struct{ user, key string }
	seed := func(k key) sqlstore.IdempotencyRecord {
		nonce := testenv.RandomID(16)
		rec, _, err := e.Store.ClaimIdempotencyKey(ctx, sqlstore.IdempotencyClaim{UserID: k.user, Key: k.key, Fingerprint: "fp",
			Nonce: nonce, OrderID: placement.OrderID(k.user, k.key, nonce, 0)}, testRetention)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Gate.MarkClaimed(ctx, admission.ClaimMarker{Name: placement.MarkerName(k.user, k.key), Nonce: rec.Nonce, TTL: time.Hour, New: true}); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	var old, fresh []key
	oldRec := map[key]sqlstore.IdempotencyRecord{}
	for i := range expired {
		k := key{"u-old", fmt.Sprintf("k-%d", i)}
		old = append(old, k)
		oldRec[k] = seed(k)
	}
	clk.Advance(testRetention + time.Second)
	freshRec := map[key]sqlstore.IdempotencyRecord{}
	for i := range live {
		k := key{"u-live", fmt.Sprintf("k-%d", i)}
		fresh = append(fresh, k)
		freshRec[k] = seed(k)
	}
	if n := e.countRows("idempotency_keys", "1 = 1"); n != expired+live {
		t.Fatalf("%d rows before the cleanup, want %d", n, expired+live)
	}

	reg := prometheus.NewRegistry()
	metrics, err := retention.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cleaner := retention.Cleaner{Store: e.Store, Redis: e.Redis, Metrics: metrics}
	var (
		wg  sync.WaitGroup
		sum retention.Summary
	)
	line := ordersaga.Line{SKU: "CLEAN-1", Qty: 1}
	wg.Go(func() {
		for {
			b, err := cleaner.Batch(ctx, testRetention, batch)
			if err != nil {
				t.Errorf("cleanup batch: %v", err)
				return
			}
			sum.Add(b)
			if b.Expired < batch {
				return
			}
		}
	})
	outs := make([]placement.Outcome, placed+reused)
	for i := range outs {
		wg.Go(func() {
			if i < placed {
				outs[i] = e.place(fmt.Sprintf("k-new-%d", i), "u-new", line)
				return
			}
			k := old[(i-placed)*97]
			outs[i] = e.place(k.key, k.user, ordersaga.Line{SKU: "CLEAN-1", Qty: 2}) // another body than the seeded fingerprint's
		})
	}
	wg.Wait()
	for i, out := range outs {
		if out.Kind != placement.Reserved {
			t.Errorf("placement %d during the cleanup: %s %+v, want reserved", i, out.Kind, out)
		}
	}

	reusedKeys := map[key]bool{}
	for i := range reused {
		reusedKeys[old[i*97]] = true
	}
	wantRows := live + placed + reused
	if n := e.countRows("idempotency_keys", "1 = 1"); n != int64(wantRows) {
		t.Errorf("%d rows after the cleanup, want %d", n, wantRows)
	}
	if sum.Rows < expired-reused || sum.Rows > expired {
		t.Errorf("the cleanup deleted %d rows, want %d to %d (a key used again may be renewed before its delete)", sum.Rows, expired-reused, expired)
	}
	if sum.Markers < sum.Rows-reused || sum.Markers > sum.Rows {
		t.Errorf("the cleanup deleted %d markers for %d rows", sum.Markers, sum.Rows)
	}
	if got := testenv.MustMetric(t, reg, "ordersaga_idempotency_cleanup_rows_deleted_total"); got != float64(sum.Rows) {
		t.Errorf("rows-deleted counter %v, want %d", got, sum.Rows)
	}
	if got := testenv.MustMetric(t, reg, "ordersaga_idempotency_cleanup_markers_deleted_total"); got != float64(sum.Markers) {
		t.Errorf("markers-deleted counter %v, want %d", got, sum.Markers)
	}
	for _, k := range old {
		rec, err := e.Store.IdempotencyKey(ctx, k.user, k.key)
		m := e.marker(t, k.user, k.key)
		switch {
		case reusedKeys[k]:
			if err != nil || rec.Nonce == oldRec[k].Nonce || m != rec.Nonce || rec.Age > testRetention {
				t.Errorf("key %s used again: row %+v %v, marker %q: want a new life and its marker", k.key, rec, err, m)
			}
		case err == nil || m != "":
			t.Errorf("expired key %s: row %+v, marker %q: want both deleted", k.key, rec, m)
		}
	}
	for _, k := range fresh {
		rec, err := e.Store.IdempotencyKey(ctx, k.user, k.key)
		if m := e.marker(t, k.user, k.key); err != nil || rec.Nonce != freshRec[k].Nonce || m != rec.Nonce {
			t.Errorf("key %s within the retention: row %+v %v, marker %q: want it untouched", k.key, rec, err, m)
		}
	}
	for i := range placed {
		rec, err := e.Store.IdempotencyKey(ctx, "u-new", fmt.Sprintf("k-new-%d", i))
		if m := e.marker(t, "u-new", fmt.Sprintf("k-new-%d", i)); err != nil || m != rec.Nonce {
			t.Errorf("key placed during the cleanup: row %+v %v, marker %q: want both", rec, err, m)
		}
	}

	// A deleted key is a new key to the fast path: with the SKU sold out it is refused from Redis alone (no
	// row written); with units it is a new order, whose ID is none of the old life's.
	e.Stock(t, "CLEAN-GONE", 0, 100)
	gone := old[1]
	if out := want(t, e.place(gone.key, gone.user, ordersaga.Line{SKU: "CLEAN-GONE", Qty: 1}), placement.SoldOut); !out.FastPath {
		t.Errorf("deleted key on a sold-out SKU: %+v, want the fast path's refusal", out)
	}
	if id := e.KeyOrderID(t, gone.user, gone.key); id != "" {
		t.Errorf("the fast path's refusal wrote a row (order %s)", id)
	}
	out := want(t, e.place(gone.key, gone.user, line), placement.Reserved)
	if out.OrderID == oldRec[gone].OrderID {
		t.Errorf("the deleted key's new order reused order ID %s", out.OrderID)
	}
}

// TestCleanupWorkflow_RunsOnTheWorkerAndIsScheduled: the cleanup's Schedule is ensured (twice: one schedule,
// overlap SKIP) and a run of IdempotencyCleanupWorkflow on the worker deletes the expired rows (their orders
// closed) and markers in batches, leaving the rows within the retention.
func TestCleanupWorkflow_RunsOnTheWorkerAndIsScheduled(t *testing.T) {
	t.Parallel()
	e, clk := retentionEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in := workflows.IdempotencyCleanupInput{Retention: testRetention, BatchSize: 7}
	for range 2 {
		if err := platform.EnsureCleanupSchedule(ctx, e.Client, time.Hour, in); err != nil {
			t.Fatal(err)
		}
	}
	sched := e.Client.ScheduleClient().GetHandle(ctx, workflows.IdempotencyCleanupScheduleID)
	desc, err := sched.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Paused for the rest of the test: an hourly interval fires at the top of the hour, and a scheduled run
	// at 03:00:00 once deleted 7 of the rows this test's own run counts.
	if err := sched.Pause(ctx, client.SchedulePauseOptions{Note: "the test runs the cleanup itself"}); err != nil {
		t.Fatal(err)
	}
	if desc.Schedule.Policy.Overlap != enumspb.SCHEDULE_OVERLAP_POLICY_SKIP || desc.Schedule.Spec.Intervals[0].Every != time.Hour {
		t.Errorf("schedule %+v %+v, want every hour, overlap SKIP", desc.Schedule.Policy, desc.Schedule.Spec.Intervals)
	}

	e.Stock(t, "CLWF-1", 100, 100)
	line := ordersaga.Line{SKU: "CLWF-1", Qty: 1}
	for i := range 20 {
		o := want(t, e.place(fmt.Sprintf("k-old-%d", i), "u-clwf", line), placement.Reserved)
		e.cancel(t, o.OrderID) // closed: a key whose order is open is never deleted
	}
	clk.Advance(testRetention + time.Second)
	// Redis's clock runs in real time, the store's in the test's jumps: a marker lives testRetention plus a
	// minute of Redis's time, and under -race on a loaded machine placing the 20 orders took longer (CI once
	// found 3 markers gone before the run, which then deleted 17). The old keys' markers are given an hour, as
	// if Redis's clock had moved only with the store's.
	for i := range 20 {
		key := fmt.Sprintf("k-old-%d", i)
		if err := e.Gate.MarkClaimed(ctx, admission.ClaimMarker{Name: placement.MarkerName("u-clwf", key), Nonce: keyRow(t, e, "u-clwf", key).Nonce,
			TTL: time.Hour, New: true}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		want(t, e.place(fmt.Sprintf("k-live-%d", i), "u-clwf", line), placement.Reserved)
	}
	run, err := e.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "cleanup-" + testenv.RandomID(4), TaskQueue: workflows.TaskQueue},
		workflows.IdempotencyCleanupWorkflow, in)
	if err != nil {
		t.Fatal(err)
	}
	var sum workflows.IdempotencyCleanupResult
	if err := run.Get(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 20 || sum.Markers != 20 || sum.Batches != 3 {
		t.Errorf("run deleted %+v, want 20 rows and 20 markers in 3 batches of 7", sum)
	}
	if n := e.countRows("idempotency_keys", "user_id = ?", "u-clwf"); n != 3 {
		t.Errorf("%d rows left, want the 3 within the retention", n)
	}
	for i := range 20 {
		if m := e.marker(t, "u-clwf", fmt.Sprintf("k-old-%d", i)); m != "" {
			t.Errorf("marker of expired key %d left: %q", i, m)
		}
	}
	for i := range 3 {
		if m, rec := e.marker(t, "u-clwf", fmt.Sprintf("k-live-%d", i)), keyRow(t, e, "u-clwf", fmt.Sprintf("k-live-%d", i)); m != rec.Nonce {
			t.Errorf("marker of live key %d: %q, want %q", i, m, rec.Nonce)
		}
	}
}

// markerTTL returns how long the key's marker has left (0 when there is none).
func (e *env) markerTTL(t *testing.T, user, key string) time.Duration {
	t.Helper()
	d, err := e.Redis.Client().PTTL(context.Background(), e.Redis.ClaimKey(placement.MarkerName(user, key))).Result()
	if err != nil {
		t.Fatal(err)
	}
	return max(d, 0)
}

// shortenMarker sets what the key's marker has left to d, as if Redis's clock had moved on with the store's
// (the store's clock moves in jumps; Redis's does not).
func (e *env) shortenMarker(t *testing.T, user, key string, d time.Duration) {
	t.Helper()
	if ok, err := e.Redis.Client().PExpire(context.Background(), e.Redis.ClaimKey(placement.MarkerName(user, key)), d).Result(); err != nil || !ok {
		t.Fatalf("shorten the marker of %s: %v %v", key, ok, err)
	}
}

// cancel cancels an order and waits until the database records it closed (the workflow answers the cancel
// once compensated, and records the status after).
func (e *env) cancel(t *testing.T, orderID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if o, err := orderclient.Cancel(ctx, e.Client, orderID, "test"); err != nil || o.Status != ordersaga.StatusCancelled {
		t.Fatalf("cancel %s: %+v %v", orderID, o, err)
	}
	for {
		o, err := e.Store.Order(ctx, orderID)
		if err == nil && o.Status == ordersaga.StatusCancelled {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("order %s not recorded cancelled: %+v %v", orderID, o, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPlace_KeyLivesTheRetentionAfterItsLastAnswer: a key is remembered for the retention after its last
// answer, not after its first use: a retry just past first use + retention replays the order its last answer
// named, never a second order, and the key's marker lives as long as its row.
func TestPlace_KeyLivesTheRetentionAfterItsLastAnswer(t *testing.T) {
	t.Parallel()
	e, clk := retentionEnv(t)
	ctx := context.Background()
	waitReady(t, e)

	// The interleaving: the key's first use is rejected by the saga (Redis promised units the database
	// did not have), stock comes back, the key succeeds near the end of the retention counted from its first
	// use; the client loses the 201 and retries 300 ms later.
	for _, closed := range []bool{false, true} {
		name := map[bool]string{false: "rejected_first_then_reserved_near_the_end_replays_past_it",
			true: "the_201_alone_restarts_the_retention_of_a_closed_order"}[closed]
		t.Run(name, func(t *testing.T) {
			sku, user, key := fmt.Sprintf("LIFE-A-%v", closed), fmt.Sprintf("u-life-a-%v", closed), "k-life-a"
			if err := e.Store.SetInventory(ctx, sku, 0, 100); err != nil {
				t.Fatal(err)
			}
			if err := e.Redis.SetAvailable(ctx, sku, 5); err != nil {
				t.Fatal(err)
			}
			line := ordersaga.Line{SKU: sku, Qty: 1}
			if out := want(t, e.place(key, user, line), placement.SoldOut); out.FastPath {
				t.Fatalf("first use: %+v, want the saga's sold out", out)
			}
			e.Stock(t, sku, 10, 100)
			clk.Advance(testRetention - 200*time.Millisecond)
			o1 := want(t, e.place(key, user, line), placement.Reserved)
			if closed {
				// Closed: only the answer, not the open order, can keep the key.
				e.cancel(t, o1.OrderID)
			}
			clk.Advance(300 * time.Millisecond) // past first use + retention
			if r := e.place(key, user, line); r.Kind != placement.Replayed || r.OrderID != o1.OrderID {
				t.Errorf("retry past first use + retention: %s %s, want the replay of %s", r.Kind, r.OrderID, o1.OrderID)
			}
			if n := e.countRows("orders", "user_id = ? AND status <> ?", user, string(ordersaga.StatusRejected)); n != 1 {
				t.Errorf("%d orders besides the rejected one, want 1", n)
			}
		})
	}

	t.Run("a_replay_restarts_the_retention_and_the_markers_life", func(t *testing.T) {
		e.Stock(t, "LIFE-B", 10, 100)
		line := ordersaga.Line{SKU: "LIFE-B", Qty: 1}
		o1 := want(t, e.place("k-life-b", "u-life-b", line), placement.Reserved)
		e.cancel(t, o1.OrderID) // closed: only the answers keep the key
		clk.Advance(testRetention - 100*time.Millisecond)
		// The marker has a second left (it may outlive its row, which has 100 ms); after the replay the row
		// lives the retention again, and the marker at least as long.
		e.shortenMarker(t, "u-life-b", "k-life-b", time.Second)
		if r := want(t, e.place("k-life-b", "u-life-b", line), placement.Replayed); r.OrderID != o1.OrderID {
			t.Fatalf("replay near the end: %s, want %s", r.OrderID, o1.OrderID)
		}
		if ttl := e.markerTTL(t, "u-life-b", "k-life-b"); ttl < testRetention {
			t.Errorf("marker left %s after the replay, want at least the retention %s (the row's new life)", ttl, testRetention)
		}
		clk.Advance(300 * time.Millisecond) // past the first answer + retention
		if r := e.place("k-life-b", "u-life-b", line); r.Kind != placement.Replayed || r.OrderID != o1.OrderID {
			t.Errorf("retry past the first answer + retention: %s %s, want the replay of %s", r.Kind, r.OrderID, o1.OrderID)
		}
		if n := e.countRows("orders", "user_id = ?", "u-life-b"); n != 1 {
			t.Errorf("%d orders, want 1", n)
		}
		// Past the retention after the last answer, the key is a new request.
		clk.Advance(testRetention + time.Second)
		if r := want(t, e.place("k-life-b", "u-life-b", line), placement.Reserved); r.OrderID == o1.OrderID {
			t.Errorf("past the retention after the last answer: order %s again, want a new one", r.OrderID)
		}
	})

	t.Run("the_backfill_makes_a_marker_live_as_long_as_its_row", func(t *testing.T) {
		e.Stock(t, "LIFE-C", 10, 100)
		line := ordersaga.Line{SKU: "LIFE-C", Qty: 1}
		want(t, e.place("k-life-c", "u-life-c", line), placement.Reserved)
		// A marker shorter than its row (a use whose marking failed: the fence is up until every live key is
		// marked again, which is a backfill).
		e.shortenMarker(t, "u-life-c", "k-life-c", time.Second)
		e.refill(t)
		if ttl := e.markerTTL(t, "u-life-c", "k-life-c"); ttl < testRetention {
			t.Errorf("marker left %s after the backfill, want at least the row's %s", ttl, testRetention)
		}
	})
}

// refill makes the service backfill the markers (as after a Redis that lost them) and waits for it.
func (e *env) refill(t *testing.T) {
	t.Helper()
	if err := e.Redis.Client().Del(context.Background(), e.Redis.ClaimsReadyKey()).Err(); err != nil {
		t.Fatal(err)
	}
	e.svc.Backfill()
	waitReady(t, e)
}

// TestPlace_KeyOfAnOpenOrderNeverExpires: a key whose order still awaits payment past the retention is not
// renewed (a retry gets the same order) and the cleanup deletes neither its row nor its marker; a key of the
// same age whose order is closed is deleted.
func TestPlace_KeyOfAnOpenOrderNeverExpires(t *testing.T) {
	t.Parallel()
	e, clk := retentionEnv(t)
	ctx := context.Background()
	waitReady(t, e)
	e.Stock(t, "OPEN-1", 10, 100)
	line := ordersaga.Line{SKU: "OPEN-1", Qty: 1}
	open := want(t, e.place("k-open", "u-open", line), placement.Reserved)
	closed := want(t, e.place("k-closed", "u-open", line), placement.Reserved)
	e.cancel(t, closed.OrderID)
	clk.Advance(2 * testRetention)

	cleaner := retention.Cleaner{Store: e.Store, Redis: e.Redis}
	b, err := cleaner.Batch(ctx, testRetention, 100)
	if err != nil {
		t.Fatal(err)
	}
	if b.Rows != 1 || b.Markers != 1 {
		t.Errorf("cleanup deleted %d rows and %d markers, want the closed order's key only", b.Rows, b.Markers)
	}
	if id := e.KeyOrderID(t, "u-open", "k-closed"); id != "" {
		t.Errorf("the closed order's key is still there (order %s)", id)
	}
	rec, err := e.Store.IdempotencyKey(ctx, "u-open", "k-open")
	if err != nil || rec.OrderID != open.OrderID {
		t.Fatalf("the open order's key after the cleanup: %+v %v, want its row", rec, err)
	}
	if m := e.marker(t, "u-open", "k-open"); m != rec.Nonce {
		t.Errorf("the open order's marker after the cleanup: %q, want %q", m, rec.Nonce)
	}

	// Past its life, the key lives on while its order is open: the backfill marks it for a life.
	e.shortenMarker(t, "u-open", "k-open", time.Second)
	e.refill(t)
	if ttl := e.markerTTL(t, "u-open", "k-open"); ttl < testRetention {
		t.Errorf("marker left %s after the backfill, want at least the retention %s", ttl, testRetention)
	}

	e.shortenMarker(t, "u-open", "k-open", time.Second)
	if r := e.place("k-open", "u-open", line); r.Kind != placement.Replayed || r.OrderID != open.OrderID {
		t.Errorf("retry past the retention while the order awaits payment: %s %s, want the replay of %s", r.Kind, r.OrderID, open.OrderID)
	}
	if ttl := e.markerTTL(t, "u-open", "k-open"); ttl < testRetention {
		t.Errorf("marker left %s after the retry, want at least the retention %s", ttl, testRetention)
	}
	if n := e.countRows("orders", "user_id = ? AND status = ?", "u-open", string(ordersaga.StatusAwaitingPayment)); n != 1 {
		t.Errorf("%d orders awaiting payment, want 1", n)
	}
}
