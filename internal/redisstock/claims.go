package redisstock

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The idempotency-key markers (ClaimKey) of the order API's sold-out fast path: a marker says "this key may
// have a row in idempotency_keys: do not answer sold out from Redis". Its value is the nonce of the row's
// life and it expires a little after that life does, so a marker may outlive its row (harmless: it only
// keeps that key off the fast path) but never the other way round. The admission gate reads them; the order
// API writes them (ClaimMarkers) and the retention cleanup deletes them (ForgetClaims).

var (
	//go:embed lua/claim_forget.lua
	claimForgetLua    string
	claimForgetScript = redis.NewScript(claimForgetLua)
	//go:embed lua/claim_mark.lua
	claimMarkLua    string
	claimMarkScript = redis.NewScript(claimMarkLua)
)

// legacyClaimValue is the marker value of a row from before migration 0005 (no nonce): such a row has one
// life only (a renewal gives it a nonce), so the value still names it.
const legacyClaimValue = "-"

// ClaimMarker is the marker of one idempotency key's row: Name from (user, key) alone, the row's Nonce ("" for
// a row from before migration 0005) and how long the marker must live (TTL > 0). New says the caller has just
// written that life of the row (inserted, renewed or used it: the life is then the row's current one for at
// least the retention): its marker replaces any earlier life's. Any other caller (a request that found the
// row, the backfill) may have read a life that is over by now, so its marker is set only where there is none,
// or lives longer where it carries the same life (lua/claim_mark.lua): it never replaces a newer life's.
type ClaimMarker struct {
	Name  string
	Nonce string
	TTL   time.Duration
	New   bool
}

// ClaimName is the name of the marker of (user, Idempotency-Key), from the pair alone: "k-" and 32 hex
// characters of sha256("marker" \x00 user \x00 key). It stays the same across the lives of the key's row; the
// marker's value names the life.
func ClaimName(userID, key string) string {
	sum := sha256.Sum256([]byte("marker\x00" + userID + "\x00" + key))
	return "k-" + hex.EncodeToString(sum[:])[:32]
}

func claimValue(nonce string) string {
	if nonce == "" {
		return legacyClaimValue
	}
	return nonce
}

// ClaimMarkers sets the markers (SET when New, else lua/claim_mark.lua), in one pipelined round trip; the
// markers' keys need not share a slot. With AckMarkers(n) it also waits until n replicas hold them, and fails
// with ErrMarkersNotReplicated when fewer do in time (the markers are written on the master all the same).
func (r *Store) ClaimMarkers(ctx context.Context, markers ...ClaimMarker) error {
	others := false
	for _, m := range markers {
		if m.TTL <= 0 {
			return fmt.Errorf("mark idempotency keys: marker %s: TTL %s is not positive", m.Name, m.TTL)
		}
		others = others || !m.New
	}
	if len(markers) == 0 {
		return nil
	}
	if r.markerReplicas > 0 {
		return r.claimMarkersAcked(ctx, markers)
	}
	if others {
		if err := claimMarkScript.Load(ctx, r.rdb).Err(); err != nil {
			return fmt.Errorf("mark idempotency keys: %w", err)
		}
	}
	var calls []scriptCall
	cmds, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, m := range markers {
			if m.New {
				p.Set(ctx, r.ClaimKey(m.Name), claimValue(m.Nonce), m.TTL)
				continue
			}
			c := scriptCall{key: r.ClaimKey(m.Name), args: r.claimMarkArgs(m)}
			c.cmd = claimMarkScript.EvalSha(ctx, p, []string{c.key}, c.args...)
			calls = append(calls, c)
		}
		return nil
	})
	if err != nil {
		err = r.rerunNoScript(ctx, claimMarkScript, cmds, calls)
	}
	if err != nil {
		return fmt.Errorf("mark idempotency keys: %w", err)
	}
	return nil
}

func (r *Store) claimMarkArgs(m ClaimMarker) []any {
	return []any{claimValue(m.Nonce), max(m.TTL.Milliseconds(), 1)}
}

// MarkerAckTimeout bounds the WAIT of a marker write under AckMarkers: a replica that has not acknowledged
// the markers by then is taken for one that does not hold them.
const MarkerAckTimeout = 100 * time.Millisecond

// ErrMarkersNotReplicated is ClaimMarkers' error under AckMarkers(n) when fewer than n replicas acknowledged
// the markers within MarkerAckTimeout: a failover now could lose them.
var ErrMarkersNotReplicated = errors.New("idempotency markers not acknowledged by enough replicas")

// AckMarkers makes ClaimMarkers wait until n replicas of each master involved hold the markers it wrote
// (n = 0, the default: no wait). Replication is asynchronous, so a failover can lose a master's last writes
// while the markers' readiness flag, written long before, survives: the sold-out fast path would then take a
// key with an order for one without state. A marker the replicas acknowledged survives a failover; the order
// API raises the markers' fence for one they did not (internal/placement). Set it before the store is used.
func (r *Store) AckMarkers(n int) *Store {
	r.markerReplicas = n
	return r
}

