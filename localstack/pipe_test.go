package main

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A pipeline bigger than any buffer in between: the server answers the first commands while the client is
// still writing the last ones. Over a synchronous pipe both would wait for the other for ever.
func TestEmbeddedRedisDialCarriesBigPipelines(t *testing.T) {
	r, _, err := startEmbeddedRedis("127.0.0.1:0", "", slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr(), Dialer: r.dial})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 20000
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			p.Set(ctx, "k"+strconv.Itoa(i), i, 0)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("pipeline of %d SETs: %v", n, err)
	}
	if len(cmds) != n {
		t.Fatalf("%d answers, want %d", len(cmds), n)
	}
	if v, err := rdb.Get(ctx, "k"+strconv.Itoa(n-1)).Int(); err != nil || v != n-1 {
		t.Fatalf("GET k%d: %d, %v", n-1, v, err)
	}
}
