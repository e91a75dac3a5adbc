package redisstock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ordersaga/ordersaga"
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

// RepairCode is what repair_avail.lua or repair_hold.lua did.
type RepairCode int64

// Codes of repair_avail.lua and repair_hold.lua.
const (
	InLine   RepairCode = 1 // nothing to do (repair_hold: done)
	Already  RepairCode = 2 // load mode: the counter exists
	Loaded   RepairCode = 3 // the missing counter was written
	Raced    RepairCode = 4 // Redis moved since the snapshot: nothing written
	Repaired RepairCode = 5 // the counter was set to the target
)

// Mode is how repair_avail.lua may write the counter.
type Mode string

const (
	// ModeRepair writes the target only if the counter and the version still equal the snapshot
	// (reconciliation's compare-and-set).
	ModeRepair Mode = "repair"
	// ModeLoad writes it only if the counter is still missing and the version unchanged (the cold load).
	ModeLoad Mode = "load"
	// ModeSet is for a caller that holds the database's lock on the SKU (an admin stock change, a load under
	// the lock): the counter is set whatever it is.
	ModeSet Mode = "set"
)

// HoldAction is what repair_hold.lua does to one order's hold.
type HoldAction string

// Hold actions of repair_hold.lua.
const (
	HoldDrop    HoldAction = "drop"    // a hold without an 'H' marker: removed
	HoldReadd   HoldAction = "readd"   // an 'H' marker without its hold: the hold is put back
	HoldRelease HoldAction = "release" // the hold's units go back to the counter, marker 'R'
	HoldConfirm HoldAction = "confirm" // the hold is dropped, marker 'C' (the database owns the units)
)

// Snapshot is a SKU's counter, holds and version read together (one MULTI), the "before" of a
// compare-and-set.
type Snapshot struct {
	Avail   int64
	Loaded  bool
	Holds   map[string]int64
	Version string // "" when no script has changed the SKU yet
}

// Snapshot reads the counter, the holds and the version of a SKU atomically.
func (r *Store) Snapshot(ctx context.Context, sku string) (Snapshot, error) {
	var get, ver *redis.StringCmd
	var all *redis.MapStringStringCmd
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, r.AvailKey(sku))
		all = p.HGetAll(ctx, r.HoldsKey(sku))
		ver = p.Get(ctx, r.VersionKey(sku))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", sku, err)
	}
	if err := commandsErr(get, all, ver); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %s: %w", sku, err)
	}
	snap := Snapshot{Holds: map[string]int64{}, Version: ver.Val()}
	switch v, gerr := get.Int64(); {
	case gerr == nil:
		snap.Avail, snap.Loaded = v, true
	case !errors.Is(gerr, redis.Nil):
		return Snapshot{}, fmt.Errorf("snapshot %s: avail: %w", sku, gerr)
	}
	for order, q := range all.Val() {
		n, perr := strconv.ParseInt(q, 10, 64)
		if perr != nil {
			n = 0 // not a number: corrupt, and fixHolds drops it as a stray hold
		}
		snap.Holds[order] = n
	}
	return snap, nil
}

// AvailRepair is what repair_avail.lua did.
type AvailRepair struct {
	Code   RepairCode
	Before int64 // -1 when the counter was missing
	Target int64
}

