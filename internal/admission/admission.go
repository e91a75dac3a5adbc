package admission

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
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
//	inv:{SKU}:admitting        the total of the fields: the one GET the fast path and Admit compare with avail
//	inv:{SKU}:admitting:by     hash owner -> units that owner's placements count
//	inv:{SKU}:admitting:lease:<owner>   set with a TTL of admissionLease by Admit and the owner's heartbeat
//
// A process that refuses a buyer on a SKU (Admit, or the fast path's gate) reaps it, at most every
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

// Admission is the units Admit counted for one placement; Done takes them off again.
type Admission struct {
	rs    *Gate
	mu    sync.Mutex
	lines []ordersaga.Line
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

// unadmitLine takes qty off this process's field of sku and off the total (unadmit.lua: never more than the
// field has, so nothing is taken off twice after a reap).
func (r *Gate) unadmitLine(ctx context.Context, sku string, qty int64) error {
	keys := []string{r.rs.AdmittingKey(sku), r.rs.AdmittersKey(sku)}
	return unadmitScript.Run(ctx, r.rdb, keys, qty, r.leases().owner).Err()
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

// heartbeat renews this process's lease of every SKU it counts units of, every renew, and retries what Done
// owes; it ends when there is neither.
func (r *Gate) heartbeat() {
	l := r.leases()
	tick := time.NewTicker(l.renew)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		l.mu.Lock()
		if len(l.held) == 0 && len(l.owed) == 0 {
			l.beating = false
			l.mu.Unlock()
			return
		}
		skus := make([]string, 0, len(l.held))
		for sku := range l.held {
			skus = append(skus, sku)
		}
		owed := maps.Clone(l.owed)
		l.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), l.lease)
		_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, sku := range skus {
				p.Set(ctx, r.rs.AdmissionLeaseKey(sku, l.owner), 1, l.lease)
			}
			return nil
		})
		if err == nil {
			l.renewals.Add(1)
		} // a failed renewal is retried at the next tick; the lease outlives several
		for sku, qty := range owed {
			if r.unadmitLine(ctx, sku, qty) == nil {
				l.mu.Lock()
				if l.owed[sku] -= qty; l.owed[sku] <= 0 {
					delete(l.owed, sku)
				}
				l.mu.Unlock()
			}
		}
		cancel()
	}
}

// reapSoon reaps sku in the background unless this process did within reap or is doing it now: a refusal
// is when a dead process's units matter.
func (r *Gate) reapSoon(sku string) {
	l := r.leases()
	now := time.Now()
	l.mu.Lock()
	if l.reaping[sku] || now.Sub(l.lastReap[sku]) < l.reap {
		l.mu.Unlock()
		return
	}
	l.reaping[sku], l.lastReap[sku] = true, now
	l.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		defer cancel()
		_, _ = r.ReapAdmissions(ctx, sku) // the next refusal tries again
		l.mu.Lock()
		delete(l.reaping, sku)
		l.mu.Unlock()
	}()
}

var reapAdmissions = redis.NewScript(`
for i, owner in ipairs(ARGV) do
  if redis.call('EXISTS', KEYS[2 + i]) == 0 then
    redis.call('HDEL', KEYS[2], owner)
  end
end
local total = 0
local fields = redis.call('HGETALL', KEYS[2])
for i = 1, #fields, 2 do
  local n = tonumber(fields[i + 1])
  if n > 0 then
    total = total + n
  else
    redis.call('HDEL', KEYS[2], fields[i])
  end
end
if total > 0 then
  redis.call('SET', KEYS[1], total, 'KEEPTTL')
else
  redis.call('DEL', KEYS[1], KEYS[2])
end
return total`)

// ReapAdmissions drops the counts of sku's owners whose lease is gone (processes that died) and recounts the
// total from the owners left, which it returns. Two round trips: the owners, then a script given their lease
// keys (so every key it touches is declared, as Redis Cluster requires).
func (r *Gate) ReapAdmissions(ctx context.Context, sku string) (int64, error) {
	owners, err := r.rdb.HKeys(ctx, r.rs.AdmittersKey(sku)).Result()
	if err != nil {
		return 0, fmt.Errorf("reap admissions %s: %w", sku, err)
	}
	keys := []string{r.rs.AdmittingKey(sku), r.rs.AdmittersKey(sku)}
	args := make([]any, len(owners))
	for i, o := range owners {
		keys = append(keys, r.rs.AdmissionLeaseKey(sku, o))
		args[i] = o
	}
	n, err := reapAdmissions.Run(ctx, r.rdb, keys, args...).Int64()
	if err != nil {
		return 0, fmt.Errorf("reap admissions %s: %w", sku, err)
	}
	return n, nil
}

// Admitting returns the units of sku counted as being placed right now.
func (r *Gate) Admitting(ctx context.Context, sku string) (int64, error) {
	n, err := r.rdb.Get(ctx, r.rs.AdmittingKey(sku)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("admitting %s: %w", sku, err)
	}
	return n, nil
}
