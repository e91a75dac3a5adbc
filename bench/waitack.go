package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/redis/go-redis/v9"
)

// waitAckTimeout is the bound of the measured WAIT: a replica that has not acknowledged the reserve within it
// would leave the reserve as exposed to a failover as without the WAIT.
const waitAckTimeout = 100 * time.Millisecond

// errNotAcked is a WAIT of pair 2e that returned before a replica acknowledged the reserve: counted as an
// error of the measured side (a loaded replica is slow to acknowledge), not as a fast answer.
var errNotAcked = errors.New("no replica acknowledged the reserve")

// benchWaitAck is pair 2e: the Lua reserve followed by WAIT 1 <waitAckTimeout> (the reserve is on a replica
// before the caller goes on, so that a failover of the SKU's master cannot lose it), against the reserve alone,
// both on the master of the in-stock SKU's slot. WAIT counts the writes of the connection that sent it, so each
// goroutine has a client of one connection to that master, the same on both sides; a WAIT that returns before
// a replica acknowledged is an error of the measured side, not a fast answer.
func benchWaitAck(ctx context.Context, o opts, cluster *redis.ClusterClient, prefix, where string) (pair, error) {
	rs := redisstock.New(cluster, prefix, time.Hour)
	master, err := cluster.MasterForKey(ctx, rs.AvailKey(clusterStocked))
	if err != nil {
		return pair{}, fmt.Errorf("the master of %s: %w", clusterStocked, err)
	}
	addr := master.Options().Addr
	clients := make([]*redis.Client, o.conc)
	stores := make([]*redisstock.Store, o.conc)
	for w := range clients {
		clients[w] = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
		defer clients[w].Close()
		stores[w] = redisstock.New(clients[w], prefix, time.Hour)
	}
	reserve := func(ctx context.Context, w int, seq int64) error {
		_, err := stores[w].Reserve(ctx, "o-"+strconv.FormatInt(seq, 10), "", clusterStocked, 1)
		return err
	}
	acked := func(ctx context.Context, w int, seq int64) error {
		if err := reserve(ctx, w, seq); err != nil {
			return err
		}
		n, err := clients[w].Wait(ctx, 1, waitAckTimeout).Result()
		if err == nil && n < 1 {
			err = fmt.Errorf("WAIT 1 %d on %s: %w", waitAckTimeout.Milliseconds(), addr, errNotAcked)
		}
		return err
	}
	_ = reserve(ctx, 0, -1) // the script loaded on that master before either side counts
	real, limit := measurePair(ctx, o, o.conc, "", "reserve, then WAIT 1 "+strconv.FormatInt(waitAckTimeout.Milliseconds(), 10), acked,
		"reserve alone", reserve)
	return pair{Layer: "2e Lua reserve then WAIT 1, ÷ the reserve alone, cluster", Real: real, Limit: limit, Only: "redis -redis-cluster",
		Comment: fmt.Sprintf("%s, master %s, %d goroutines of one connection each (WAIT counts its connection's writes), in-stock SKU", where, addr, o.conc)}, nil
}
