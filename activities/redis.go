package activities

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/reserve.lua
	reserveLua string
	//go:embed lua/release.lua
	releaseLua string
	//go:embed lua/confirm.lua
	confirmLua string
	//go:embed lua/unadmit.lua
	unadmitLua string
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
	defaultMarkTTL = 7 * 24 * time.Hour
)

// ReserveOutcome says what a reserve call did.
type ReserveOutcome string

// Outcomes of Reserve. Only Reserved and Duplicate hold units for the order.
const (
	Reserved  ReserveOutcome = "reserved"
	Duplicate ReserveOutcome = "duplicate"
)

// ReleaseOutcome says what a release call did.
type ReleaseOutcome string

// Outcomes of Release.
const (
	Released          ReleaseOutcome = "released"
	AlreadyReleased   ReleaseOutcome = "already_released"
	TombstoneReleased ReleaseOutcome = "tombstone"
	// KeptSold: the order is paid and its confirmed hold stays confirmed (ReleaseUnsold only).
	KeptSold ReleaseOutcome = "kept_sold"
)

// RedisStock is the Redis layer: per-SKU available counters, holds and per-order markers, changed only by the
// Lua scripts. Every key of one call shares the SKU's hash tag, so it runs unchanged on Redis Cluster.
type RedisStock struct {
	rdb       redis.UniversalClient
	prefix    string
	markerTTL time.Duration
	reserve   *redis.Script
	release   *redis.Script
	confirm   *redis.Script
	unadmit   *redis.Script
	checks    checkBatcher    // CheckOrder's round trips, shared by concurrent callers
	admission admissionLeases // Admit's lease of this process (admission.go)
}

// NewRedisStock wraps a client. prefix is put in front of every key (tests use one per test; production
// leaves it empty); markerTTL must outlive the longest order (0 means 7 days).
func NewRedisStock(rdb redis.UniversalClient, prefix string, markerTTL time.Duration) *RedisStock {
	if markerTTL <= 0 {
		markerTTL = defaultMarkTTL
	}
	r := &RedisStock{
		rdb:       rdb,
		prefix:    prefix,
		markerTTL: markerTTL,
		reserve:   redis.NewScript(reserveLua),
		release:   redis.NewScript(releaseLua),
		confirm:   redis.NewScript(confirmLua),
		unadmit:   redis.NewScript(unadmitLua),
	}
	r.checks.rs = r
	return r
}

// Client returns the underlying client.
func (r *RedisStock) Client() redis.UniversalClient { return r.rdb }

// AvailKey is the counter of units Redis may still promise for a SKU.
func (r *RedisStock) AvailKey(sku string) string { return r.prefix + "inv:{" + sku + "}:avail" }

// HoldsKey is the hash order ID -> units held and not yet confirmed by the DB deduct.
func (r *RedisStock) HoldsKey(sku string) string { return r.prefix + "inv:{" + sku + "}:holds" }

// MarkerKey is the per-order marker of a SKU: H:<qty> held, C:<qty> confirmed, R:<qty> released, T tombstone.
func (r *RedisStock) MarkerKey(sku, orderID string) string {
	return r.prefix + "inv:{" + sku + "}:o:{" + orderID + "}"
}

// VersionKey counts the changes every script makes to a SKU's counter, holds and markers, so that
// reconciliation's compare-and-set can tell "unchanged" from "changed and changed back" (repair_avail.lua).
func (r *RedisStock) VersionKey(sku string) string { return r.prefix + "inv:{" + sku + "}:ver" }

// AdmittingKey counts the units of a SKU in orders the API is placing right now (see Admit).
func (r *RedisStock) AdmittingKey(sku string) string { return r.prefix + "inv:{" + sku + "}:admitting" }

func (r *RedisStock) keys(sku, orderID string) []string {
	return []string{r.AvailKey(sku), r.HoldsKey(sku), r.MarkerKey(sku, orderID), r.VersionKey(sku)}
}

func (r *RedisStock) ttlSeconds() int64 { return int64(r.markerTTL / time.Second) }

