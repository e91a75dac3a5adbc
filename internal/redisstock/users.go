package redisstock

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/repair_user.lua
var repairUserLua string

var repairUserScript = redis.NewScript(repairUserLua)

// UserEntry is one order in one user's count of a SKU (UserKey), with the order's marker as read beside it.
type UserEntry struct {
	UserID  string
	OrderID string
	Entry   string // the units as stored
	Marker  string // the order's marker ("" when absent)
}

// UserEntries reads every user's count of a SKU (SCAN of its UserKeys) and each counted order's marker.
// Reconciliation reads these before the database, so a release that runs in between changes a marker and
// makes its repair race (RepairUser).
func (r *Store) UserEntries(ctx context.Context, sku string) ([]UserEntry, error) {
	head := r.userKeyHead(sku)
	var out []UserEntry
	err := r.scanSKU(ctx, sku, head, "*}", 500, func(key string) error {
		user := strings.TrimSuffix(strings.TrimPrefix(key, head), "}")
		raw, err := r.rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return err
		}
		for order, q := range raw {
			m, err := r.Marker(ctx, order, sku)
			if err != nil {
				return err
			}
			out = append(out, UserEntry{UserID: user, OrderID: order, Entry: q, Marker: m})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("user counts of %s: %w", sku, err)
	}
	return out, nil
}

// UserRepair is what RepairUser does to one order's entry in one user's count.
type UserRepair string

// User repairs (lua/repair_user.lua).
const (
	UserAdd  UserRepair = "add"
	UserDrop UserRepair = "drop"
)

// RepairUser adds (units) or drops orderID's entry in userID's count of sku, only if the order's marker and
// the entry are still markerSeen and entrySeen ("" for absent); done is false when they moved (raced).
func (r *Store) RepairUser(ctx context.Context, sku, userID, orderID string, action UserRepair, markerSeen, entrySeen string, units int64) (done bool, err error) {
	code, err := repairUserScript.Run(ctx, r.rdb, r.userKeys(sku, orderID, userID), orderID, string(action), markerSeen, entrySeen,
		strconv.FormatInt(units, 10), r.ttlSeconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("repair user %s of %s, order %s: %w", userID, sku, orderID, err)
	}
	return code == 1, nil
}
