package sqlstore

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/schema"
)

// The per-user limit's truth. user_units holds, for every SKU with a per-user limit, the units each user
// holds or has bought of it: Σ DEDUCT − Σ RESTORE of the user's orders' ledger rows of the SKU (an order
// awaiting payment or paid; a cancelled, expired or rejected one is restored). Every change happens under the
// SKU's inventory row lock: the deduct adds its units right after its conditional UPDATE of the row and
// refuses past the limit (addUserUnits), the restore takes them back after its UPDATE (releaseUserUnits), and
// a SKU that gets a limit has its rows counted afresh from the ledger (countUserUnits). A SKU without a limit
// leaves its rows alone: they are stale until it gets one, and then counted again.

// addUserUnits adds qty units of sku to userID's count and refuses (LimitExceededError, the transaction rolls
// back) when the count would pass limit. The caller holds the SKU's row lock and has seen limit > 0 under it.
func (s *Store) addUserUnits(tx *gorm.DB, sku, userID string, qty, limit int64) error {
	upsert := "INSERT INTO user_units (sku, user_id, units) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE units = units + VALUES(units)"
	if s.dialect != schema.MySQL {
		upsert = "INSERT INTO user_units (sku, user_id, units) VALUES (?, ?, ?) ON CONFLICT (sku, user_id) DO UPDATE SET units = units + excluded.units"
	}
	if err := tx.Exec(upsert, sku, userID, qty).Error; err != nil {
		return fmt.Errorf("count units of user %s on %s: %w", userID, sku, err)
	}
	var units []int64
	if err := tx.Raw("SELECT units FROM user_units WHERE sku = ? AND user_id = ?"+s.forUpdate(), sku, userID).Scan(&units).Error; err != nil {
		return fmt.Errorf("read units of user %s on %s: %w", userID, sku, err)
	}
	if len(units) == 1 && units[0] > limit {
		return &ordersaga.LimitExceededError{SKU: sku, Limit: limit, Held: units[0] - qty}
	}
	return nil
}

// releaseUserUnits takes qty restored units of sku off userID's count, when the SKU has a limit. The caller
// holds the SKU's row lock (its UPDATE of the row), so the limit read here is the row's latest.
func (s *Store) releaseUserUnits(tx *gorm.DB, sku, userID string, qty int64) error {
	var limit []int64
	if err := tx.Raw("SELECT per_user_limit FROM inventory WHERE sku = ?"+s.forUpdate(), sku).Scan(&limit).Error; err != nil {
		return fmt.Errorf("read per-user limit of %s: %w", sku, err)
	}
	if len(limit) == 0 || limit[0] == 0 {
		return nil
	}
	if err := tx.Exec("UPDATE user_units SET units = CASE WHEN units > ? THEN units - ? ELSE 0 END WHERE sku = ? AND user_id = ?",
		qty, qty, sku, userID).Error; err != nil {
		return fmt.Errorf("release units of user %s on %s: %w", userID, sku, err)
	}
	return nil
}

// userUnitsSQL is every user's units of one SKU, from the ledger: the truth user_units keeps.
const userUnitsSQL = `SELECT o.user_id AS user_id, SUM(CASE WHEN l.op = 'DEDUCT' THEN l.qty ELSE -l.qty END) AS units
	FROM stock_ledger l JOIN orders o ON o.order_id = l.order_id
	WHERE l.sku = ? GROUP BY o.user_id`

// countUserUnits sets the SKU's rows of user_units from the ledger (the SKU gets a limit). The caller holds
// the SKU's row lock, taken before any other read of its transaction.
func countUserUnits(tx *gorm.DB, sku string) error {
	if err := tx.Exec("DELETE FROM user_units WHERE sku = ?", sku).Error; err != nil {
		return fmt.Errorf("count user units: %w", err)
	}
	var rows []struct {
		UserID string
		Units  int64
	}
	if err := tx.Raw(userUnitsSQL, sku).Scan(&rows).Error; err != nil {
		return fmt.Errorf("count user units: %w", err)
	}
	for _, r := range rows {
		if r.Units <= 0 {
			continue
		}
		if err := tx.Exec("INSERT INTO user_units (sku, user_id, units) VALUES (?, ?, ?)", sku, r.UserID, r.Units).Error; err != nil {
			return fmt.Errorf("count user units: %w", err)
		}
	}
	return nil
}

// UserUnits returns the units of sku each user holds or has bought, as user_units keeps them (users with
// none left out); meaningful while the SKU has a per-user limit.
func (s *Store) UserUnits(ctx context.Context, sku string) (map[string]int64, error) {
	var rows []struct {
		UserID string
		Units  int64
	}
	if err := s.db.WithContext(ctx).Raw("SELECT user_id, units FROM user_units WHERE sku = ? AND units > 0", sku).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("user units of %s: %w", sku, err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		out[r.UserID] = r.Units
	}
	return out, nil
}

// LedgerUserUnits returns the units of sku each user holds or has bought, computed from the ledger (users
// with none left out): what UserUnits must equal, whatever the limit.
func (s *Store) LedgerUserUnits(ctx context.Context, sku string) (map[string]int64, error) {
	var rows []struct {
		UserID string
		Units  int64
	}
	if err := s.db.WithContext(ctx).Raw(userUnitsSQL, sku).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("ledger user units of %s: %w", sku, err)
	}
	out := make(map[string]int64, len(rows))
	for _, r := range rows {
		if r.Units > 0 {
			out[r.UserID] = r.Units
		}
	}
	return out, nil
}

// UserOrder is an order whose deduct of a SKU stands (not restored): its user and units, which count against
// the SKU's per-user limit.
type UserOrder struct {
	UserID string
	Qty    int64
}

// StandingUserOrders returns the orders whose deduct of sku stands, by order ID.
func (s *Store) StandingUserOrders(ctx context.Context, sku string) (map[string]UserOrder, error) {
	var rows []struct {
		OrderID string
		UserID  string
		Qty     int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT d.order_id AS order_id, o.user_id AS user_id, d.qty AS qty
		FROM stock_ledger d JOIN orders o ON o.order_id = d.order_id
		WHERE d.sku = ? AND d.op = 'DEDUCT' AND NOT EXISTS (
			SELECT 1 FROM stock_ledger r WHERE r.order_id = d.order_id AND r.sku = d.sku AND r.op = 'RESTORE')`, sku).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("standing orders of %s: %w", sku, err)
	}
	out := make(map[string]UserOrder, len(rows))
	for _, r := range rows {
		out[r.OrderID] = UserOrder{UserID: r.UserID, Qty: r.Qty}
	}
	return out, nil
}
