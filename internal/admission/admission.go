package admission

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
)

var (
	//go:embed lua/unadmit.lua
	unadmitLua    string
	unadmitScript = redis.NewScript(unadmitLua)
)

// Gate is the order API's admission gate and its idempotency-key markers, in the Redis the stock store uses
// (their keys are in redisstock's key layout). Only the order API uses it: the worker never links it.
type Gate struct {
	rs        *redisstock.Store
	rdb       redis.UniversalClient
	checks    checkBatcher    // CheckOrder's round trips, shared by concurrent callers
	admission admissionLeases // Admit's lease of this process
	rules     LineRules       // the line's settings (SetLineRules)
	pace      linePace        // the lines' admissions per second, as this process measures them
	freed     freed           // wakes this process's requests in a line when it frees units (Done)
}

// New builds the gate on the stock store's client and key layout.
func New(rs *redisstock.Store) *Gate {
	g := &Gate{rs: rs, rdb: rs.Client()}
	g.checks.rs, g.checks.wake = g, make(chan struct{}, maxCheckTrips)
	g.checks.seen.skus = map[string]skuSeen{}
	g.SetLineRules(LineRules{})
	return g
}

// Stock is the stock store the gate reads the counters of.
func (r *Gate) Stock() *redisstock.Store { return r.rs }

// The admission gate counts, per SKU, the units of orders the API processes are placing right now, and
// frees the units of a process that died within seconds, under any traffic. Each process (each Gate)
// has an owner ID and counts its units in its own field of a hash; its field stays only while its lease key,
// which its heartbeat renews every admissionRenew while it counts units, lives:
//
//	inv:{SKU}:admitting        the total of the fields: what the line (Admit) compares with avail
//	inv:{SKU}:admitting:by     hash owner -> units that owner's placements count
//	inv:{SKU}:admitting:lease:<owner>   set with a TTL of admissionLease by Admit and the owner's heartbeat
//
// A process that puts a buyer of a SKU in line (Admit) reaps it, at most every
// admissionReapEvery: the fields of owners whose lease is gone go, and the total is recounted from the
// fields. Only an owner renews its lease, so refused buyers retrying keep nothing of a dead process alive. All
// keys of a SKU share its hash tag.
const (
	admissionLease     = 5 * time.Second // a process's heartbeat may stall this long before its count is reaped
	admissionRenew     = time.Second     // how often a process that counts units renews its leases
	admissionReapEvery = time.Second     // how often at most one process reaps one SKU
)

// admissionLeases is this process's side of the admission gate: its owner ID, the units its admissions
// count per SKU (the leases its heartbeat renews), the units Done failed to take off (retried by the
// heartbeat) and when it last reaped each SKU. The zero value is ready: init runs on first use.
type admissionLeases struct {
	once               sync.Once
	owner              string
	lease, renew, reap time.Duration
	stop               chan struct{} // closed when the process stops renewing (tests: a kill)
	mu                 sync.Mutex
	held, owed         map[string]int64
	beating, killed    bool
	lastReap           map[string]time.Time
	reaping            map[string]bool
	renewals           atomic.Int64 // heartbeats that renewed every lease held: a test lets time pass after one
}

func (r *Gate) leases() *admissionLeases {
	l := &r.admission
	l.once.Do(func() {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		l.owner = hex.EncodeToString(b)
		if l.lease <= 0 {
			l.lease, l.renew, l.reap = admissionLease, admissionRenew, admissionReapEvery
		}
		l.stop = make(chan struct{})
		l.held, l.owed = map[string]int64{}, map[string]int64{}
		l.lastReap, l.reaping = map[string]time.Time{}, map[string]bool{}
	})
	return l
}

// Admission is the units Admit counted for one placement; Done takes them off again, GiveBack also puts the
// request's ticket back in its lines.
type Admission struct {
	rs     *Gate
	mu     sync.Mutex
	lines  []ordersaga.Line
	ticket Ticket // the request's ticket, with its first arrival as the lines had it
}

// Done takes the admitted units off the counts; what cannot be taken off now (Redis unreachable) the
// heartbeat retries while this process lives. Done may be called more than once and concurrently.
func (a *Admission) Done(ctx context.Context) {
	if a == nil {
		return
	}
	a.mu.Lock()
	lines := a.lines
	a.lines = nil
	a.mu.Unlock()
	r := a.rs
	l := r.leases()
	for _, line := range lines {
		err := r.unadmitLine(ctx, line.SKU, line.Qty)
		l.release(line.SKU, line.Qty, err != nil)
		r.freed.wake(line.SKU)
	}
}

