package sqlstore

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ordersaga/ordersaga/schema"
)

// MarkerFence is the one row of marker_fence (migration 0006): raised while some key claimed through the
// database alone (Redis unreachable) may lack its idempotency marker, so that no process answers from the
// sold-out fast path, which reads Redis only.
type MarkerFence struct {
	// Gen changes with every raise: a placement raises it after its claim, so a re-marking that began before
	// the raise cannot lower the fence over a key it did not see.
	Gen    int64
	Active bool
	// ActiveFor is how long the fence has been raised, by the database's clock (0 when lowered).
	ActiveFor time.Duration
}

// fenceElapsed is the SQL for "microseconds since active_since", by the database's clock.
func (s *Store) fenceElapsed() string {
	if s.dialect == schema.MySQL {
		return "COALESCE(TIMESTAMPDIFF(MICROSECOND, active_since, NOW(6)), 0)"
	}
	return "COALESCE(CAST((julianday('now') - active_since) * 86400000000 AS INTEGER), 0)"
}

// fenceNow is the SQL for the database's clock, as active_since stores it.
func (s *Store) fenceNow() string {
	if s.dialect == schema.MySQL {
		return "NOW(6)"
	}
	return "julianday('now')"
}

// ReadMarkerFence reads the fence.
func (s *Store) ReadMarkerFence(ctx context.Context) (MarkerFence, error) {
	return readFence(s.db.WithContext(ctx), s.fenceElapsed())
}

func readFence(db *gorm.DB, elapsed string) (MarkerFence, error) {
	var row struct {
		Gen    int64
		Active int
		Micros int64
	}
	err := db.Raw(`SELECT gen, active, ` + elapsed + ` AS micros FROM marker_fence WHERE id = 1`).Scan(&row).Error
	if err != nil {
		return MarkerFence{}, fmt.Errorf("read marker fence: %w", err)
	}
	f := MarkerFence{Gen: row.Gen, Active: row.Active == 1}
	if f.Active {
		f.ActiveFor = time.Duration(max(row.Micros, 0)) * time.Microsecond
	}
	return f, nil
}

// RaiseMarkerFence raises the fence (a placement that claimed a key it could not mark), or raises it again
// when it is up: Gen changes either way, and ActiveFor says how long ago it went up (0 for this raise).
func (s *Store) RaiseMarkerFence(ctx context.Context) (MarkerFence, error) {
	var f MarkerFence
	err := s.inTx(ctx, func(tx *gorm.DB) error {
		err := tx.Exec(`UPDATE marker_fence SET gen = gen + 1,
			active_since = CASE WHEN active = 1 THEN active_since ELSE ` + s.fenceNow() + ` END, active = 1
			WHERE id = 1`).Error
		if err != nil {
			return fmt.Errorf("raise marker fence: %w", err)
		}
		f, err = readFence(tx, s.fenceElapsed())
		return err
	})
	return f, err
}

// LowerMarkerFence lowers the fence if nobody raised it since gen was read: the caller re-marked every key
// claimed before it read gen. False: it was raised again (or is down already).
func (s *Store) LowerMarkerFence(ctx context.Context, gen int64) (bool, error) {
	res := s.db.WithContext(ctx).Exec(`UPDATE marker_fence SET active = 0, active_since = NULL
		WHERE id = 1 AND gen = ? AND active = 1`, gen)
	if res.Error != nil {
		return false, fmt.Errorf("lower marker fence: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}
