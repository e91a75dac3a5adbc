package placement_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// stallHook holds every Redis call until its context ends while armed, and counts the calls.
type stallHook struct {
	entered chan struct{}
	calls   atomic.Int32
	armed   atomic.Bool
}

func (h *stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stallHook) stall(ctx context.Context) error {
	if !h.armed.Load() {
		return nil
	}
	h.calls.Add(1)
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

func (h *stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.stall(ctx); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.stall(ctx); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}

// The markers' backfill belongs to the service: Run stops one in progress when its context ends, returns once
// it has stopped, and none starts after. Redis holds every call of the backfill for as long as its context
// lives.
func TestRun_StopsTheBackfillAndStartsNoMore(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.RedisClient(t)
	hook := &stallHook{entered: make(chan struct{}, 1)}
	hook.armed.Store(true)
	rdb.AddHook(hook)
	t.Cleanup(func() { hook.armed.Store(false) }) // before the key prefix's cleanup, which uses the client
	svc := placement.New(placement.Config{
		Store: testenv.MustOpenStore(t), Stock: activities.NewRedisStock(rdb, prefix, 0),
		KeepAs: keepAs,
	})
	svc.Backfill()
	select {
	case <-hook.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("Backfill started no backfill of the markers (a fresh Redis has none)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return 10 s after its context ended: the backfill was not stopped")
	}
	calls := hook.calls.Load()
	svc.Backfill()
	time.Sleep(200 * time.Millisecond)
	if got := hook.calls.Load(); got != calls {
		t.Errorf("a backfill started after Run returned (%d Redis calls since)", got-calls)
	}
}
