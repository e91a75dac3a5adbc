package admission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/redis/go-redis/v9"
)

// The order API's sold-out fast path answers 409 from Redis alone, without touching the database, when a SKU
// of the order has too few units left AND the request's Idempotency-Key has no state in the database (a key
// that does must answer as before: a replay of its first answer, or 422 for another body). Redis therefore
// mirrors which keys have a row in idempotency_keys, with one marker per key, set after the row is written.
// A Redis that lost its data (a restart without persistence) loses the markers too: the "ready" key says the
// markers are complete, and is set only by a backfill from the database that ran entirely on this Redis
// (BeginClaimsBackfill's token still there at FinishClaimsBackfill). Until then the fast path stays off.
//
// A marker's value is the nonce of its row's life and it expires a little after that life (IDEMPOTENCY_RETENTION):
// a marker may outlive its row (the key only misses the fast path), never the other way round.
//
// Keys: prefix+"idem:"+marker per key (the marker is named from (user, key) alone), and
// prefix+"{idem}:v2:ready" / prefix+"{idem}:v2:filling" (one hash slot, for the compare-and-set).

// FastCheck is what Redis says about one order request, from one round trip.
type FastCheck struct {
	// Ready is true when the markers are complete (else Claimed means nothing and the fast path is off).
	Ready bool
	// Claimed is true when the request's key has a marker: its state is in the database.
	Claimed bool
	// SoldOutSKU is the first line's SKU that Redis has loaded with fewer units than the line asks for ("" when
	// Redis does not say no; a SKU not loaded is left to the workflow, which fails closed).
	SoldOutSKU string
	// Limit is, when no line is sold out, the first line that would take its user's units of the SKU past the
	// SKU's per-user limit, as Redis counts them (nil when none).
	Limit *ordersaga.LimitExceededError
	// Shards is, per line's SKU whose stock Redis has split (redisstock.ShardsKey), its shard count: the
	// units left are the sum of the shards' counters, and the order placed walks that many shards.
	Shards map[string]int
}

// Refuse reports whether the fast path may answer sold out (SoldOutSKU) or limit exceeded (Limit): Redis
// says no, and the key has no state to answer.
func (c FastCheck) Refuse() bool {
	return c.Ready && !c.Claimed && (c.SoldOutSKU != "" || c.Limit != nil)
}

// CheckOrder reads the readiness of the markers, the marker of one key, the available units of every line's
// SKU, and the SKU's per-user limit with the units userID holds of it. Concurrent calls share pipelined round
// trips (a flash sale's rejections are thousands per second on one SKU): a call joins the next round trip
// that leaves, at most maxCheckTrips in flight, so a lone call costs one round trip and a crowd a fraction of
// one each.
func (r *Gate) CheckOrder(ctx context.Context, marker, userID string, lines []ordersaga.Line) (FastCheck, error) {
	req := &checkReq{marker: marker, user: userID, lines: lines, done: make(chan struct{})}
	r.checks.add(req)
	select {
	case <-req.done:
		return req.res, req.err
	case <-ctx.Done():
		return FastCheck{}, fmt.Errorf("check order: %w", ctx.Err())
	}
}

const (
	maxCheckTrips = 2                // round trips of CheckOrder in flight at once (bench pair 1: 2 beat 1, 4 and 8)
	maxCheckBatch = 256              // calls answered by one round trip at most
	checkTimeout  = 10 * time.Second // of one round trip (the client's own read/write timeouts come first)
)

type checkReq struct {
	marker string
	user   string
	lines  []ordersaga.Line
	held   []*redis.StringSliceCmd // per line, the user's units of its SKU (HVALS of the user's count)
	res    FastCheck
	err    error
	done   chan struct{}
}

// checkBatcher gathers concurrent CheckOrder calls: a caller queues its request and wakes an idle sender or,
// when fewer than maxCheckTrips senders run, starts one; each sender takes what is queued, sends it as one
// pipeline, and goes on until the queue is empty. Nothing waits for a batch to fill.
//
// A sender whose queue is empty waits up to checkLinger for more before it ends. A flood's checks come in
// bursts a round trip apart, and a sender started afresh for each burst grew its stack again through
// go-redis's pipeline (a goroutine starts small): that growth took 4 % of the local stack's CPU at 15,000
// sold-out requests/s (BENCHMARKS.md, "What each change bought").
type checkBatcher struct {
	rs      *Gate
	mu      sync.Mutex
	queue   []*checkReq
	senders int           // running, idle ones included
	idle    int           // senders waiting for work, not yet woken
	wake    chan struct{} // one token per idle sender woken (sent under mu, so never blocks)
	linger  time.Duration // how long an idle sender waits before it ends (0: checkLinger)
	seen    skuMemory     // the SKUs as the last trip read them
}

// checkLinger is how long a sender with nothing to send waits for more before it ends.
const checkLinger = time.Second

