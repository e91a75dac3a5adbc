package api_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// stallHook holds every Redis call until its context ends while armed, and says when the first one came.
type stallHook struct {
	entered chan struct{}
	armed   *atomic.Bool
}

func (h stallHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h stallHook) stall(ctx context.Context) error {
	if !h.armed.Load() {
		return nil
	}
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

func (h stallHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.stall(ctx); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (h stallHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.stall(ctx); err != nil {
			return err
		}
		return next(ctx, cmds)
	}
}

// The backfill of the idempotency markers that NewServer starts belongs to the server: Run stops it when its
// context ends and returns once it has stopped. Here Redis holds the backfill's first call for as long as its
// context lives; before Server.Run the backfill ran under a context of its own for up to 10 minutes and
// nothing could stop it.
func TestServerRun_StopsTheBackfill(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.RedisClient(t)
	hook := stallHook{entered: make(chan struct{}, 1), armed: new(atomic.Bool)}
	hook.armed.Store(true)
	rdb.AddHook(hook)
	t.Cleanup(func() { hook.armed.Store(false) }) // before the key prefix's cleanup, which uses the client
	h := api.NewServer(api.Deps{Store: testenv.MustOpenStore(t), Redis: redisstock.New(rdb, prefix, 0)})
	select {
	case <-hook.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the server started no backfill of the markers (a fresh Redis has none)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return 10 s after its context ended: the backfill was not stopped")
	}
}
