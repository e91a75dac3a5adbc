package redisstock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/reserve.lua
	reserveLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/confirm.lua
	confirmLua string
)

// Codes returned by the Lua scripts (see lua/*.lua).
const (
	codeOK         = 1
	codeDuplicate  = 2
	codeSoldOut    = 3 // reserve
	codeTombstone  = 3 // release: never reserved, tombstone written
	codeNotLoaded  = 4
	codeRefused    = 5
	codeNoHold     = 6
	codeKept       = 7 // release of a sold order: its confirmed hold stays
	codePassed     = 8 // a shard the order's walk passed (shards.go): go on to the next
	codeLimit      = 6 // reserve: {6, held, limit}, the user's units would pass the per-user limit
	defaultMarkTTL = 7 * 24 * time.Hour
)

// Store is the Redis layer: per-SKU available counters, holds and per-order markers, changed only by the
// Lua scripts. Every key of one call shares the SKU's hash tag, so it runs unchanged on Redis Cluster.
type Store struct {
	rdb       redis.UniversalClient
	prefix    string
	markerTTL time.Duration
	// markerReplicas is how many replicas must hold an idempotency marker before ClaimMarkers returns
	// (AckMarkers).
	markerReplicas int
	reserve        *redis.Script
	release        *redis.Script
	confirm        *redis.Script
}

// New wraps a client. prefix is put in front of every key (tests use one per test; production
// leaves it empty); markerTTL must outlive the longest order (0 means 7 days).
func New(rdb redis.UniversalClient, prefix string, markerTTL time.Duration) *Store {
	if markerTTL <= 0 {
		markerTTL = defaultMarkTTL
	}
	r := &Store{
		rdb:       rdb,
		prefix:    prefix,
		markerTTL: markerTTL,
		reserve:   redis.NewScript(reserveLua),
		release:   redis.NewScript(releaseLua),
		confirm:   redis.NewScript(confirmLua),
	}
	return r
}

// Client returns the underlying client.
func (r *Store) Client() redis.UniversalClient { return r.rdb }

func (r *Store) ttlSeconds() int64 { return int64(r.markerTTL / time.Second) }

// Prefix is what the store puts in front of every key (see New).
func (r *Store) Prefix() string { return r.prefix }

// MarkerTTL is how long a per-order marker lives (see New).
func (r *Store) MarkerTTL() time.Duration { return r.markerTTL }

// Reserve holds qty units of sku for orderID of userID. It returns ErrSoldOut, ordersaga.ErrNotLoaded,
// ordersaga.ErrCompensated (the order's line was already released or tombstoned) or a
// *ordersaga.LimitExceededError (the user's units of the SKU would pass its per-user limit) for the outcomes
// that hold nothing. userID "" counts nothing per user (a reserve of a workflow started before the limit
// existed): the database deduct still enforces the limit.
func (r *Store) Reserve(ctx context.Context, orderID, userID, sku string, qty int64) (ordersaga.ReserveOutcome, error) {
	if qty <= 0 || sku == "" || orderID == "" {
		return "", fmt.Errorf("reserve: order_id, sku and a positive qty are required (got %q, %q, %d)", orderID, sku, qty)
	}
	raw, err := r.reserve.Run(ctx, r.rdb, r.userKeys(sku, orderID, userID), orderID, qty, r.ttlSeconds(), userID).Result()
	if err != nil {
		return "", fmt.Errorf("reserve %s: %w", sku, err)
	}
	if le, ok := limitReply(sku, raw); ok {
		return "", le
	}
	code, ok := raw.(int64)
	if !ok {
		return "", fmt.Errorf("reserve %s: unexpected script reply %v", sku, raw)
	}
	switch code {
	case codeOK:
		return ordersaga.Reserved, nil
	case codeDuplicate:
		return ordersaga.Duplicate, nil
	case codeSoldOut:
		return "", &ordersaga.SoldOutError{SKU: sku}
	case codeNotLoaded:
		return "", fmt.Errorf("reserve %s: %w", sku, ordersaga.ErrNotLoaded)
	case codeRefused:
		return "", fmt.Errorf("reserve %s for order %s: %w", sku, orderID, ordersaga.ErrCompensated)
	}
	return "", fmt.Errorf("reserve %s: unexpected script code %d", sku, code)
}

