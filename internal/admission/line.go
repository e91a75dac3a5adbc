package admission

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
)

var (
	//go:embed lua/line.lua
	lineLua    string
	lineScript = redis.NewScript(lineLua)
	//go:embed lua/drop_line.lua
	dropLineLua    string
	dropLineScript = redis.NewScript(dropLineLua)
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
	// SKU is the line that did not admit the request; SoldOut is true when that SKU has fewer units left
	// than the request asks for (its ticket left every line), else the request holds its ticket there.
	SKU     string
	SoldOut bool
	// Position is the live tickets ahead of the request's in SKU's line (those not yet found abandoned).
	Position int64
	// Line is the last line asked (SKU when refused), Length its tickets after the call.
	Line   string
	Length int64
	// RetryAfter is when the holder is due back (the line drops its ticket Grace after); Wait is the
	// estimated wait for its turn, from the line's pace.
	RetryAfter, Wait time.Duration
	// Waited is, when admitted, how long since the ticket's first arrival (0 without a ticket or a line).
	Waited time.Duration
	// Abandoned is how many tickets this call found abandoned and dropped.
	Abandoned int64
}

// Admit asks the lines of the request's SKUs for its turn: per line, in one script (lua/line.lua), it takes
// or keeps the ticket, drops the abandoned tickets at the front, and when the turn is the ticket's counts the
// line's units as being placed (inv:{SKU}:admitting, this process's field, its lease) and takes the ticket out.
// A line not in its turn undoes the lines counted before it (their tickets go back with their first arrival)
// and is returned in Turn; a sold-out line takes the ticket out of every line. A SKU Redis has not loaded is
// admitted uncounted (the workflow fails closed). shards is the shard count of the SKUs whose stock is split
// (nil: none): their units left are the sum of the shards'. The caller calls Done on the Admission once the
// reservation is decided or the wait given up; the units stay counted while this process lives (its
// heartbeat renews its lease) and are reaped within about admissionLease of its death. ttl is how long the
// SKU's keys outlive its last admission (longer than any placement).
func (r *Gate) Admit(ctx context.Context, t Ticket, lines []ordersaga.Line, shards map[string]int, ttl time.Duration) (*Admission, Turn, error) {
	l := r.leases()
	ttl = max(ttl, l.lease)
	a := &Admission{rs: r}
	undo := context.WithoutCancel(ctx)
	arrived := t.Arrived
	if arrived.IsZero() {
		arrived = time.Now()
	}
	var turn Turn
	for i, line := range lines {
		var extra int64
		if n := shards[line.SKU]; n > 1 {
			more, err := r.rs.OtherShardsAvailable(ctx, line.SKU, n)
			if err != nil {
				r.giveBack(undo, a, t, lines[:i], arrived)
				return nil, Turn{}, fmt.Errorf("admit %s: %w", line.SKU, err)
			}
			extra = more
		}
		now := time.Now()
		keys := []string{
			r.rs.AvailKey(line.SKU), r.rs.AdmittingKey(line.SKU), r.rs.AdmittersKey(line.SKU),
			r.rs.AdmissionLeaseKey(line.SKU, l.owner), r.rs.LineKey(line.SKU), r.rs.LineHoldersKey(line.SKU),
			r.rs.LineAdmittedKey(line.SKU),
		}
		res, err := lineScript.Run(ctx, r.rdb, keys, t.ID, line.Qty, now.UnixMilli(), arrived.UnixMilli(),
			r.pace.of(line.SKU), int64(MaxRetryAfter/time.Second), r.rules.Grace.Milliseconds(), r.rules.PerSKU,
			l.owner, l.lease.Milliseconds(), ttl.Milliseconds(), extra).Int64Slice()
		if err == nil && len(res) != 7 {
			err = fmt.Errorf("line.lua answered %d values, want 7", len(res))
		}
		if err != nil {
			r.giveBack(undo, a, t, lines[:i], arrived)
			return nil, Turn{}, fmt.Errorf("admit %s: %w", line.SKU, err)
		}
		code, position, length, admitted, gone, first, retry := res[0], res[1], res[2], res[3], res[4], res[5], res[6]
		turn.Abandoned += gone
		turn.Line, turn.Length = line.SKU, length
		if code == 1 || code == 0 {
			r.pace.note(line.SKU, admitted, now)
		}
		switch code {
		case 1:
			a.lines = append(a.lines, line)
			l.hold(r, line.SKU, line.Qty)
			if first > 0 && t.ID != "" {
				arrived = time.UnixMilli(first)
				turn.Waited = max(turn.Waited, now.Sub(arrived))
			}
		case 2:
			// Not loaded: admitted uncounted.
		case 3:
			a.Done(undo)
			r.leave(undo, t, lines)
			return nil, Turn{SKU: line.SKU, SoldOut: true, Line: line.SKU, Length: length, Abandoned: turn.Abandoned}, nil
		default:
			r.giveBack(undo, a, t, lines[:i], time.UnixMilli(first))
			r.reapSoon(line.SKU)
			pace := r.pace.of(line.SKU)
			return nil, Turn{
				SKU: line.SKU, Position: position, Line: line.SKU, Length: length, RetryAfter: time.Duration(retry) * time.Second,
				Wait:      time.Duration(float64(position+1) / pace * float64(time.Second)),
				Abandoned: turn.Abandoned,
			}, nil
		}
	}
	return a, turn, nil
}

