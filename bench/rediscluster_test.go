package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/redislab"
)

// TestRunRefusesBothClusterFlags: a cluster to start and one to use are two answers to one question; the error
// names both flags.
func TestRunRefusesBothClusterFlags(t *testing.T) {
	t.Parallel()
	err := run(t.Context(), []string{"bench", "-only", "redis", "-redis-cluster", "-redis-cluster-addrs", "127.0.0.1:1"},
		func(string) string { return "" }, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "-redis-cluster ") || !strings.Contains(err.Error(), "-redis-cluster-addrs") {
		t.Fatalf("run = %v, want an error naming -redis-cluster and -redis-cluster-addrs", err)
	}
}

// TestClusterConfigIsTheClusterForm: bench opens the cluster as a process configured with REDIS_CLUSTER_ADDRS
// would, and not the server of -redis.
func TestClusterConfigIsTheClusterForm(t *testing.T) {
	t.Parallel()
	o := opts{redisAddr: "127.0.0.1:6379"}
	cfg := o.clusterConfig([]string{"127.0.0.1:7000", "127.0.0.1:7001"}, 64)
	if form, _ := cfg.RedisForm(); form != config.RedisCluster {
		t.Errorf("RedisForm = %v, want the cluster form", form)
	}
	if !slices.Equal(cfg.RedisClusterAddrs, []string{"127.0.0.1:7000", "127.0.0.1:7001"}) || cfg.RedisPoolSize != 64 {
		t.Errorf("config = %+v, want the seeds and a pool of 64", cfg)
	}
}

// TestOnACluster starts a cluster of 3 masters and 3 replicas (as -redis-cluster does) for the subtests.
func TestOnACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := redislab.Start(ctx, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()

	// The cluster pairs run each operation on the cluster and on one Redis without an error.
	t.Run("the cluster pairs measure both sides", func(t *testing.T) {
		o := opts{dur: 200 * time.Millisecond, rounds: 1, conc: 4, redisAddr: orDefault(os.Getenv("REDIS_ADDR"), "127.0.0.1:6379"),
			clusterAddrs: strings.Join(c.Addrs(), ",")}
		pairs, err := benchRedisCluster(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(pairs) != 5 {
			t.Fatalf("%d pairs, want 5 (sold-out check, sold-out reserve, in-stock reserve, hot SKU in 8 shards ÷ 1, reserve then WAIT 1)", len(pairs))
		}
		for _, p := range pairs {
			for _, r := range []result{p.Real, p.Limit} {
				// A WAIT a loaded replica does not answer in time is a figure of pair 2e, not a failure.
				if r.Errors > 0 && strings.HasPrefix(p.Layer, "2e") && errors.Is(r.FirstErr, errNotAcked) {
					r.Errors = 0
				}
				if r.Ops == 0 || r.Errors > 0 {
					t.Errorf("%s: %s: %d ops, %d errors, first: %v", p.Layer, r.Name, r.Ops, r.Errors, r.FirstErr)
				}
			}
			if p.Target != 0 {
				t.Errorf("%s: target %v, want none (the issue sets none for the cluster's ratio)", p.Layer, p.Target)
			}
		}
		// The shard pair says where the 8 shards are: spread over the 3 masters.
		hot := pairs[3]
		if !strings.HasPrefix(hot.Layer, "2g") || !hot.InMarkdown || !strings.Contains(hot.Comment, "the 8 shards on 3 masters") {
			t.Errorf("the shard pair: %q (in the Markdown table: %v): %s", hot.Layer, hot.InMarkdown, hot.Comment)
		}
	})
}