// limitReply reads reserve.lua's {6, held, limit}.
func limitReply(sku string, raw any) (*ordersaga.LimitExceededError, bool) {
	arr, ok := raw.([]any)
	if !ok || len(arr) != 3 {
		return nil, false
	}
	code, _ := arr[0].(int64)
	held, _ := arr[1].(int64)
	limit, _ := arr[2].(int64)
	if code != codeLimit {
		return nil, false
	}
	return &ordersaga.LimitExceededError{SKU: sku, Limit: limit, Held: held}, true
}

// Release gives back what orderID of userID holds of sku, once, and takes it off the user's count;
// releasing what was never reserved writes a tombstone so that a late reserve is refused.
func (r *Store) Release(ctx context.Context, orderID, userID, sku string) (ordersaga.ReleaseOutcome, error) {
	return r.runRelease(ctx, orderID, userID, sku, "")
}

// ReleaseUnsold is Release for an order the database kept sold (its restore answered Sold: the order is
// PAID): a confirmed hold stays confirmed (ordersaga.KeptSold) and counted for its user, and only a hold the
// database never took is given back.
func (r *Store) ReleaseUnsold(ctx context.Context, orderID, userID, sku string) (ordersaga.ReleaseOutcome, error) {
	return r.runRelease(ctx, orderID, userID, sku, "sold")
}

func (r *Store) runRelease(ctx context.Context, orderID, userID, sku, mode string) (ordersaga.ReleaseOutcome, error) {
	if sku == "" || orderID == "" {
		return "", fmt.Errorf("release: order_id and sku are required (got %q, %q)", orderID, sku)
	}
	code, err := r.release.Run(ctx, r.rdb, r.userKeys(sku, orderID, userID), orderID, r.ttlSeconds(), mode).Int64()
	if err != nil {
		return "", fmt.Errorf("release %s: %w", sku, err)
	}
	switch code {
	case codeOK:
		return ordersaga.Released, nil
	case codeDuplicate:
		return ordersaga.AlreadyReleased, nil
	case codeTombstone:
		return ordersaga.TombstoneReleased, nil
	case codeKept:
		return ordersaga.KeptSold, nil
	}
	return "", fmt.Errorf("release %s: unexpected script code %d", sku, code)
}

// Confirm drops the hold of orderID on sku once the DB deduct has committed. Confirming a line that was
// released or never held is not an error: the units are accounted for by the DB and reconciliation.
func (r *Store) Confirm(ctx context.Context, orderID, sku string) (bool, error) {
	if sku == "" || orderID == "" {
		return false, fmt.Errorf("confirm: order_id and sku are required (got %q, %q)", orderID, sku)
	}
	code, err := r.confirm.Run(ctx, r.rdb, r.keys(sku, orderID), orderID).Int64()
	if err != nil {
		return false, fmt.Errorf("confirm %s: %w", sku, err)
	}
	switch code {
	case codeOK:
		return true, nil
	case codeDuplicate, codeRefused, codeNoHold:
		return false, nil
	}
	return false, fmt.Errorf("confirm %s: unexpected script code %d", sku, code)
}

// SetAvailable sets the counter of a SKU outright (tests and the first load of a new SKU).
func (r *Store) SetAvailable(ctx context.Context, sku string, avail int64) error {
	if err := r.rdb.Set(ctx, r.AvailKey(sku), avail, 0).Err(); err != nil {
		return fmt.Errorf("set available %s: %w", sku, err)
	}
	return nil
}

// Available returns the counter of a SKU; loaded is false when the key is missing.
func (r *Store) Available(ctx context.Context, sku string) (avail int64, loaded bool, err error) {
	v, err := r.rdb.Get(ctx, r.AvailKey(sku)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("available %s: %w", sku, err)
	}
	return v, true, nil
}

// Holds returns the units each order holds of a SKU and is not yet confirmed by the DB.
func (r *Store) Holds(ctx context.Context, sku string) (map[string]int64, error) {
	raw, err := r.rdb.HGetAll(ctx, r.HoldsKey(sku)).Result()
	if err != nil {
		return nil, fmt.Errorf("holds %s: %w", sku, err)
	}
	out := make(map[string]int64, len(raw))
	for order, q := range raw {
		n, err := strconv.ParseInt(q, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("holds %s: order %s: %w", sku, order, err)
		}
		out[order] = n
	}
	return out, nil
}

// Marker returns the raw per-order marker ("" when absent).
func (r *Store) Marker(ctx context.Context, orderID, sku string) (string, error) {
	v, err := r.rdb.Get(ctx, r.MarkerKey(sku, orderID)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("marker %s/%s: %w", sku, orderID, err)
	}
	return v, nil
}
