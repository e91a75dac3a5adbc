package flashsale

import (
	"context"
	"sync"
	"time"
)

// waitQuiet waits until every order the run placed is final, every follow-up is done and no SKU has holds,
// bounded by QuietTimeout counted from the later of now and the last payment deadline. It reports whether
// quiet was reached.
func (r *Runner) waitQuiet(ctx context.Context) bool {
	r.mu.Lock()
	deadline := r.opts.Now()
	if r.lastPay.After(deadline) {
		deadline = r.lastPay
	}
	r.mu.Unlock()
	deadline = deadline.Add(r.cfg.QuietTimeout)
	qctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	defer r.stopFollow()
	for {
		open := r.pollOpen(qctx)
		holds := r.pollHolds(qctx)
		if open == 0 && holds == 0 && r.actionsLeft.Load() == 0 {
			return true
		}
		if !sleepCtx(qctx, 500*time.Millisecond) {
			return false
		}
	}
}

// pollOpen reads the orders that are not known to be final and could have moved (a follow-up is done
// with them or their deadline has passed); it returns how many placed orders are still open.
func (r *Runner) pollOpen(ctx context.Context) int {
	now := r.opts.Now()
	var due []string
	open := 0
	r.mu.Lock()
	for _, id := range r.order {
		o := r.orders[id]
		if o.Status.Final() {
			continue
		}
		open++
		if o.PayBy == nil || now.After(*o.PayBy) || o.Action == ActionPay || o.Action == ActionCancel {
			due = append(due, id)
		}
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range due {
		if !r.acquire(ctx) {
			break
		}
		wg.Go(func() {
			defer r.release()
			o, err := r.c.GetOrder(ctx, id)
			if err != nil {
				if ctx.Err() == nil {
					r.stats.Error("get order", err.Error())
				}
				return
			}
			r.setStatus(id, o.Status)
		})
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	open = 0
	for _, id := range r.order {
		if !r.orders[id].Status.Final() {
			open++
		}
	}
	return open
}

// pollHolds returns the units held in Redis over the run's SKUs (-1 when a SKU could not be read).
func (r *Runner) pollHolds(ctx context.Context) int64 {
	var total int64
	for _, sku := range r.skus {
		inv, err := r.c.GetInventory(ctx, sku)
		if err != nil {
			return -1
		}
		total += inv.Holds
	}
	return total
}

// sample reads the inventory of (up to maxSampledSKUs of) the run's SKUs every SampleEvery until ctx ends.
func (r *Runner) sample(ctx context.Context) {
	skus := r.skus[:min(len(r.skus), maxSampledSKUs)]
	t := time.NewTicker(r.cfg.SampleEvery)
	defer t.Stop()
	for {
		for _, sku := range skus {
			inv, err := r.c.GetInventory(ctx, sku)
			if err != nil {
				continue
			}
			p := StockPoint{T: r.opts.Now().Sub(r.stats.start).Seconds(), DBStock: inv.DBStock, RedisAvailable: inv.RedisAvailable, Holds: inv.Holds}
			r.mu.Lock()
			r.samples[sku] = append(r.samples[sku], p)
			r.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// openCounts is the progress view of the wait: open orders and units they hold.
func (r *Runner) openCounts() (open int, accepted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.order {
		if !r.orders[id].Status.Final() {
			open++
		}
	}
	return open, len(r.order)
}