// Reserve holds qty units of sku for orderID. It returns ErrSoldOut, ErrNotLoaded or ErrCompensated (the
// order's line was already released or tombstoned) for the outcomes that hold nothing.
func (r *RedisStock) Reserve(ctx context.Context, orderID, sku string, qty int64) (ReserveOutcome, error) {
	if qty <= 0 || sku == "" || orderID == "" {
		return "", fmt.Errorf("reserve: order_id, sku and a positive qty are required (got %q, %q, %d)", orderID, sku, qty)
	}
	code, err := r.reserve.Run(ctx, r.rdb, r.keys(sku, orderID), orderID, qty, r.ttlSeconds()).Int64()
	if err != nil {
		return "", fmt.Errorf("reserve %s: %w", sku, err)
	}
	switch code {
	case codeOK:
		return Reserved, nil
	case codeDuplicate:
		return Duplicate, nil
	case codeSoldOut:
		return "", &SoldOutError{SKU: sku}
	case codeNotLoaded:
		return "", fmt.Errorf("reserve %s: %w", sku, ErrNotLoaded)
	case codeRefused:
		return "", fmt.Errorf("reserve %s for order %s: %w", sku, orderID, ErrCompensated)
	}
	return "", fmt.Errorf("reserve %s: unexpected script code %d", sku, code)
}

// Release gives back what orderID holds of sku, once; releasing what was never reserved writes a tombstone
// so that a late reserve is refused.
func (r *RedisStock) Release(ctx context.Context, orderID, sku string) (ReleaseOutcome, error) {
	return r.runRelease(ctx, orderID, sku, "")
}

// ReleaseUnsold is Release for an order the database kept sold (Store.Restore answered Sold: the order is
// PAID): a confirmed hold stays confirmed (KeptSold), and only a hold the database never took is given back.
func (r *RedisStock) ReleaseUnsold(ctx context.Context, orderID, sku string) (ReleaseOutcome, error) {
	return r.runRelease(ctx, orderID, sku, "sold")
}

func (r *RedisStock) runRelease(ctx context.Context, orderID, sku, mode string) (ReleaseOutcome, error) {
	if sku == "" || orderID == "" {
		return "", fmt.Errorf("release: order_id and sku are required (got %q, %q)", orderID, sku)
	}
	code, err := r.release.Run(ctx, r.rdb, r.keys(sku, orderID), orderID, r.ttlSeconds(), mode).Int64()
	if err != nil {
		return "", fmt.Errorf("release %s: %w", sku, err)
	}
	switch code {
	case codeOK:
		return Released, nil
	case codeDuplicate:
		return AlreadyReleased, nil
	case codeTombstone:
		return TombstoneReleased, nil
	case codeKept:
		return KeptSold, nil
	}
	return "", fmt.Errorf("release %s: unexpected script code %d", sku, code)
}

// Confirm drops the hold of orderID on sku once the DB deduct has committed. Confirming a line that was
// released or never held is not an error: the units are accounted for by the DB and reconciliation.
func (r *RedisStock) Confirm(ctx context.Context, orderID, sku string) (bool, error) {
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
func (r *RedisStock) SetAvailable(ctx context.Context, sku string, avail int64) error {
	if err := r.rdb.Set(ctx, r.AvailKey(sku), avail, 0).Err(); err != nil {
		return fmt.Errorf("set available %s: %w", sku, err)
	}
	return nil
}

// Available returns the counter of a SKU; loaded is false when the key is missing.
func (r *RedisStock) Available(ctx context.Context, sku string) (avail int64, loaded bool, err error) {
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
func (r *RedisStock) Holds(ctx context.Context, sku string) (map[string]int64, error) {
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
func (r *RedisStock) Marker(ctx context.Context, orderID, sku string) (string, error) {
	v, err := r.rdb.Get(ctx, r.MarkerKey(sku, orderID)).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("marker %s/%s: %w", sku, orderID, err)
	}
	return v, nil
}
