package redisstock

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
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
// markers' keys need not share a slot.
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
	if others {
		if err := claimMarkScript.Load(ctx, r.rdb).Err(); err != nil {
			return fmt.Errorf("mark idempotency keys: %w", err)
		}
	}
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, m := range markers {
			if m.New {
				p.Set(ctx, r.ClaimKey(m.Name), claimValue(m.Nonce), m.TTL)
			} else {
				claimMarkScript.EvalSha(ctx, p, []string{r.ClaimKey(m.Name)}, claimValue(m.Nonce), max(m.TTL.Milliseconds(), 1))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mark idempotency keys: %w", err)
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
	cmds := make([]*redis.Cmd, n)
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			key, args := item(i)
			cmds[i] = script.EvalSha(ctx, p, []string{key}, args...)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	sum := 0
	for _, c := range cmds {
		v, err := c.Int()
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}