func (b *checkBatcher) add(req *checkReq) {
	b.mu.Lock()
	b.queue = append(b.queue, req)
	if b.idle > 0 {
		b.idle--
		b.wake <- struct{}{}
		b.mu.Unlock()
		return
	}
	start := b.senders < maxCheckTrips
	if start {
		b.senders++
	}
	b.mu.Unlock()
	if start {
		go b.send()
	}
}

func (b *checkBatcher) send() {
	linger := b.linger
	if linger <= 0 {
		linger = checkLinger
	}
	timer := time.NewTimer(linger) // reset at each wait
	timer.Stop()
	for {
		b.mu.Lock()
		n := min(len(b.queue), maxCheckBatch)
		if n == 0 {
			if !b.waitForWork(linger, timer) {
				return
			}
			continue
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil
		}
		b.mu.Unlock()
		b.rs.checkBatch(batch)
		for _, req := range batch {
			close(req.done)
		}
	}
}

// waitForWork is an idle sender's wait, entered with mu held and left without it: true when add woke it
// (there is work, or another sender took it first), false when linger passed first and the sender is done.
func (b *checkBatcher) waitForWork(linger time.Duration, timer *time.Timer) bool {
	b.idle++
	b.mu.Unlock()
	timer.Reset(linger)
	select {
	case <-b.wake:
		timer.Stop()
		return true
	case <-timer.C:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.wake: // add counted this sender out of idle just before the timer fired: its token is here
		return true
	default:
		b.idle--
		b.senders--
		return false
	}
}

// checkBatch answers a batch in one pipelined round trip: EXISTS of ready once, EXISTS of each marker, GET of
// each SKU's counter and of its per-user limit once, and per line the
// user's units of the SKU where the answer may need them (skuMemory.needsHeld). A request whose answer needs
// units the trip did not read (its SKU came back in stock or got a limit since the trip before) is checked
// again, alone with the others of its kind, in a second trip that reads them all: every answer comes from one
// trip's reads.
func (r *Gate) checkBatch(batch []*checkReq) {
	if again := r.checkTrip(batch, false); len(again) > 0 {
		r.checkTrip(again, true)
	}
}

// checkTrip is one round trip of checkBatch: it answers the batch's requests and returns those it could not
// (the user's units not read, and needed), unless every line's units were read (all).
func (r *Gate) checkTrip(batch []*checkReq, all bool) (again []*checkReq) {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	var (
		ready   *redis.IntCmd
		claimed = make([]*redis.IntCmd, len(batch))
		avail   = map[string]*shardReads{}
		limits  = map[string]*redis.StringCmd{}
	)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		seen := &r.checks.seen
		seen.mu.Lock() // held while the commands are queued: nothing is sent before the function returns
		defer seen.mu.Unlock()
		ready = p.Exists(ctx, r.rs.ClaimsReadyKey())
		for i, req := range batch {
			claimed[i] = p.Exists(ctx, r.rs.ClaimKey(req.marker))
			req.held = make([]*redis.StringSliceCmd, len(req.lines))
			for j, l := range req.lines {
				if avail[l.SKU] == nil {
					avail[l.SKU] = seen.readShards(ctx, p, r.rs, l.SKU)
					limits[l.SKU] = p.Get(ctx, r.rs.LimitKey(l.SKU))
				}
				if all || seen.needsHeld(l) {
					req.held[j] = p.HVals(ctx, r.rs.UserKey(l.SKU, req.user))
				}
			}
		}
		return nil
	})
	// Pipelined returns the first command's error only, and redis.Nil (a SKU not loaded, no count) is an
	// answer: every command's own error is checked below, absence allowed only where it means something.
	if err != nil && !errors.Is(err, redis.Nil) {
		for _, req := range batch {
			req.err = fmt.Errorf("check order: %w", err)
		}
		return nil
	}
	if err := ready.Err(); err != nil {
		for _, req := range batch {
			req.err = fmt.Errorf("check order: markers ready: %w", err)
		}
		return nil
	}
	r.checks.seen.remember(avail, limits)
	for i, req := range batch {
		req.res, req.err = checkAnswer(req, ready.Val() > 0, claimed[i], avail, limits)
		if errors.Is(req.err, errHeldNotRead) {
			req.res, req.err = FastCheck{}, nil
			again = append(again, req)
		}
	}
	return again
}

// errHeldNotRead is checkAnswer's when the answer needs the user's units of a SKU that the trip left out.
var errHeldNotRead = errors.New("check order: the user's units were not read")

