package sqlstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Kinds of stock_anomalies rows: what reconciliation (or the Redis-down fallback) found.
const (
	KindAvailOver         = "avail_over"           // Redis promised more than the database has
	KindAvailUnder        = "avail_under"          // Redis promised less than the database has
	KindNotLoaded         = "not_loaded"           // the counter was missing
	KindStrayHold         = "stray_hold"           // a hold without an 'H' marker
	KindMarkerWithoutHold = "marker_without_hold"  // an 'H' marker without its hold
	KindHoldDeducted      = "hold_confirm_pending" // an old hold whose DB deduct stands: the confirm never came
	KindHoldClosedOrder   = "hold_closed_order"    // a hold of an order the database shows final
	KindHoldUnknownOrder  = "hold_unknown_order"   // a hold of an order neither the database nor Temporal runs
	KindLeakedOrder       = "leaked_order"         // an unpaid order whose workflow is gone, still holding stock
	KindRedisDown         = "redis_down"           // the reserve fell back to the database: the SKU needs a re-sync
	KindResync            = "resync"               // a SKU marked by the fallback is in line again
	KindUserUnitsMissing  = "user_units_missing"   // a user's count in Redis lacks an order whose deduct stands
	KindUserUnitsStray    = "user_units_stray"     // a user's count in Redis has an order the database does not count
)

// Actions of stock_anomalies rows: what was done about a finding.
const (
	ActionSetAvail    = "set_avail"    // the counter was set to the truth
	ActionLoaded      = "loaded"       // the missing counter was loaded from the truth
	ActionDropped     = "dropped"      // a stray hold was removed
	ActionHoldReadded = "hold_readded" // the missing hold of a marker was put back
	ActionConfirmed   = "confirmed"    // hold removed, marker 'C' (the DB owns the units)
	ActionReleased    = "released"     // hold removed, marker 'R' (the DB counts the units again)
	ActionRestored    = "restored"     // the DB restore of a leaked order ran (and its Redis release, and its close)
	ActionDBOnly      = "db_only"      // a reserve went to the database alone
	ActionResynced    = "resynced"     // the fallback's mark is cleared
	ActionUserAdded   = "user_added"   // the order was put in its user's count
	ActionUserDropped = "user_dropped" // the order was taken off its user's count
)

// RepairActions are the actions that changed Redis or the database.
var RepairActions = []string{ActionSetAvail, ActionLoaded, ActionDropped, ActionHoldReadded, ActionConfirmed, ActionReleased, ActionRestored,
	ActionUserAdded, ActionUserDropped}

// FallbackRunID is the run_id of the stock_anomalies rows the Redis-down fallback writes.
const FallbackRunID = "reserve-fallback"

// Anomaly is one row of stock_anomalies: what reconciliation (or the Redis-down fallback) found and did.
type Anomaly struct {
	RunID    string
	SKU      string
	OrderID  string // "" when the finding is about the SKU as a whole
	Kind     string
	Expected *int64 // the database's truth, where a number applies
	Observed *int64 // what Redis showed
	Action   string
	Detail   string
}

// AnomalyRow is an Anomaly as stored.
type AnomalyRow struct {
	ID int64
	Anomaly
	CreatedAt time.Time
}

// Resync is a SKU's re-sync mark as the stock_anomalies rows tell it (the Redis-down fallback writes the marks,
// reconciliation clears them).
type Resync uint8

const (
	// ResyncNone: not marked.
	ResyncNone Resync = iota
	// ResyncWait: marked less than the settle time ago, so a database-only reservation may still be on its way
	// to its deduct. The SKU is re-synced (its repairs carry kind resync) and the mark stays.
	ResyncWait
	// ResyncClear: marked, and settled: the re-sync clears the mark (a resync/resynced row).
	ResyncClear
)