// GiveBack takes the admitted units off, as Done, and puts the request's ticket back in its lines at its first
// arrival, due back within MaxRetryAfter (the longest Retry-After any answer gives): a request admitted and
// then answered to come back without being placed (a store unreachable before its order started) keeps its
// place, ahead of every later arrival, while its holder comes back in time.
func (a *Admission) GiveBack(ctx context.Context) {
	if a == nil {
		return
	}
	a.mu.Lock()
	lines := a.lines
	a.mu.Unlock()
	a.rs.giveBack(ctx, a, a.ticket, lines, a.ticket.Arrived, MaxRetryAfter)
}

// unadmitLine takes qty off this process's field of sku and off the total (unadmit.lua: never more than the
// field has, so nothing is taken off twice after a reap).
func (r *Gate) unadmitLine(ctx context.Context, sku string, qty int64) error {
	return unadmitScript.Run(ctx, r.rdb, r.rs.AdmissionKeys(sku), qty, r.leases().owner).Err()
}

// hold notes units this process counts, and starts its heartbeat when it had none.
func (l *admissionLeases) hold(r *Gate, sku string, qty int64) {
	l.mu.Lock()
	l.held[sku] += qty
	start := !l.beating && !l.killed
	l.beating = l.beating || start
	l.mu.Unlock()
	if start {
		go r.heartbeat()
	}
}

// release notes units this process no longer counts; owed when Done could not take them off in Redis.
func (l *admissionLeases) release(sku string, qty int64, owed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[sku] -= qty; l.held[sku] <= 0 {
		delete(l.held, sku)
	}
	if owed {
		l.owed[sku] += qty
	}
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
				r.giveBack(undo, a, t, lines[:i], arrived, time.Second)
				return nil, Turn{}, fmt.Errorf("admit %s: %w", line.SKU, err)
			}
			extra = more
		}
		now := time.Now()
		keys := r.rs.LineScriptKeys(line.SKU, l.owner)
		freed := r.Freed(line.SKU) // before the call: a free after it wakes the waiter
		res, err := lineScript.Run(ctx, r.rdb, keys, t.ID, line.Qty, now.UnixMilli(), arrived.UnixMilli(),
			r.pace.of(line.SKU), int64(MaxRetryAfter/time.Second), r.rules.Grace.Milliseconds(), r.rules.PerSKU,
			l.owner, l.lease.Milliseconds(), ttl.Milliseconds(), extra).Int64Slice()
		if err == nil && len(res) != 8 {
			err = fmt.Errorf("line.lua answered %d values, want 8", len(res))
		}
		if err != nil {
			r.giveBack(undo, a, t, lines[:i], arrived, time.Second)
			return nil, Turn{}, fmt.Errorf("admit %s: %w", line.SKU, err)
		}
		code, position, length, admitted, gone, first, retry, wait := res[0], res[1], res[2], res[3], res[4], res[5], res[6], res[7]
		turn.Abandoned += gone
		turn.SKU, turn.Length = line.SKU, length
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
			return nil, Turn{SKU: line.SKU, SoldOut: true, Length: length, Abandoned: turn.Abandoned}, nil
		default:
			r.giveBack(undo, a, t, lines[:i], time.UnixMilli(first), time.Second) // the caller answers or asks again at once
			r.reapSoon(line.SKU)
			if position >= wakeAhead {
				freed = nil
			}
			return nil, Turn{
				SKU: line.SKU, Position: position, Length: length, RetryAfter: time.Duration(retry) * time.Second,
				Wait: time.Duration(wait) * time.Millisecond, Abandoned: turn.Abandoned, Freed: freed,
			}, nil
		}
	}
	turn.Admitted = true
	a.ticket = Ticket{ID: t.ID, Arrived: arrived}
	return a, turn, nil
}

// giveBack undoes the lines a request had counted, and puts its ticket back in their lines with its first
// arrival, due back within within.
func (r *Gate) giveBack(ctx context.Context, a *Admission, t Ticket, counted []ordersaga.Line, arrived time.Time, within time.Duration) {
	a.Done(ctx)
	if t.ID == "" || len(counted) == 0 {
		return
	}
	due := time.Now().Add(within).UnixMilli()
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
			p.HIncrBy(ctx, r.rs.LineMetaKey(line.SKU), "left", 1) // at most one too many: positions only drop sooner
		}
		return nil
	}) // a ticket left behind is dropped as abandoned when the front reaches it
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