// checkAnswer reads one request's answer from the batch's commands.
func checkAnswer(req *checkReq, ready bool, claimed *redis.IntCmd, avail map[string]*shardReads, limits map[string]*redis.StringCmd) (FastCheck, error) {
	if err := claimed.Err(); err != nil {
		return FastCheck{}, fmt.Errorf("check order: marker: %w", err)
	}
	res := FastCheck{Ready: ready, Claimed: claimed.Val() > 0}
	for j, l := range req.lines {
		n, shards, err := avail[l.SKU].sum()
		if errors.Is(err, errShardsNotRead) {
			return FastCheck{}, errHeldNotRead // read again, with the shard count this trip learnt
		}
		if errors.Is(err, redis.Nil) {
			continue // not loaded: left to the workflow, which fails closed
		}
		if shards > 1 {
			if res.Shards == nil {
				res.Shards = map[string]int{}
			}
			res.Shards[l.SKU] = shards
		}
		if err != nil {
			return FastCheck{}, fmt.Errorf("check order: available %s: %w", l.SKU, err)
		}
		if n < l.Qty {
			res.SoldOutSKU = l.SKU
			res.Limit = nil
			return res, nil
		}
		if res.Limit == nil {
			le, err := limitAnswer(l, limits[l.SKU], req.held[j])
			if err != nil {
				return FastCheck{}, err
			}
			res.Limit = le
		}
	}
	return res, nil
}

// limitAnswer is the refusal of line l when its user's units of the SKU (held, the user's count) would pass
// the SKU's per-user limit (nil when the SKU has none or the line fits).
func limitAnswer(l ordersaga.Line, limit *redis.StringCmd, held *redis.StringSliceCmd) (*ordersaga.LimitExceededError, error) {
	max, err := limit.Int64()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("check order: per-user limit %s: %w", l.SKU, err)
	}
	if max <= 0 {
		return nil, nil
	}
	if held == nil {
		return nil, errHeldNotRead
	}
	vals, err := held.Result()
	if err != nil {
		return nil, fmt.Errorf("check order: user's units of %s: %w", l.SKU, err)
	}
	var sum int64
	for _, v := range vals {
		q, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("check order: user's units of %s: %q: %w", l.SKU, v, err)
		}
		sum += q
	}
	if sum+l.Qty > max {
		return &ordersaga.LimitExceededError{SKU: l.SKU, Limit: max, Held: sum}, nil
	}
	return nil, nil
}

// ClaimMarker is the marker of one key's row: its name, its life's nonce and its TTL (redisstock.ClaimMarker).
type ClaimMarker = redisstock.ClaimMarker

// ErrMarkersNotReplicated is MarkClaimed's error when the store asks replicas to acknowledge the markers and
// too few did in time (redisstock.Store.AckMarkers): the markers are on the master, and a failover could lose them.
var ErrMarkersNotReplicated = redisstock.ErrMarkersNotReplicated

// ClaimName is the marker name of (user, Idempotency-Key): redisstock.ClaimName.
func ClaimName(userID, key string) string { return redisstock.ClaimName(userID, key) }

// MarkClaimed sets the markers of keys that have a row in idempotency_keys (a new life's, or a new last use's,
// over any earlier one's; the others only where there is none, or longer where the same life's is):
// redisstock.Store.ClaimMarkers.
func (r *Gate) MarkClaimed(ctx context.Context, markers ...ClaimMarker) error {
	return r.rs.ClaimMarkers(ctx, markers...)
}

// ClaimsReady reports whether the markers are complete.
func (r *Gate) ClaimsReady(ctx context.Context) (bool, error) {
	n, err := r.rdb.Exists(ctx, r.rs.ClaimsReadyKey()).Result()
	if err != nil {
		return false, fmt.Errorf("idempotency markers ready: %w", err)
	}
	return n > 0, nil
}

// BeginClaimsBackfill starts a backfill of the markers: it returns the token FinishClaimsBackfill checks.
// Concurrent backfills (several API processes) are harmless: whichever finishes while its token is current
// sets ready, and each of them covered every row written before it began.
func (r *Gate) BeginClaimsBackfill(ctx context.Context) (string, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	if err := r.rdb.Set(ctx, r.rs.ClaimsFillingKey(), token, 0).Err(); err != nil {
		return "", fmt.Errorf("begin idempotency marker backfill: %w", err)
	}
	return token, nil
}

var finishBackfill = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[2], '1')
  return 1
end
return 0`)

// FinishClaimsBackfill sets ready when token is still the current backfill's: if Redis lost its data since
// BeginClaimsBackfill, the token is gone with the markers written meanwhile, and ready stays unset.
func (r *Gate) FinishClaimsBackfill(ctx context.Context, token string) (bool, error) {
	n, err := finishBackfill.Run(ctx, r.rdb, []string{r.rs.ClaimsFillingKey(), r.rs.ClaimsReadyKey()}, token).Int64()
	if err != nil {
		return false, fmt.Errorf("finish idempotency marker backfill: %w", err)
	}
	return n == 1, nil
}

// Unreachable reports whether an error of the Gate's calls says Redis could not be reached: a connection
// refused, reset or timed out, Redis loading its data (redisstock.ConnectionFailed). A busy pool, the caller's
// deadline and Redis's own answers are not.
func Unreachable(err error) bool { return redisstock.ConnectionFailed(err) }