// giveBack undoes the lines a refused request had counted, and puts its ticket back in their lines with its
// first arrival (due back within a second: the caller answers or asks again at once).
func (r *Gate) giveBack(ctx context.Context, a *Admission, t Ticket, counted []ordersaga.Line, arrived time.Time) {
	a.Done(ctx)
	if t.ID == "" || len(counted) == 0 {
		return
	}
	due := time.Now().Add(time.Second).UnixMilli()
	_, _ = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, line := range counted {
			p.ZAddNX(ctx, r.rs.LineKey(line.SKU), redis.Z{Score: float64(arrived.UnixMilli()), Member: t.ID})
			p.HSet(ctx, r.rs.LineHoldersKey(line.SKU), t.ID, fmt.Sprintf("%d:%d", due, line.Qty))
		}
		return nil
	}) // a ticket not put back only loses its place: the request is answered in line and comes back
}

// leave takes a request's ticket out of its SKUs' lines (it was answered sold out: it does not come back).
func (r *Gate) leave(ctx context.Context, t Ticket, lines []ordersaga.Line) {
	if t.ID == "" {
		return
	}
	_, _ = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, line := range lines {
			p.ZRem(ctx, r.rs.LineKey(line.SKU), t.ID)
			p.HDel(ctx, r.rs.LineHoldersKey(line.SKU), t.ID)
		}
		return nil
	}) // a ticket left behind is dropped as abandoned when the front reaches it
}

// DropSoldOutLine drops sku's line in the background once the SKU has no unit left (lua/drop_line.lua), at
// most once per admissionReapEvery per SKU in this process: the fast path answers its holders sold out
// before they reach the line, so its tickets would otherwise wait for their keys' life to end. dropped is
// called with the tickets dropped when the line went (not when it stays).
func (r *Gate) DropSoldOutLine(sku string, dropped func(n int64)) {
	l := r.leases()
	key := "line:" + sku
	now := time.Now()
	l.mu.Lock()
	if l.reaping[key] || now.Sub(l.lastReap[key]) < l.reap {
		l.mu.Unlock()
		return
	}
	l.reaping[key], l.lastReap[key] = true, now
	l.mu.Unlock()
	go func() {
		defer func() {
			l.mu.Lock()
			delete(l.reaping, key)
			l.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		defer cancel()
		keys := []string{r.rs.AvailKey(sku), r.rs.ShardsKey(sku), r.rs.LineKey(sku), r.rs.LineHoldersKey(sku)}
		if n, err := dropLineScript.Run(ctx, r.rdb, keys).Int64(); err == nil && n >= 0 {
			dropped(n)
		} // a failure leaves the line to its keys' life
	}()
}

// Line is a SKU's line as Redis has it: its tickets, oldest first (tests and operators).
func (r *Gate) Line(ctx context.Context, sku string) ([]string, error) {
	ids, err := r.rdb.ZRange(ctx, r.rs.LineKey(sku), 0, -1).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("line of %s: %w", sku, err)
	}
	return ids, nil
}

// linePace measures, per SKU, the admissions per second of its line (from the line's counter, as this
// process's calls read it), smoothed: the estimated wait and the Retry-After of a ticket come from it.
type linePace struct {
	mu   sync.Mutex
	skus map[string]*skuPace
}

type skuPace struct {
	count int64
	at    time.Time
	rate  float64
}

// of is sku's pace (defaultPace until measured; never below one admission in five seconds).
func (p *linePace) of(sku string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.skus[sku]
	if s == nil || s.rate == 0 {
		return defaultPace
	}
	return math.Max(s.rate, 0.2)
}

// note records that sku's line had admitted count tickets at now.
func (p *linePace) note(sku string, count int64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.skus == nil {
		p.skus = map[string]*skuPace{}
	}
	s := p.skus[sku]
	switch {
	case s == nil:
		p.skus[sku] = &skuPace{count: count, at: now}
	case count < s.count:
		*s = skuPace{count: count, at: now} // the counter expired or Redis lost it
	case now.Sub(s.at) >= time.Second:
		rate := float64(count-s.count) / now.Sub(s.at).Seconds()
		if s.rate == 0 {
			s.rate = rate
		} else {
			s.rate = (s.rate + rate) / 2
		}
		s.count, s.at = count, now
	}
}

// freed wakes the requests of this process waiting in a SKU's line when units of it free here.
type freed struct {
	mu   sync.Mutex
	skus map[string]chan struct{}
}

// Freed returns a channel closed when this process next frees units of sku (an admission's Done): a request
// in the line waits on it, and on a timer for the frees of other processes.
func (r *Gate) Freed(sku string) <-chan struct{} {
	f := &r.freed
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.skus == nil {
		f.skus = map[string]chan struct{}{}
	}
	c := f.skus[sku]
	if c == nil {
		c = make(chan struct{})
		f.skus[sku] = c
	}
	return c
}

func (f *freed) wake(sku string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.skus[sku]; c != nil {
		close(c)
		delete(f.skus, sku)
	}
}
