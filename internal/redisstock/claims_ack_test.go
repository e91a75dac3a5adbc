package redisstock_test

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestClaimMarkers_AckedByTheReplica: under AckMarkers(1) a marker write returns only once the replica holds
// the marker (it is there the moment ClaimMarkers returns, a new life's and a backfilled one alike), and when
// the replica takes none of the master's writes it fails with ErrMarkersNotReplicated within about
// MarkerAckTimeout, the marker written on the master all the same.
func TestClaimMarkers_AckedByTheReplica(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	master := testenv.StartRedisServer(t)
	host, port, _ := net.SplitHostPort(master.Addr)
	replica := testenv.StartRedisServer(t, "--replicaof", host, port)
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if n, err := mc.Do(ctx, "WAIT", 1, 0).Int64(); err == nil && n == 1 {
			break // the replica is connected and synced
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync within 30 s")
		}
	}
	rs := redisstock.New(mc, "", 0).AckMarkers(1)
	markers := []redisstock.ClaimMarker{
		{Name: "k-new", Nonce: "n1", TTL: time.Hour, New: true},
		{Name: "k-backfilled", Nonce: "n2", TTL: time.Hour},
	}
	// On a loaded machine the replica can take longer than MarkerAckTimeout to acknowledge; the write then
	// fails as it should (the caller raises the fence), and is made again, as a retry of the order would. What
	// is checked is that a write that returned nil is on the replica.
	for attempt := 1; ; attempt++ {
		err := rs.ClaimMarkers(ctx, markers...)
		if err == nil {
			break
		}
		if !errors.Is(err, redisstock.ErrMarkersNotReplicated) || attempt == 20 {
			t.Fatalf("ClaimMarkers, attempt %d: %v", attempt, err)
		}
		t.Logf("ClaimMarkers, attempt %d: %v (made again)", attempt, err)
	}
	for _, m := range markers {
		if v, err := rc.Get(ctx, rs.ClaimKey(m.Name)).Result(); err != nil || v != m.Nonce {
			t.Errorf("the replica's %s just after ClaimMarkers: %q, %v; want %q", m.Name, v, err, m.Nonce)
		}
	}

	// The replica cut off.
	defer replica.Resume()
	if err := redislab.CutOffReplica(ctx, master.Addr, replica.Pause); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := rs.ClaimMarkers(ctx, redisstock.ClaimMarker{Name: "k-lost", Nonce: "n3", TTL: time.Hour, New: true})
	took := time.Since(start)
	if !errors.Is(err, redisstock.ErrMarkersNotReplicated) {
		t.Fatalf("ClaimMarkers with the replica cut off: %v, want ErrMarkersNotReplicated", err)
	}
	if took < redisstock.MarkerAckTimeout || took > 10*redisstock.MarkerAckTimeout {
		t.Errorf("ClaimMarkers took %s to give up, want about %s", took, redisstock.MarkerAckTimeout)
	}
	if v, err := mc.Get(ctx, rs.ClaimKey("k-lost")).Result(); err != nil || v != "n3" {
		t.Errorf("the master's k-lost: %q, %v; want n3 (written, only not acknowledged)", v, err)
	}
	// Without AckMarkers nothing waits: the same write succeeds on the master alone.
	if err := redisstock.New(mc, "", 0).ClaimMarkers(ctx, redisstock.ClaimMarker{Name: "k-unacked", Nonce: "n4", TTL: time.Hour, New: true}); err != nil {
		t.Errorf("ClaimMarkers without AckMarkers: %v", err)
	}
}
