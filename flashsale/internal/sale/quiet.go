package sale

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// settle is how long the inventory must stay unchanged, once everything else is quiet, before the run is
// judged: the API shows an order EXPIRED as soon as its workflow decides, a moment before its compensation
// has given the stock back.
const settle = time.Second

// waitQuiet waits until every order the run placed is final, every follow-up is done, no SKU has holds, the
// database (when given) has no open order on the run's SKUs, and the inventory has settled; bounded by
// QuietTimeout counted from the later of now and the last payment deadline. It reports whether quiet was
// reached.
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
	var (
		lastInv   string
		sameSince time.Time
		dbOpen    int64
		dbOpenErr error
	)
	for {
		open := r.pollOpen(qctx, false)
		inv, holds := r.pollInventory(qctx)
		if r.db != nil {
			dbOpen, dbOpenErr = r.db.OpenOrders(qctx, r.skus)
		}
		now := r.opts.Now()
		if inv != lastInv {
			lastInv, sameSince = inv, now
		}
		r.mu.Lock()
		r.waiting = fmt.Sprintf("open orders %d, held units %d, follow-ups %d", open, holds, r.actionsLeft.Load())
		if r.db != nil {
			r.waiting += fmt.Sprintf(", open in the database %d", dbOpen)
		}
		r.mu.Unlock()
		if open == 0 && holds == 0 && r.actionsLeft.Load() == 0 && dbOpen == 0 && dbOpenErr == nil && now.Sub(sameSince) >= settle {
			return true
		}
		if !sleepCtx(qctx, 250*time.Millisecond) {
			return false
		}
	}
}

// pollOpen reads the orders that are not known to be final and could have moved (a follow-up is done
// with them or their deadline has passed; all of them when all is set); it returns how many placed orders
// are still open.
func (r *Runner) pollOpen(ctx context.Context, all bool) int {
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
		if all || o.PayBy == nil || now.After(*o.PayBy) || o.Action == ActionPay || o.Action == ActionCancel {
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

// pollInventory reads the run's SKUs and returns them as one comparable string and the units held in Redis
// (-1 when a SKU could not be read).
func (r *Runner) pollInventory(ctx context.Context) (string, int64) {
	var (
		total int64
		b     strings.Builder
	)
	for _, sku := range r.skus {
		inv, err := r.c.GetInventory(ctx, sku)
		if err != nil {
			return "", -1
		}
		total += inv.HeldUnits()
		avail := "nil"
		if inv.RedisAvailable != nil {
			avail = strconv.FormatInt(*inv.RedisAvailable, 10)
		}
		fmt.Fprintf(&b, "%s:%d/%s/%d ", sku, inv.DBStock, avail, inv.HeldUnits())
	}
	return b.String(), total
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
			p := StockPoint{T: r.opts.Now().Sub(r.stats.start).Seconds(), DBStock: inv.DBStock, RedisAvailable: inv.RedisAvailable, Holds: inv.HeldUnits()}
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
