package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/config"
	"github.com/ordersaga/ordersaga/internal/platform"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/redis/go-redis/v9"
)

// benchRedis is layer 2: the Lua reserve against a trivial EVALSHA with the same keys and arguments, on
// the same Redis and client, on a sold-out SKU and on a well-stocked one; with a cluster (-redis-cluster,
// -redis-cluster-addrs), also the cluster pairs (benchRedisCluster).
func benchRedis(ctx context.Context, o opts) ([]pair, error) {
	rdb, err := platform.OpenRedis(ctx, o.redisConfig(max(o.conc*2, 128)), nil)
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	prefix := "bench" + randomID() + ":"
	defer deleteKeys(context.WithoutCancel(ctx), rdb, prefix)
	rs := redisstock.New(rdb, prefix, time.Hour)
	trivial := redis.NewScript("return 1")
	const soldOut, stocked = "BENCH-SOLDOUT", "BENCH-STOCKED"
	if err := rs.SetAvailable(ctx, soldOut, 0); err != nil {
		return nil, err
	}
	if err := rs.SetAvailable(ctx, stocked, 1<<40); err != nil {
		return nil, err
	}
	trivialOp := func(sku string) op {
		return func(ctx context.Context, w int, seq int64) error {
			id := "o-" + strconv.FormatInt(seq, 10)
			return trivial.Run(ctx, rdb, []string{rs.AvailKey(sku), rs.HoldsKey(sku), rs.MarkerKey(sku, id), rs.VersionKey(sku)}, id, 1, 3600).Err()
		}
	}
	reserveOp := func(sku string, wantSoldOut bool) op {
		return func(ctx context.Context, w int, seq int64) error {
			_, err := rs.Reserve(ctx, "o-"+strconv.FormatInt(seq, 10), "", sku, 1)
			if _, ok := ordersaga.IsSoldOut(err); ok && wantSoldOut {
				return nil
			}
			return err
		}
	}
	// Load both scripts before measuring, so no side pays the first EVAL.
	_ = trivialOp(soldOut)(ctx, 0, -1)
	_ = reserveOp(soldOut, true)(ctx, 0, -1)

	// The candidate: the reserve script as it is but for the version bump reconciliation's compare-and-set reads.
	noVersion := redis.NewScript(noVersionReserveLua)
	noVersionOp := func(ctx context.Context, w int, seq int64) error {
		id := "o-" + strconv.FormatInt(seq, 10)
		code, err := noVersion.Run(ctx, rdb, []string{rs.AvailKey(stocked), rs.HoldsKey(stocked), rs.MarkerKey(stocked, id), rs.VersionKey(stocked)}, id, 1, 3600).Int64()
		if err == nil && code != 1 {
			err = fmt.Errorf("reserve without version bump: code %d", code)
		}
		return err
	}
	var out []pair
	for _, c := range []struct {
		layer, sku string
		soldOut    bool
	}{{"2a Lua reserve, sold-out SKU", soldOut, true}, {"2b Lua reserve, in-stock SKU", stocked, false}} {
		real, limit := measurePair(ctx, o, o.conc, "", "redisstock.Store.Reserve", reserveOp(c.sku, c.soldOut), "EVALSHA `return 1`", trivialOp(c.sku))
		out = append(out, pair{Layer: c.layer, Real: real, Limit: limit, Target: 0.8,
			Comment: fmt.Sprintf("real Redis %s, %d goroutines, distinct order per call", o.redisAddr, o.conc)})
	}
	cand, limit := measurePair(ctx, o, o.conc, "", "reserve.lua without the version INCR", noVersionOp, "EVALSHA `return 1`", trivialOp(stocked))
	out = append(out, pair{Layer: "2b … candidate: no version bump", Real: cand, Limit: limit,
		Comment: "candidate, not in the code: the in-stock reserve without the INCR of inv:{SKU}:ver (reconciliation's compare-and-set)"})
	hot, err := benchShards(ctx, o, rdb, prefix, "2f Lua reserve, hot SKU, 8 shards ÷ 1 shard, one Redis", "redis",
		"real Redis "+o.redisAddr)
	out = append(out, hot)
	if err != nil || !o.wantsCluster() {
		return out, err
	}
	more, err := benchRedisCluster(ctx, o)
	return append(out, more...), err
}

// noVersionReserveLua is internal/redisstock/lua/reserve.lua without its last write, the version bump.
const noVersionReserveLua = `
local marker = redis.call('GET', KEYS[3])
if marker then
  local state = string.sub(marker, 1, 1)
  if state == 'H' or state == 'C' then
    return 2
  end
  return 5
end
local avail = redis.call('GET', KEYS[1])
if not avail then
  return 4
end
local qty = tonumber(ARGV[2])
if tonumber(avail) < qty then
  return 3
end
redis.call('DECRBY', KEYS[1], qty)
redis.call('HSET', KEYS[2], ARGV[1], qty)
redis.call('SET', KEYS[3], 'H:' .. qty, 'EX', tonumber(ARGV[3]))
return 1
`

// redisConfig is the configuration the benchmark opens Redis with (platform.OpenRedis, as every process
// does): the server of -redis and a pool of pool connections.
func (o opts) redisConfig(pool int) config.Config {
	return config.Config{RedisAddr: o.redisAddr, RedisPoolSize: pool}
}

// deleteKeys deletes the keys under prefix: on the one server, or on every master of a cluster.
func deleteKeys(ctx context.Context, rdb redis.UniversalClient, prefix string) {
	_, _ = redisstock.DeleteMatching(ctx, rdb, redisstock.GlobEscape(prefix)+"*")
}
