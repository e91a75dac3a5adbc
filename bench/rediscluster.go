package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redislab"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/redis/go-redis/v9"
)

// The cluster pairs (-redis-cluster, -redis-cluster-addrs): the Redis operations of a sold-out answer and of a
// reserve, each on a Redis Cluster against the same on the one Redis of -redis, in the same run, so that the
// ratio says what the cluster costs and the machine's load falls on both sides alike. On one machine the
// cluster cannot be faster (its masters share the cores); the figure is the price of its routing: a fast
// path's pipeline split by node, a reserve sent to its SKU's master.

// clusterMasters and clusterReplicas are the shape of the cluster -redis-cluster starts: 3 masters, each with
// a replica, as the tests' cluster and the issue's.
const (
	clusterMasters  = 3
	clusterReplicas = 1
)

// wantsCluster reports whether the run measures the cluster pairs.
func (o opts) wantsCluster() bool { return o.startCluster || o.clusterAddrs != "" }

// clusterConfig is the configuration the benchmark opens the cluster with (platform.OpenRedis, as a process
// with REDIS_CLUSTER_ADDRS does): the seeds and a pool of pool connections per node.
func (o opts) clusterConfig(seeds []string, pool int) config.Config {
	return config.Config{RedisClusterAddrs: seeds, RedisPoolSize: pool}
}

// openCluster is the cluster of the run: the seeds of -redis-cluster-addrs, or a cluster it starts (stop ends
// it; its servers also die with the process).
func (o opts) openCluster(ctx context.Context) (seeds []string, where string, stop func(), err error) {
	if o.clusterAddrs != "" {
		c := redislab.Existing(strings.Split(o.clusterAddrs, ","))
		return c.Addrs(), "the cluster at " + strings.Join(c.Addrs(), ","), func() {}, nil
	}
	began := time.Now()
	c, err := redislab.Start(ctx, clusterMasters, clusterReplicas)
	if err != nil {
		return nil, "", nil, err
	}
	where = fmt.Sprintf("a cluster of %d masters with %d replica each started by bench (redislab, 127.0.0.1, ready in %s)",
		clusterMasters, clusterReplicas, time.Since(began).Round(100*time.Millisecond))
	return c.Addrs(), where, c.Stop, nil
}

// redisSide is one Redis of the cluster pairs, loaded for them: a sold-out SKU, an in-stock one, and the
// idempotency markers said complete (so that the sold-out check answers as the fast path's would).
type redisSide struct {
	rs   *redisstock.Store
	gate *admission.Gate
}

const (
	clusterSoldOut = "BENCH-SOLDOUT"
	clusterStocked = "BENCH-STOCKED"
)

func newRedisSide(ctx context.Context, rdb redis.UniversalClient, prefix string) (redisSide, error) {
	rs := redisstock.New(rdb, prefix, time.Hour)
	s := redisSide{rs: rs, gate: admission.New(rs)}
	if err := rs.SetAvailable(ctx, clusterSoldOut, 0); err != nil {
		return s, err
	}
	if err := rs.SetAvailable(ctx, clusterStocked, 1<<40); err != nil {
		return s, err
	}
	token, err := s.gate.BeginClaimsBackfill(ctx)
	if err != nil {
		return s, err
	}
	if ok, err := s.gate.FinishClaimsBackfill(ctx, token); err != nil || !ok {
		return s, fmt.Errorf("idempotency markers not ready (finished %v): %w", ok, err)
	}
	return s, nil
}

// checkOp is the sold-out fast path's Redis round trip (admission.Gate.CheckOrder, as internal/api calls it
// before anything else): a new Idempotency-Key per call, one line of the sold-out SKU, answered "refuse".
func (s redisSide) checkOp() op {
	return func(ctx context.Context, w int, seq int64) error {
		user := "u" + strconv.Itoa(w)
		res, err := s.gate.CheckOrder(ctx, admission.ClaimName(user, "k"+strconv.FormatInt(seq, 10)), user,
			[]ordersaga.Line{{SKU: clusterSoldOut, Qty: 1}})
		if err == nil && (!res.Refuse() || res.SoldOutSKU != clusterSoldOut) {
			err = fmt.Errorf("sold-out check: %+v, want sold out on %s", res, clusterSoldOut)
		}
		return err
	}
}

