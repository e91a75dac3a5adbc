package activities

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/repair_avail.lua
	repairAvailLua string
	//go:embed lua/repair_hold.lua
	repairHoldLua string

	repairAvailScript = redis.NewScript(repairAvailLua)
	repairHoldScript  = redis.NewScript(repairHoldLua)
)

// Codes of repair_avail.lua and repair_hold.lua.
const (
	codeInLine   = 1
	codeAlready  = 2
	codeLoaded   = 3
	codeRaced    = 4
	codeRepaired = 5
)

// modeSet is repair_avail.lua's mode for a caller that holds the database's lock on the SKU (an admin stock
// change): the counter is set whatever it is (the other modes are in reconcile.go).
const modeSet = "set"

// Hold actions of repair_hold.lua.
const (
	holdDrop    = "drop"
	holdReadd   = "readd"
	holdRelease = "release"
	holdConfirm = "confirm"
)

// stockSnapshot is a SKU's counter, holds and version read together (one MULTI), the "before" of a
// compare-and-set.
type stockSnapshot struct {
	avail   int64
	loaded  bool
	holds   map[string]int64
	version string // "" when no script has changed the SKU yet
}

// snapshot reads the counter, the holds and the version of a SKU atomically.
func (r *RedisStock) snapshot(ctx context.Context, sku string) (stockSnapshot, error) {
	var get, ver *redis.StringCmd
	var all *redis.MapStringStringCmd
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, r.AvailKey(sku))
		all = p.HGetAll(ctx, r.HoldsKey(sku))
		ver = p.Get(ctx, r.VersionKey(sku))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return stockSnapshot{}, fmt.Errorf("snapshot %s: %w", sku, err)
	}
	snap := stockSnapshot{holds: map[string]int64{}, version: ver.Val()}
	switch v, gerr := get.Int64(); {
	case gerr == nil:
		snap.avail, snap.loaded = v, true
	case !errors.Is(gerr, redis.Nil):
		return stockSnapshot{}, fmt.Errorf("snapshot %s: avail: %w", sku, gerr)
	}
	for order, q := range all.Val() {
		n, perr := strconv.ParseInt(q, 10, 64)
		if perr != nil {
			n = 0 // not a number: corrupt, and fixHolds drops it as a stray hold
		}
		snap.holds[order] = n
	}
	return snap, nil
}

// availRepair is what repair_avail.lua did.
type availRepair struct {
	code   int64
	before int64 // -1 when the counter was missing
	target int64
}

// repairAvail runs repair_avail.lua: see the script for the arithmetic. truth is the database's side: the
// stock, the orders whose deduct stands, the orders whose DB restore stands while their marker may still be
// 'C' (release still to come), and the open orders whose deduct stands (marked when they have no marker).
func (r *RedisStock) repairAvail(ctx context.Context, sku, mode string, truth skuTruth, snap stockSnapshot) (availRepair, error) {
	keys := make([]string, 0, 3+len(truth.pending)+len(truth.open))
	keys = append(keys, r.AvailKey(sku), r.HoldsKey(sku), r.VersionKey(sku))
	for _, o := range truth.pending {
		keys = append(keys, r.MarkerKey(sku, o))
	}
	for _, o := range truth.open {
		keys = append(keys, r.MarkerKey(sku, o.OrderID))
	}
	observed := ""
	if snap.loaded {
		observed = strconv.FormatInt(snap.avail, 10)
	}
	args := make([]any, 0, 7+len(truth.deducted)+len(truth.open))
	args = append(args, mode, truth.stock, observed, snap.version, len(truth.deducted))
	for _, o := range truth.deducted {
		args = append(args, o)
	}
	args = append(args, r.ttlSeconds(), len(truth.open))
	for _, o := range truth.open {
		args = append(args, o.Qty)
	}
	res, err := repairAvailScript.Run(ctx, r.rdb, keys, args...).Int64Slice()
	if err != nil {
		return availRepair{}, fmt.Errorf("repair avail %s: %w", sku, err)
	}
	if len(res) != 3 {
		return availRepair{}, fmt.Errorf("repair avail %s: unexpected script answer %v", sku, res)
	}
	return availRepair{code: res[0], before: res[1], target: res[2]}, nil
}

// repairHold runs repair_hold.lua for one order's hold of a SKU. It reports false when the hold or the
// marker changed since they were seen (raced: nothing written).
func (r *RedisStock) repairHold(ctx context.Context, sku, orderID, action, markerSeen, holdSeen string) (bool, error) {
	code, err := repairHoldScript.Run(ctx, r.rdb, r.keys(sku, orderID), orderID, action, markerSeen, holdSeen, r.ttlSeconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("repair hold %s/%s: %w", sku, orderID, err)
	}
	switch code {
	case codeInLine:
		return true, nil
	case codeRaced:
		return false, nil
	}
	return false, fmt.Errorf("repair hold %s/%s: unexpected script code %d", sku, orderID, code)
}

// markerInfo is one per-order marker of a SKU found by a scan.
type markerInfo struct {
	value string
	age   time.Duration // since the reserve that wrote it (its TTL counts down from markerTTL)
}

// markers scans the per-order markers of a SKU. It walks the keyspace with SCAN MATCH, so its cost grows
// with the whole keyspace, not with the SKU: reconciliation calls it once per SKU per run.
func (r *RedisStock) markers(ctx context.Context, sku string) (map[string]markerInfo, error) {
	head := r.prefix + "inv:{" + sku + "}:o:{"
	pattern := globEscape(head) + "*}"
	var keys []string
	iter := r.rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("markers %s: scan: %w", sku, err)
	}
	out := make(map[string]markerInfo, len(keys))
	for start := 0; start < len(keys); start += 500 {
		chunk := keys[start:min(start+500, len(keys))]
		gets := make([]*redis.StringCmd, len(chunk))
		ttls := make([]*redis.DurationCmd, len(chunk))
		_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range chunk {
				gets[i] = p.Get(ctx, k)
				ttls[i] = p.PTTL(ctx, k)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("markers %s: %w", sku, err)
		}
		for i, k := range chunk {
			v, gerr := gets[i].Result()
			if errors.Is(gerr, redis.Nil) {
				continue // expired or deleted since the scan
			}
			if gerr != nil {
				return nil, fmt.Errorf("markers %s: %w", sku, gerr)
			}
			order := strings.TrimSuffix(strings.TrimPrefix(k, head), "}")
			age := time.Duration(0)
			if ttl := ttls[i].Val(); ttl > 0 && ttl < r.markerTTL {
				age = r.markerTTL - ttl
			}
			out[order] = markerInfo{value: v, age: age}
		}
	}
	return out, nil
}

// globEscape quotes the characters SCAN MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
