package workflows

import (
	"time"

	"github.com/ordersaga/ordersaga/activities"
)

// IdempotencyCleanupScheduleID is the Temporal Schedule that starts IdempotencyCleanupWorkflow; its runs get
// workflow IDs IdempotencyCleanupScheduleID + "-" + the scheduled time (Temporal appends it).
const IdempotencyCleanupScheduleID = "ordersaga-idempotency-cleanup"

// Defaults of an idempotency cleanup run.
const (
	// DefaultIdempotencyRetention is IDEMPOTENCY_RETENTION's default.
	DefaultIdempotencyRetention = 24 * time.Hour
	// DefaultIdempotencyCleanupInterval is the Schedule's interval.
	DefaultIdempotencyCleanupInterval = 5 * time.Minute
	// DefaultIdempotencyCleanupBatch is the rows one activity deletes: small enough that its transaction holds
	// its locks for milliseconds (only on expired rows of idempotency_keys, never an inventory row).
	DefaultIdempotencyCleanupBatch = 100
	// DefaultIdempotencyCleanupMaxBatches bounds one run (its history): what is left waits for the next run.
	DefaultIdempotencyCleanupMaxBatches = 1000
	// DefaultIdempotencyCleanupPause is the rest between two full batches, so that a run with much to delete
	// leaves the database and the CPU to the orders (BENCHMARKS.md measures the sale's rate with and without
	// it); it still deletes tens of millions of rows a day.
	DefaultIdempotencyCleanupPause = 250 * time.Millisecond
)

// IdempotencyCleanupInput configures one cleanup run; the zero value means the defaults.
type IdempotencyCleanupInput struct {
	// Retention: rows unused for longer than this (and a refresh step: sqlstore.IdempotencyLife) whose order
	// is not open are deleted (0 = DefaultIdempotencyRetention).
	Retention time.Duration
	// BatchSize is the rows one activity deletes (0 = DefaultIdempotencyCleanupBatch).
	BatchSize int
	// MaxBatches bounds the batches of one run (0 = DefaultIdempotencyCleanupMaxBatches).
	MaxBatches int
	// Pause is the rest between two full batches (0 = DefaultIdempotencyCleanupPause; negative: none).
	Pause time.Duration
}

// IdempotencyCleanupResult is what one run deleted.
type IdempotencyCleanupResult = activities.IdempotencyCleanSummary

func (in IdempotencyCleanupInput) retention() time.Duration {
	if in.Retention <= 0 {
		return DefaultIdempotencyRetention
	}
	return in.Retention
}

func (in IdempotencyCleanupInput) batch() int {
	if in.BatchSize <= 0 {
		return DefaultIdempotencyCleanupBatch
	}
	return in.BatchSize
}

func (in IdempotencyCleanupInput) pause() time.Duration {
	switch {
	case in.Pause < 0:
		return 0
	case in.Pause == 0:
		return DefaultIdempotencyCleanupPause
	}
	return in.Pause
}

func (in IdempotencyCleanupInput) maxBatches() int {
	if in.MaxBatches <= 0 {
		return DefaultIdempotencyCleanupMaxBatches
	}
	return in.MaxBatches
}