// RepairAvail runs repair_avail.lua: see the script for the arithmetic. truth is the database's side: the
// stock, the orders whose deduct stands, the orders whose DB restore stands while their marker may still be
// 'C' (release still to come), and the open orders whose deduct stands (marked when they have no marker).
func (r *Store) RepairAvail(ctx context.Context, sku string, mode Mode, truth ordersaga.SKUTruth, snap Snapshot) (AvailRepair, error) {
	keys := make([]string, 0, 3+len(truth.Pending)+len(truth.Open))
	keys = append(keys, r.AvailKey(sku), r.HoldsKey(sku), r.VersionKey(sku))
	for _, o := range truth.Pending {
		keys = append(keys, r.MarkerKey(sku, o))
	}
	for _, o := range truth.Open {
		keys = append(keys, r.MarkerKey(sku, o.OrderID))
	}
	observed := ""
	if snap.Loaded {
		observed = strconv.FormatInt(snap.Avail, 10)
	}
	args := make([]any, 0, 7+len(truth.Deducted)+len(truth.Open))
	args = append(args, string(mode), truth.Stock, observed, snap.Version, len(truth.Deducted))
	for _, o := range truth.Deducted {
		args = append(args, o)
	}
	args = append(args, r.ttlSeconds(), len(truth.Open))
	for _, o := range truth.Open {
		args = append(args, o.Qty)
	}
	res, err := repairAvailScript.Run(ctx, r.rdb, keys, args...).Int64Slice()
	if err != nil {
		return AvailRepair{}, fmt.Errorf("repair avail %s: %w", sku, err)
	}
	if len(res) != 3 {
		return AvailRepair{}, fmt.Errorf("repair avail %s: unexpected script answer %v", sku, res)
	}
	return AvailRepair{Code: RepairCode(res[0]), Before: res[1], Target: res[2]}, nil
}

// RepairHold runs repair_hold.lua for one order's hold of a SKU. It reports false when the hold or the
// marker changed since they were seen (raced: nothing written).
func (r *Store) RepairHold(ctx context.Context, sku, orderID string, action HoldAction, markerSeen, holdSeen string) (bool, error) {
	code, err := repairHoldScript.Run(ctx, r.rdb, r.keys(sku, orderID), orderID, string(action), markerSeen, holdSeen, r.ttlSeconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("repair hold %s/%s: %w", sku, orderID, err)
	}
	switch RepairCode(code) {
	case InLine:
		return true, nil
	case Raced:
		return false, nil
	}
	return false, fmt.Errorf("repair hold %s/%s: unexpected script code %d", sku, orderID, code)
}

// MarkerInfo is one per-order marker of a SKU found by a scan.
type MarkerInfo struct {
	Value string
	Age   time.Duration // since the reserve that wrote it (its TTL counts down from markerTTL)
}

// Markers scans the per-order markers of a SKU. It walks the keyspace of the SKU's node with SCAN MATCH
// (scanSKU), so its cost grows with that node's keyspace, not with the SKU: reconciliation calls it once per
// SKU per run.
func (r *Store) Markers(ctx context.Context, sku string) (map[string]MarkerInfo, error) {
	head := r.prefix + "inv:{" + sku + "}:o:{"
	var keys []string
	err := r.scanSKU(ctx, sku, head, "*}", 1000, func(key string) error {
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("markers %s: %w", sku, err)
	}
	out := make(map[string]MarkerInfo, len(keys))
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
			if err := commandsErr(gets[i], ttls[i]); err != nil {
				return nil, fmt.Errorf("markers %s: %w", sku, err)
			}
			v, gerr := gets[i].Result()
			if errors.Is(gerr, redis.Nil) {
				continue // expired or deleted since the scan
			}
			order := strings.TrimSuffix(strings.TrimPrefix(k, head), "}")
			age := time.Duration(0)
			if ttl := ttls[i].Val(); ttl > 0 && ttl < r.markerTTL {
				age = r.markerTTL - ttl
			}
			out[order] = MarkerInfo{Value: v, Age: age}
		}
	}
	return out, nil
}

// RawHolds returns the holds hash of a SKU as Redis holds it (order ID -> units, unparsed: reconciliation
// drops a hold that is not a number).
func (r *Store) RawHolds(ctx context.Context, sku string) (map[string]string, error) {
	raw, err := r.rdb.HGetAll(ctx, r.HoldsKey(sku)).Result()
	if err != nil {
		return nil, fmt.Errorf("holds %s: %w", sku, err)
	}
	return raw, nil
}

// DropAvailable removes a SKU's counter: reserves of it then fail closed (the SKU no longer exists).
func (r *Store) DropAvailable(ctx context.Context, sku string) error {
	if err := r.rdb.Del(ctx, r.AvailKey(sku)).Err(); err != nil {
		return fmt.Errorf("drop available %s: %w", sku, err)
	}
	return nil
}
