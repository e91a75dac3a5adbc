package placement_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sagatest"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestPlace_FailoverThatLosesTheMarkerNeverAnswersTheKeySoldOut: Redis replicates asynchronously, so a
// failover can lose a master's last writes, the key's idempotency marker among them, while the markers stay
// "ready" (that flag was replicated long before). An order placed just before such a failover, on a SKU that
// has nothing left once the counter is back in line with the database, must still be its key's answer:
// a retry of the key is answered with the order, never 409 sold-out from the fast path.
//
// The ordering, on a master, its replica and three sentinels of the test's own: the replica cut off from the
// master's writes (redislab.CutOffReplica), the order placed, the master SIGKILLed, the replica resumed and promoted: the
// marker is gone (checked: otherwise the test would prove nothing), and the retry comes.
func TestPlace_FailoverThatLosesTheMarkerNeverAnswersTheKeySoldOut(t *testing.T) {
	t.Parallel()
	if testenv.ClusterMode() || testenv.SentinelMode() {
		t.Skip("runs on a Sentinel setup of its own")
	}
	ctx := context.Background()
	sent := testenv.StartSentinel(t)
	rdb := sent.Client()
	t.Cleanup(func() { rdb.Close() })
	rs := redisstock.New(rdb, "", 0).AckMarkers(1)
	e := serviceOn(t, sagatest.StartOn(t, testenv.MustOpenStore(t), rs))
	line := ordersaga.Line{SKU: "FO-1", Qty: 1}
	e.Stock(t, line.SKU, 1, 100)
	waitReady(t, e)
	waitReplicated(t, sent.ReplicaAddr(), rs.AvailKey(line.SKU), rs.ClaimsReadyKey())

	old := sent.MasterAddr()
	if err := redislab.CutOffReplica(ctx, old, sent.Replica().Pause); err != nil {
		t.Fatal(err)
	}
	first := want(t, e.place("k-fo", "u-fo", line), placement.Reserved)
	if err := sent.KillMaster(); err != nil {
		t.Fatal(err)
	}
	if err := sent.Replica().Resume(); err != nil {
		t.Fatal(err)
	}
	if _, err := sent.WaitFailover(ctx, old); err != nil {
		t.Fatal(err)
	}
	if m := e.marker(t, "u-fo", "k-fo"); m != "" {
		t.Fatalf("the key's marker %q survived the failover: the replica had it, and this ordering tests nothing", m)
	}
	// The counter back in line with the database (one unit, sold), as reconciliation brings it after the
	// failover: the SKU is sold out.
	if err := rs.SetAvailable(ctx, line.SKU, 0); err != nil {
		t.Fatal(err)
	}
	again := e.place("k-fo", "u-fo", line)
	if again.Kind != placement.Replayed || again.OrderID != first.OrderID || !bytes.Equal(again.Answer.Body, first.Answer.Body) {
		t.Fatalf("the key's retry after the failover: %s %+v, want the order %s replayed", again.Kind, again, first.OrderID)
	}
}

// waitReplicated waits until the replica at addr has every key.
func waitReplicated(t *testing.T, addr string, keys ...string) {
	t.Helper()
	replica := redis.NewClient(&redis.Options{Addr: addr})
	defer replica.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := replica.Exists(context.Background(), keys...).Result()
		if err == nil && n == int64(len(keys)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica %s lacks some of %v after 30 s (%d there, %v)", addr, keys, n, errors.Join(err))
		}
	}
}