// claimMarkersAcked is ClaimMarkers under AckMarkers: on each master involved (the one server, or the master of
// each marker's slot on a cluster), one pipeline on one connection writes that master's markers (the script
// by EVAL: a NOSCRIPT inside the pipeline would leave a marker unwritten before the WAIT) and ends with WAIT,
// which counts the replicas that hold that connection's writes. On a cluster those pipelines go to the master's
// own client (as scanSKU's SCAN does), so hooks added to the cluster client alone do not see them.
func (r *Store) claimMarkersAcked(ctx context.Context, markers []ClaimMarker) error {
	byNode := map[string][]ClaimMarker{}
	nodes := map[string]redis.Cmdable{}
	for _, m := range markers {
		var node redis.Cmdable = r.rdb
		addr := ""
		if cc, ok := r.rdb.(*redis.ClusterClient); ok {
			master, err := cc.MasterForKey(ctx, r.ClaimKey(m.Name))
			if err != nil {
				return fmt.Errorf("mark idempotency keys: master of %s: %w", m.Name, err)
			}
			node, addr = master, master.Options().Addr
		}
		nodes[addr] = node
		byNode[addr] = append(byNode[addr], m)
	}
	for addr, ms := range byNode {
		var wait *redis.Cmd
		_, err := nodes[addr].Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, m := range ms {
				if m.New {
					p.Set(ctx, r.ClaimKey(m.Name), claimValue(m.Nonce), m.TTL)
				} else {
					claimMarkScript.Eval(ctx, p, []string{r.ClaimKey(m.Name)}, r.claimMarkArgs(m)...)
				}
			}
			wait = p.Do(ctx, "WAIT", r.markerReplicas, MarkerAckTimeout.Milliseconds())
			return nil
		})
		if err != nil {
			return fmt.Errorf("mark idempotency keys: %w", err)
		}
		if acked, _ := wait.Int64(); acked < int64(r.markerReplicas) {
			where := ""
			if addr != "" {
				where = " on " + addr
			}
			return fmt.Errorf("mark idempotency keys%s: %d of %d replicas acknowledged within %s: %w",
				where, acked, r.markerReplicas, MarkerAckTimeout, ErrMarkersNotReplicated)
		}
	}
	return nil
}

// ForgetClaims deletes each marker that still carries its nonce (lua/claim_forget.lua) and returns how many
// it deleted. One pipelined round trip.
func (r *Store) ForgetClaims(ctx context.Context, markers ...ClaimMarker) (int, error) {
	n, err := r.evalEach(ctx, claimForgetScript, len(markers), func(i int) (string, []any) {
		return r.ClaimKey(markers[i].Name), []any{claimValue(markers[i].Nonce)}
	})
	if err != nil {
		return 0, fmt.Errorf("forget idempotency key markers: %w", err)
	}
	return n, nil
}

// evalEach runs script once per item (one key each, so the keys may lie in any slot) in one pipeline, loading
// the script first, and returns the sum of the scripts' integer results.
func (r *Store) evalEach(ctx context.Context, script *redis.Script, n int, item func(int) (string, []any)) (int, error) {
	if n == 0 {
		return 0, nil
	}
	if err := script.Load(ctx, r.rdb).Err(); err != nil {
		return 0, err
	}
	calls := make([]scriptCall, n)
	cmds, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			key, args := item(i)
			calls[i] = scriptCall{cmd: script.EvalSha(ctx, p, []string{key}, args...), key: key, args: args}
		}
		return nil
	})
	if err != nil {
		err = r.rerunNoScript(ctx, script, cmds, calls)
	}
	if err != nil {
		return 0, err
	}
	sum := 0
	for _, c := range calls {
		v, err := c.cmd.Int()
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// scriptCall is one EVALSHA of a pipeline: its command, its one key and its arguments.
type scriptCall struct {
	cmd  *redis.Cmd
	key  string
	args []any
}

// rerunNoScript is for a pipeline that failed: it runs again by EVAL, in one more pipeline, each of calls
// that a node answered NOSCRIPT (a node that lost its scripts since Load: a replica promoted after a restart,
// a SCRIPT FLUSH), which caches the script there again, and replaces their commands. It returns the first
// error of cmds (the pipeline's commands) that is left.
func (r *Store) rerunNoScript(ctx context.Context, script *redis.Script, cmds []redis.Cmder, calls []scriptCall) error {
	var again []int
	for i, c := range calls {
		if redis.HasErrorPrefix(c.cmd.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		_, _ = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range again {
				calls[i].cmd = script.Eval(ctx, p, []string{calls[i].key}, calls[i].args...)
			}
			return nil
		})
	}
	for _, c := range cmds {
		if ev, ok := c.(*redis.Cmd); ok && redis.HasErrorPrefix(ev.Err(), "NOSCRIPT") {
			continue // run again above
		}
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	for _, i := range again {
		if err := calls[i].cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}
