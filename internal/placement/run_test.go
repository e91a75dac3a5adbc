package placement_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// countHook counts the Redis calls of a client.
type countHook struct{ calls atomic.Int32 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.calls.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.calls.Add(1)
		return next(ctx, cmds)
	}
}

// Once Run has returned no background work starts: a Backfill asked for after it (by the process, or by a
// placement that finds the markers not ready) does nothing, where a service still running backfills the
// same fresh Redis. That Run stops a backfill in progress is internal/api's TestServerRun_StopsTheBackfill.
func TestRun_NoBackfillStartsAfterIt(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.RedisClient(t)
	hook := &countHook{}
	rdb.AddHook(hook)
	cfg := placement.Config{Store: testenv.MustOpenStore(t), Stock: admission.New(redisstock.New(rdb, prefix, 0)), KeepAs: keepAs}

	stopped := placement.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := stopped.Run(ctx); err != nil {
		t.Fatalf("Run = %v", err)
	}
	stopped.Backfill()
	time.Sleep(200 * time.Millisecond)
	if n := hook.calls.Load(); n != 0 {
		t.Fatalf("a backfill started after Run returned (%d Redis calls)", n)
	}

	running := placement.New(cfg)
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- running.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	running.Backfill()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ready, err := cfg.Stock.ClaimsReady(context.Background()); err == nil && ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a running service did not backfill the markers of a fresh Redis within 30 s")
		}
	}
}
