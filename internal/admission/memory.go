package admission

import (
	"context"
	"errors"
	"sync"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/redis/go-redis/v9"
)

// skuMemory is what the last round trip read of each SKU loaded in Redis: its units left and its per-user
// limit. A sold-out check of a line needs the user's units of its SKU (HVALS of the user's count) only when
// the line is not sold out and the SKU has a limit; a flood's lines are sold out, or of a SKU without a
// limit, and the trip leaves out their HVALS on what the trip before read. The memory only saves commands:
// an answer that needs units its trip did not read is not given from that trip (errHeldNotRead).
type skuMemory struct {
	mu   sync.Mutex
	skus map[string]skuSeen // only SKUs Redis has a counter of: no larger than the catalog
}

type skuSeen struct {
	avail, limit int64
	shards       int // the SKU's shard count (1: not split), whose counters the next trip reads
}

// shardReads are a trip's reads of one SKU's units left: its shard count and the counter of each shard the
// trip knew of (shard 0, the SKU's own, first).
type shardReads struct {
	shards *redis.StringCmd
	avail  []*redis.StringCmd
}

// readShards queues the reads of a SKU's units left: as many shards' counters as the last trip saw. Called
// with mu held.
func (m *skuMemory) readShards(ctx context.Context, p redis.Pipeliner, rs *redisstock.Store, sku string) *shardReads {
	n := max(m.skus[sku].shards, 1)
	sr := &shardReads{shards: p.Get(ctx, rs.ShardsKey(sku)), avail: make([]*redis.StringCmd, n)}
	for i := range n {
		sr.avail[i] = p.Get(ctx, rs.AvailKey(redisstock.ShardName(sku, i)))
	}
	return sr
}

// errShardsNotRead is a read of a SKU whose shard count is not the one its counters were read for.
var errShardsNotRead = errors.New("check order: the shards' counters were not read")

// sum is the SKU's units left: Σ of its shards' counters (redis.Nil when shard 0 has none: not loaded; a
// missing shard other than 0 counts 0), and its shard count; errShardsNotRead when the trip read the
// counters of another count of shards than Redis says.
func (sr *shardReads) sum() (int64, int, error) {
	n, err := sr.shards.Int()
	switch {
	case errors.Is(err, redis.Nil):
		n, err = 1, nil
	case err != nil:
		return 0, 0, err
	}
	n = max(n, 1)
	if n != len(sr.avail) {
		return 0, n, errShardsNotRead
	}
	var total int64
	for i, c := range sr.avail {
		v, err := c.Int64()
		if errors.Is(err, redis.Nil) && i > 0 {
			continue
		}
		if err != nil {
			return 0, n, err
		}
		total += v
	}
	return total, n, nil
}

// needsHeld reports whether line l's answer may need its user's units, by what the last trip read of its
// SKU: not seen yet, or seen with a limit and enough units for the line. Called with mu held.
func (m *skuMemory) needsHeld(l ordersaga.Line) bool {
	s, ok := m.skus[l.SKU]
	return !ok || (s.limit > 0 && s.avail >= l.Qty)
}

// remember keeps what a trip read of its SKUs' counters, shard counts and limits (a SKU not loaded, or read
// with an error, is forgotten; one whose shards' counters were not all read keeps its new shard count only).
func (m *skuMemory) remember(avail map[string]*shardReads, limits map[string]*redis.StringCmd) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for sku, a := range avail {
		n, shards, err := a.sum()
		limit, lerr := limits[sku].Int64()
		if errors.Is(lerr, redis.Nil) {
			limit, lerr = 0, nil
		}
		switch {
		case errors.Is(err, errShardsNotRead):
			m.skus[sku] = skuSeen{shards: shards} // avail 0: needsHeld reads the user's units again
		case err != nil || lerr != nil:
			delete(m.skus, sku)
		default:
			m.skus[sku] = skuSeen{avail: n, limit: limit, shards: shards}
		}
	}
}