// RecordAnomalies appends rows to stock_anomalies.
func (s *Store) RecordAnomalies(ctx context.Context, rows []Anomaly) error {
	if len(rows) == 0 {
		return nil
	}
	now := s.now()
	return s.inTx(ctx, func(tx *gorm.DB) error {
		for _, a := range rows {
			if err := tx.Exec(`INSERT INTO stock_anomalies (run_id, sku, order_id, kind, expected, observed, action, detail, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				a.RunID, a.SKU, nullable(a.OrderID), a.Kind, a.Expected, a.Observed, a.Action, nullable(clip(a.Detail, anomalyDetailChars)), now).Error; err != nil {
				return fmt.Errorf("record anomaly: %w", err)
			}
		}
		return nil
	})
}

// Anomalies returns the rows of stock_anomalies, oldest first; runID "" means every run.
func (s *Store) Anomalies(ctx context.Context, runID string) ([]AnomalyRow, error) {
	var rows []struct {
		ID                 int64
		RunID, SKU         string
		OrderID            *string
		Kind, Action       string
		Expected, Observed *int64
		Detail             *string
		CreatedAt          time.Time
	}
	q := s.db.WithContext(ctx).Table("stock_anomalies").Order("id")
	if runID != "" {
		q = q.Where("run_id = ?", runID)
	}
	if err := q.Select("id, run_id, sku, order_id, kind, expected, observed, action, detail, created_at").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("anomalies: %w", err)
	}
	out := make([]AnomalyRow, len(rows))
	for i, r := range rows {
		out[i] = AnomalyRow{ID: r.ID, CreatedAt: r.CreatedAt.UTC(), Anomaly: Anomaly{
			RunID: r.RunID, SKU: r.SKU, Kind: r.Kind, Action: r.Action, Expected: r.Expected, Observed: r.Observed,
		}}
		if r.OrderID != nil {
			out[i].OrderID = *r.OrderID
		}
		if r.Detail != nil {
			out[i].Detail = *r.Detail
		}
	}
	return out, nil
}

// ResyncPending returns the re-sync state of the SKUs among the given ones that the Redis-down fallback
// marked and reconciliation has not cleared since (a redis_down row newer than the last resync row):
// ResyncClear once the newest mark is settle old (no database-only reservation can still be on its way
// to its deduct), ResyncWait before.
func (s *Store) ResyncPending(ctx context.Context, skus []string, settle time.Duration) (map[string]Resync, error) {
	out := map[string]Resync{}
	settled := s.now().Add(-settle)
	err := inChunks(skus, func(chunk []string) error {
		var rows []struct {
			SKU            string
			Marked, Synced int64
		}
		// Only the resynced row clears a mark: a repair made while the mark waits carries kind resync too.
		if err := s.db.WithContext(ctx).Raw(`SELECT sku,
				MAX(CASE WHEN kind = ? THEN id ELSE 0 END) AS marked,
				MAX(CASE WHEN kind = ? AND action = ? THEN id ELSE 0 END) AS synced
			FROM stock_anomalies WHERE sku IN ? AND kind IN (?, ?) GROUP BY sku`,
			KindRedisDown, KindResync, ActionResynced, chunk, KindRedisDown, KindResync).Scan(&rows).Error; err != nil {
			return err
		}
		var marked []string
		for _, r := range rows {
			if r.Marked > r.Synced {
				marked = append(marked, r.SKU)
				out[r.SKU] = ResyncClear
			}
		}
		if len(marked) == 0 {
			return nil
		}
		// The marks written in the last settle: their SKUs wait.
		var recent []string
		if err := s.db.WithContext(ctx).Raw(`SELECT DISTINCT sku FROM stock_anomalies
			WHERE sku IN ? AND kind = ? AND created_at > ?`, marked, KindRedisDown, settled).Scan(&recent).Error; err != nil {
			return err
		}
		for _, sku := range recent {
			out[sku] = ResyncWait
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resync marks: %w", err)
	}
	return out, nil
}