// reserveOp is the Lua reserve (redisstock.Store.Reserve) of one unit of sku under a new order ID.
func (s redisSide) reserveOp(sku string, wantSoldOut bool) op {
	return func(ctx context.Context, w int, seq int64) error {
		_, err := s.rs.Reserve(ctx, "o-"+strconv.FormatInt(seq, 10), "", sku, 1)
		if _, ok := ordersaga.IsSoldOut(err); ok && wantSoldOut {
			return nil
		}
		return err
	}
}

// benchRedisCluster measures the cluster pairs: the sold-out check and the Lua reserve (sold-out and in-stock
// SKU) on the cluster against the same on the one Redis of -redis. The pairs have no target: the issue asks
// for the ratio, not a bound on it.
func benchRedisCluster(ctx context.Context, o opts) ([]pair, error) {
	seeds, where, stop, err := o.openCluster(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	pool := max(o.conc*2, 128)
	one, err := platform.OpenRedis(ctx, o.redisConfig(pool), nil)
	if err != nil {
		return nil, err
	}
	defer one.Close()
	cluster, err := platform.OpenRedis(ctx, o.clusterConfig(seeds, pool), nil)
	if err != nil {
		return nil, err
	}
	defer cluster.Close()
	prefix := "bench" + randomID() + ":"
	defer deleteKeys(context.WithoutCancel(ctx), one, prefix)
	defer deleteKeys(context.WithoutCancel(ctx), cluster, prefix)
	oneSide, err := newRedisSide(ctx, one, prefix)
	if err != nil {
		return nil, fmt.Errorf("one redis: %w", err)
	}
	clusterSide, err := newRedisSide(ctx, cluster, prefix)
	if err != nil {
		return nil, fmt.Errorf("redis cluster: %w", err)
	}
	cases := []struct {
		layer, what string
		op          func(redisSide) op
	}{
		{"1c sold-out check, cluster ÷ one Redis", "admission.Gate.CheckOrder",
			func(s redisSide) op { return s.checkOp() }},
		{"2c Lua reserve, sold-out SKU, cluster ÷ one Redis", "redisstock.Store.Reserve",
			func(s redisSide) op { return s.reserveOp(clusterSoldOut, true) }},
		{"2d Lua reserve, in-stock SKU, cluster ÷ one Redis", "redisstock.Store.Reserve",
			func(s redisSide) op { return s.reserveOp(clusterStocked, false) }},
	}
	var out []pair
	for _, c := range cases {
		// One call on each side first, so that no side pays a script's first EVAL in its count.
		_ = c.op(oneSide)(ctx, 0, -1)
		_ = c.op(clusterSide)(ctx, 0, -1)
		real, limit := measurePair(ctx, o, o.conc, "", c.what+" on the cluster", c.op(clusterSide), c.what+" on one Redis", c.op(oneSide))
		out = append(out, pair{Layer: c.layer, Real: real, Limit: limit, Only: "redis -redis-cluster",
			Comment: fmt.Sprintf("%s against the one Redis at %s, %d goroutines, distinct order or key per call", where, o.redisAddr, o.conc)})
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	hot, err := benchShards(ctx, o, cluster, prefix, "2g Lua reserve, hot SKU, 8 shards ÷ 1 shard, cluster", "redis -redis-cluster", where)
	if err != nil {
		return out, fmt.Errorf("shards on the cluster: %w", err)
	}
	out = append(out, hot)
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	cc, ok := cluster.(*redis.ClusterClient)
	if !ok {
		return out, fmt.Errorf("redis cluster: the client is a %T, not a cluster client", cluster)
	}
	wait, err := benchWaitAck(ctx, o, cc, prefix, where)
	return append(out, wait), err
}
