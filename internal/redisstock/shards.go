package redisstock

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/ordersaga/ordersaga"
	"github.com/redis/go-redis/v9"
)

// A SKU's stock in shards (models/shards.pml is the specification): with stock_shards N > 1 its Redis stock
// is N counters, each with its own holds, markers and version: shard 0 is the SKU's own keys ({SKU}, the
// layout of a SKU that is not split), shard i ≥ 1 the keys of the name SKU#i ({SKU#i}: another hash slot, so
// the shards spread over a cluster's masters; '#' is not a SKU's character, so no SKU's keys are a shard's).
// Each script still touches one shard; nothing is atomic across shards.
//
// An order's N is fixed for its life (the workflow's input: what ShardsKey said when it was placed), and its
// every step walks the same path: from WalkStart(order, N), cyclic.
//   - reserve: per shard, reserve.lua in walk mode: a hold ends the walk; a shard found short is marked 'P'
//     and passed; a 'P' found is passed (an attempt of this order passed it before: no attempt of an order
//     holds on a shard another attempt passed); every shard passed: sold out.
//   - release: per shard, release.lua: 'P' becomes 'X' and 'X' is passed (the order may hold further on,
//     and a release that stopped half-way is retried from the start); the first shard with anything else ends
//     it (a hold given back, or a tombstone where no attempt got to: one that gets there later is refused).
//   - confirm: per shard, confirm.lua: 'P' is passed; the first other answer ends it.
// The walk spreads a hot SKU's reserves over N counters, and in the common case (the start shard has units)
// each step is one script, as for a SKU that is not split. The per-user limit of a split SKU is counted by the
// database's deduct alone (its users' counts in Redis would be split too).

// WalkStart is the shard an order's walk starts from, of n: FNV-1a of the order ID, mod n.
func WalkStart(orderID string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(orderID))
	return int(h.Sum32() % uint32(n))
}

// walkPath is the shards of sku an order's every step visits, in order: from WalkStart, cyclic.
func walkPath(orderID, sku string, n int) []string {
	start := WalkStart(orderID, n)
	out := make([]string, n)
	for k := range n {
		out[k] = ShardName(sku, (start+k)%n)
	}
	return out
}

// Shards reads the SKU's shard count as Redis has it (1 when not split, or not loaded).
func (r *Store) Shards(ctx context.Context, sku string) (int, error) {
	n, err := r.rdb.Get(ctx, r.ShardsKey(sku)).Int()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("shards of %s: %w", sku, err)
	}
	return max(n, 1), nil
}

// SetShards writes the SKU's shard count as the database has it (1 removes the key).
func (r *Store) SetShards(ctx context.Context, sku string, n int) error {
	var err error
	if n > 1 {
		err = r.rdb.Set(ctx, r.ShardsKey(sku), n, 0).Err()
	} else {
		err = r.rdb.Del(ctx, r.ShardsKey(sku)).Err()
	}
	if err != nil {
		return fmt.Errorf("set shards of %s: %w", sku, err)
	}
	return nil
}

// ReserveIn is Reserve on a SKU whose stock is in n shards (n ≤ 1: Reserve).
func (r *Store) ReserveIn(ctx context.Context, n int, orderID, userID, sku string, qty int64) (ordersaga.ReserveOutcome, error) {
	if n <= 1 {
		return r.Reserve(ctx, orderID, userID, sku, qty)
	}
	if qty <= 0 || sku == "" || orderID == "" {
		return "", fmt.Errorf("reserve: order_id, sku and a positive qty are required (got %q, %q, %d)", orderID, sku, qty)
	}
	var out ordersaga.ReserveOutcome
	for _, shard := range walkPath(orderID, sku, n) {
		code, err := r.reserve.Run(ctx, r.rdb, r.userKeys(shard, orderID, ""), orderID, qty, r.ttlSeconds(), "", "walk").Int64()
		if err != nil {
			return "", fmt.Errorf("reserve %s: %w", shard, err)
		}
		switch code {
		case codeSoldOut, codePassed:
			continue
		case codeOK:
			out = ordersaga.Reserved
		case codeDuplicate:
			out = ordersaga.Duplicate
		case codeNotLoaded:
			return "", fmt.Errorf("reserve %s: %w", shard, ordersaga.ErrNotLoaded)
		case codeRefused:
			return "", fmt.Errorf("reserve %s for order %s: %w", shard, orderID, ordersaga.ErrCompensated)
		default:
			return "", fmt.Errorf("reserve %s: unexpected script code %d", shard, code)
		}
		return out, nil
	}
	return "", &ordersaga.SoldOutError{SKU: sku}
}

