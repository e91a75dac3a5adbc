package redisstock

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// scanSKU calls fn with each key of sku whose name starts with head (a key head of the SKU's, raw) and
// matches tail (a SCAN MATCH pattern, "*" for any), walking the keyspace with SCAN MATCH count keys a step.
// Every key of a SKU shares its hash tag, so on Redis Cluster all of them are on the master that owns the
// SKU's slot: the SCAN runs there (a SCAN sent through a ClusterClient goes to a node chosen by the
// pattern's tag, and the escaped pattern's tag is not the SKU's when the SKU holds a character SCAN treats
// as a pattern). A scan that runs while the slot moves to another master (a failover) may miss keys or fail:
// its callers (reconciliation) run again.
func (r *Store) scanSKU(ctx context.Context, sku, head, tail string, count int64, fn func(key string) error) error {
	var node redis.Cmdable = r.rdb
	if cc, ok := r.rdb.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, r.AvailKey(sku))
		if err != nil {
			return fmt.Errorf("master of %s: %w", sku, err)
		}
		node = m
	}
	iter := node.Scan(ctx, 0, GlobEscape(head)+tail, count).Iterator()
	for iter.Next(ctx) {
		if err := fn(iter.Val()); err != nil {
			return err
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	return nil
}

// GlobEscape quotes the characters SCAN MATCH (and KEYS) treat as a pattern.
func GlobEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// DeleteMatching deletes the keys whose names match pattern (SCAN MATCH) on a single server, or on every
// master of a cluster (a SCAN through a cluster client reaches one node), a thousand keys a round trip with
// one DEL each (keys of one node may lie in different slots), and returns how many it deleted. Tests and the
// benchmark clean up their key prefixes with it.
func DeleteMatching(ctx context.Context, rdb redis.UniversalClient, pattern string) (int, error) {
	var total atomic.Int64
	del := func(ctx context.Context, node redis.Cmdable) error {
		var batch []string
		flush := func() error {
			cmds, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range batch {
					p.Del(ctx, k)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("delete %s: %w", pattern, err)
			}
			for _, c := range cmds {
				total.Add(c.(*redis.IntCmd).Val())
			}
			batch = batch[:0]
			return nil
		}
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		if len(batch) == 0 {
			return nil
		}
		return flush()
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return del(ctx, m) })
	} else {
		err = del(ctx, rdb)
	}
	return int(total.Load()), err
}
