package redisstock

import (
	"context"
	"fmt"
	"strings"

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