// ReleaseIn is Release on a SKU whose stock is in n shards (n ≤ 1: Release): along the order's path.
func (r *Store) ReleaseIn(ctx context.Context, n int, orderID, userID, sku string) (ordersaga.ReleaseOutcome, error) {
	if n <= 1 {
		return r.Release(ctx, orderID, userID, sku)
	}
	return r.releaseWalk(ctx, n, orderID, sku, "")
}

// ReleaseUnsoldIn is ReleaseUnsold on a SKU whose stock is in n shards (n ≤ 1: ReleaseUnsold).
func (r *Store) ReleaseUnsoldIn(ctx context.Context, n int, orderID, userID, sku string) (ordersaga.ReleaseOutcome, error) {
	if n <= 1 {
		return r.ReleaseUnsold(ctx, orderID, userID, sku)
	}
	return r.releaseWalk(ctx, n, orderID, sku, "sold")
}

func (r *Store) releaseWalk(ctx context.Context, n int, orderID, sku, mode string) (ordersaga.ReleaseOutcome, error) {
	if sku == "" || orderID == "" {
		return "", fmt.Errorf("release: order_id and sku are required (got %q, %q)", orderID, sku)
	}
	for _, shard := range walkPath(orderID, sku, n) {
		out, next, err := r.releaseShard(ctx, shard, orderID, mode)
		if err != nil || !next {
			return out, err
		}
	}
	// Every shard passed: the order never held (its reserve answered sold out).
	return ordersaga.TombstoneReleased, nil
}

// releaseShard runs release.lua on one shard: next is true when the release goes on to the next shard.
func (r *Store) releaseShard(ctx context.Context, shard, orderID, mode string) (out ordersaga.ReleaseOutcome, next bool, err error) {
	code, err := r.release.Run(ctx, r.rdb, r.userKeys(shard, orderID, ""), orderID, r.ttlSeconds(), mode).Int64()
	if err != nil {
		return "", false, fmt.Errorf("release %s: %w", shard, err)
	}
	switch code {
	case codePassed:
		return "", true, nil
	case codeOK:
		return ordersaga.Released, false, nil
	case codeDuplicate:
		return ordersaga.AlreadyReleased, false, nil
	case codeTombstone:
		return ordersaga.TombstoneReleased, false, nil
	case codeKept:
		return ordersaga.KeptSold, false, nil
	}
	return "", false, fmt.Errorf("release %s: unexpected script code %d", shard, code)
}

// ReleaseEveryShard releases an order on each of the SKU's n shards, not only along its path: for
// reconciliation's leak pass, which knows the SKU's shard count today but not the order's (shards only
// grow, so every shard the order could have touched is among them). A shard the order never reached gets a
// tombstone. sold is ReleaseUnsold's mode.
func (r *Store) ReleaseEveryShard(ctx context.Context, n int, orderID, sku string, sold bool) (ordersaga.ReleaseOutcome, error) {
	mode := ""
	if sold {
		mode = "sold"
	}
	outs := make([]ordersaga.ReleaseOutcome, max(n, 1))
	err := eachShard(max(n, 1), func(i int) error {
		var err error
		outs[i], _, err = r.releaseShard(ctx, ShardName(sku, i), orderID, mode)
		return err
	})
	if err != nil {
		return "", err
	}
	best := ordersaga.AlreadyReleased
	for _, o := range outs {
		switch {
		case o == ordersaga.Released || o == ordersaga.KeptSold:
			return o, nil
		case o == ordersaga.TombstoneReleased:
			best = o
		}
	}
	return best, nil
}

// ConfirmIn is Confirm on a SKU whose stock is in n shards (n ≤ 1: Confirm): along the order's path.
func (r *Store) ConfirmIn(ctx context.Context, n int, orderID, sku string) (bool, error) {
	if n <= 1 {
		return r.Confirm(ctx, orderID, sku)
	}
	for _, shard := range walkPath(orderID, sku, n) {
		code, err := r.confirm.Run(ctx, r.rdb, r.keys(shard, orderID), orderID).Int64()
		if err != nil {
			return false, fmt.Errorf("confirm %s: %w", shard, err)
		}
		switch code {
		case codePassed:
			continue
		case codeOK:
			return true, nil
		case codeDuplicate, codeRefused, codeNoHold:
			return false, nil
		}
		return false, fmt.Errorf("confirm %s: unexpected script code %d", shard, code)
	}
	return false, nil
}

// eachShard runs fn for shards 0..n-1 at once (on a cluster they are on different masters) and returns the
// first error.
func eachShard(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
