package admission

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/line.lua
	lineLua    string
	lineScript = redis.NewScript(lineLua)
)

// The line at the front door. A placement of a new key is counted by the admission gate only in its turn:
// every SKU has one line in Redis, shared by every API process (its keys carry the SKU's hash tag: one
// slot on a cluster), in which a request that cannot be placed now holds a ticket from its first arrival
// (named by its key's marker, so a retry with the same Idempotency-Key, on any process, keeps it). Units
// that free (a placement decided, a unit given back) go to the oldest live ticket: the line never counts a
// request while a live ticket ahead of it waits for the same units. A ticket lives while its holder comes
// back when told (Retry-After) plus LineRules.Grace; after that the line drops it and waits for it no more.
// The line knows the stock: once the SKU has fewer units left than a ticket asks for, its next call is
// answered sold out and the ticket leaves. lua/line.lua is the whole rule.

// DefaultPerSKU is how many units of one SKU the deployment places at once by default (PLACE_PER_SKU).
const DefaultPerSKU = 64

// DefaultGrace is how long past the time it was told to come back a ticket's holder may be late before the
// line drops the ticket, by default (LINE_GRACE).
const DefaultGrace = 5 * time.Second

// MaxRetryAfter is the longest Retry-After the line gives: a ticket far back is told to come back when its
// turn may be near, at most this late.
const MaxRetryAfter = 5 * time.Second

// wakeAhead is how near the front of its line a request must be (fewer live tickets ahead) to be woken by
// this process's frees (Turn.Freed): each wake is a call that ranks the line, and one unit freed needs only
// the front.
const wakeAhead = 2

// defaultPace is the admissions per second a SKU's line is assumed to make before this process has measured
// it (the estimated wait and Retry-After of its first answers).
const defaultPace = 20.0

// LineRules are the line's settings; every process of a deployment must have the same.
type LineRules struct {
	PerSKU int64         // units of one SKU being placed at once across the deployment (0: DefaultPerSKU)
	Grace  time.Duration // how late a holder may come back before it loses its ticket (0: DefaultGrace)
}

// SetLineRules sets the line's rules. Call it before the gate is used.
func (r *Gate) SetLineRules(l LineRules) {
	if l.PerSKU <= 0 {
		l.PerSKU = DefaultPerSKU
	}
	if l.Grace <= 0 {
		l.Grace = DefaultGrace
	}
	r.rules = l
}

// Ticket is a request's place in the lines of its SKUs: ID names it (the key's marker; "" for a request
// that holds no ticket: it is admitted only behind every live ticket), Arrived is its first arrival (a
// ticket already in a line keeps its own).
type Ticket struct {
	ID      string
	Arrived time.Time
}

// Turn is what the lines said of a request that Admit did not admit, or, when it did, how long it waited.
type Turn struct {
	// Admitted is true when Admit admitted the request. SKU is the line the turn speaks of: the one that did
	// not admit the request, else the last one asked; Length is its tickets after the call. SoldOut is true
	// when SKU has fewer units left than the request asks for (its ticket left every line); a request refused
	// and not sold out holds its ticket in SKU's line.
	Admitted bool
	SKU      string
	Length   int64
	SoldOut  bool
	// Position is the live tickets ahead of the request's in SKU's line (those not yet found abandoned).
	Position int64
	// RetryAfter is when the holder is due back (the line drops its ticket Grace after); Wait is the
	// estimated wait for its turn, from the line's pace (lua/line.lua computes both).
	RetryAfter, Wait time.Duration
	// Waited is, when admitted, how long since the ticket's first arrival (0 without a ticket or a line).
	Waited time.Duration
	// Abandoned is how many tickets this call found abandoned and dropped.
	Abandoned int64
	// Freed is, when the request is in line near the front (fewer than wakeAhead live tickets ahead), closed
	// once this process next frees units of SKU; nil further back. A request waiting in the server waits on it
	// (and on a timer, for the frees of other processes).
	Freed <-chan struct{}
}

// Line is a SKU's line as Redis has it: its tickets, oldest first (tests and operators).
func (r *Gate) Line(ctx context.Context, sku string) ([]string, error) {
	ids, err := r.rdb.ZRange(ctx, r.rs.LineKey(sku), 0, -1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("line of %s: %w", sku, err)
	}
	return ids, nil
}
