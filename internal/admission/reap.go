package admission

import (
	"context"
	"fmt"
	"maps"
	"time"

	"errors"
	"github.com/redis/go-redis/v9"
)

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
	r.inBackground("reap:"+sku, func(ctx context.Context) {
		_, _ = r.ReapAdmissions(ctx, sku) // the next refusal tries again
	})
}

// inBackground runs work in the background, with checkTimeout, unless this process ran the work named key
// within reap or is running it now.
func (r *Gate) inBackground(key string, work func(ctx context.Context)) {
	l := r.leases()
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
		work(ctx)
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
