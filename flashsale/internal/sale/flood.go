package sale

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The flood pair (--flood-pair): how many orders per second the stack accepts with and without a flood of
// orders of a sold-out SKU, in one run of the tool.
//
//  1. "no flood": Concurrency closed-loop winners order one unit each of an in-stock SKU whose stock never
//     runs out (a new Idempotency-Key and user per order);
//  2. "flood": the same winners on a fresh in-stock SKU and, at the same time, an open loop of orders of a
//     SKU of stock 0 at FloodX times the accepted rate of phase 1 (at least FloodMinRate), at most
//     FloodInflight of them in flight (more are skipped and counted, never queued).
//
// Each phase lasts FloodWarmup + Duration; the rates and latencies are those of the answers that arrive in the
// last Duration (the window). Every winner request must end with an answer: a 201 or a documented problem
// (docs/http-api.md); one without (a timeout, a broken connection, a body that is no problem) counts as lost.
// The accepted orders are not paid: they expire at the stack's payment deadline.

// floodStock is the stock of the winners' SKUs: more than any phase can sell.
const floodStock = 1_000_000_000

// FloodPhase is one phase of the flood pair.
type FloodPhase struct {
	Name   string        `json:"name"`
	SKU    string        `json:"sku"`
	Window time.Duration `json:"window"`
	// Fired is how long the phase sent requests (warm-up included); the answers of the requests in flight at
	// its end are awaited after it.
	Fired time.Duration `json:"fired"`
	// The winners: requests sent in the whole phase, 201 answers in the window, and over the whole phase the
	// documented answers other than 201 (Errors) and the requests without an answer (Lost; Timeouts of them
	// timed out).
	WinnerRequests  int64          `json:"winner_requests"`
	Accepted        int64          `json:"accepted"`
	AcceptedLatency LatencySummary `json:"accepted_latency"`
	Errors          int64          `json:"errors"`
	Lost            int64          `json:"lost"`
	Timeouts        int64          `json:"timeouts"`
	// The flood (phase 2): its offered rate, the requests sent and skipped over the whole phase, the 409
	// sold-out answers in the window, and over the whole phase the answers other than sold out (FloodErrors,
	// with no answer at all) and the timeouts among them.
	FloodRate      float64        `json:"flood_rate"`
	FloodSent      int64          `json:"flood_sent"`
	FloodSkipped   int64          `json:"flood_skipped"`
	SoldOut        int64          `json:"sold_out"`
	SoldOutLatency LatencySummary `json:"sold_out_latency"`
	FloodErrors    int64          `json:"flood_errors"`
	FloodTimeouts  int64          `json:"flood_timeouts"`
	// ErrorKinds counts the errors and lost answers by kind ("winner …" or "flood …"); a few messages too.
	ErrorKinds   map[string]int64 `json:"error_kinds"`
	ErrorSamples []string         `json:"error_samples"`
	// ToolCPU is the tool's own CPU over the phase, winners and flood (absent where the system does not say).
	ToolCPU *ToolCPU `json:"tool_cpu,omitempty"`
}

func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// AcceptedRate is the winners' 201 answers per second in the window.
func (p FloodPhase) AcceptedRate() float64 { return perSecond(p.Accepted, p.Window) }

// SoldOutRate is the flood's sold-out answers per second in the window.
func (p FloodPhase) SoldOutRate() float64 { return perSecond(p.SoldOut, p.Window) }

// OfferedRate is the flood requests offered (sent or skipped) per second while the phase fired.
func (p FloodPhase) OfferedRate() float64 { return perSecond(p.FloodSent+p.FloodSkipped, p.Fired) }

// FloodResult is the flood pair: the phase without the flood and the phase with it.
type FloodResult struct {
	RunID       string        `json:"run_id"`
	Target      string        `json:"target"`
	X           float64       `json:"x"`
	Concurrency int           `json:"concurrency"`
	Warmup      time.Duration `json:"warmup"`
	NoFlood     FloodPhase    `json:"no_flood"`
	Flood       FloodPhase    `json:"flood"`
}

// FloodTarget is the target: the accepted rate during the flood is at least this share of the rate
// without it.
const FloodTarget = 0.8

// Ratio is the accepted rate during the flood over the accepted rate without it (0 when there was none).
func (r FloodResult) Ratio() float64 {
	if r.NoFlood.AcceptedRate() == 0 {
		return 0
	}
	return r.Flood.AcceptedRate() / r.NoFlood.AcceptedRate()
}

// Lost is the winner requests of both phases without an answer.
func (r FloodResult) Lost() int64 { return r.NoFlood.Lost + r.Flood.Lost }

func fmtMS(ms float64) string { return fmt.Sprintf("%.2fms", ms) }

// Line is the machine-readable result, one line starting "FLOOD " of key=value fields: rates per second,
// latencies with their unit, ratio and target in percent (ParseFloodLine in bench/ reads it).
func (r FloodResult) Line() string {
	n, f := r.NoFlood, r.Flood
	fields := []string{
		fmt.Sprintf("accepted_no_flood=%.1f", n.AcceptedRate()),
		fmt.Sprintf("accepted_flood=%.1f", f.AcceptedRate()),
		fmt.Sprintf("ratio=%.1f%%", r.Ratio()*100),
		fmt.Sprintf("target=%.0f%%", FloodTarget*100),
		fmt.Sprintf("x=%g", r.X),
		fmt.Sprintf("window=%s", f.Window),
		fmt.Sprintf("concurrency=%d", r.Concurrency),
		fmt.Sprintf("accepted_count_no_flood=%d", n.Accepted),
		fmt.Sprintf("accepted_count_flood=%d", f.Accepted),
		fmt.Sprintf("flood_rate=%.1f", f.FloodRate),
		fmt.Sprintf("flood_offered=%.1f", f.OfferedRate()),
		fmt.Sprintf("flood_answered=%.1f", f.SoldOutRate()),
		fmt.Sprintf("flood_skipped=%d", f.FloodSkipped),
		fmt.Sprintf("soldout_count=%d", f.SoldOut),
		"soldout_p50=" + fmtMS(f.SoldOutLatency.P50MS),
		"soldout_p99=" + fmtMS(f.SoldOutLatency.P99MS),
		"accepted_p50_no_flood=" + fmtMS(n.AcceptedLatency.P50MS),
		"accepted_p99_no_flood=" + fmtMS(n.AcceptedLatency.P99MS),
		"accepted_p50_flood=" + fmtMS(f.AcceptedLatency.P50MS),
		"accepted_p99_flood=" + fmtMS(f.AcceptedLatency.P99MS),
		fmt.Sprintf("lost=%d", r.Lost()),
		fmt.Sprintf("lost_no_flood=%d", n.Lost),
		fmt.Sprintf("lost_flood=%d", f.Lost),
		fmt.Sprintf("errors=%d", n.Errors+f.Errors),
		fmt.Sprintf("errors_no_flood=%d", n.Errors),
		fmt.Sprintf("errors_flood=%d", f.Errors),
		fmt.Sprintf("timeouts=%d", n.Timeouts+f.Timeouts),
		fmt.Sprintf("flood_errors=%d", f.FloodErrors),
		fmt.Sprintf("flood_timeouts=%d", f.FloodTimeouts),
	}
	for _, p := range []FloodPhase{n, f} {
		if p.ToolCPU != nil {
			fields = append(fields, fmt.Sprintf("tool_cpu_%s=%.1f%%", strings.ReplaceAll(p.Name, " ", "_"), p.ToolCPU.Share(p.Fired.Seconds())*100))
		}
	}
	return "FLOOD " + strings.Join(fields, " ")
}

// WriteSummary prints the pair for a person, then the FLOOD line.
func (r FloodResult) WriteSummary(w io.Writer) {
	n, f := r.NoFlood, r.Flood
	fmt.Fprintf(w, "flood pair %s: %d closed-loop winners, each phase %s after a %s warm-up\n", r.RunID, r.Concurrency, f.Window, r.Warmup)
	for _, p := range []FloodPhase{n, f} {
		fmt.Fprintf(w, "  %-8s accepted %6.1f/s (%d in the window, p50 %.2f ms, p99 %.2f ms); winner requests %d, errors %d, lost %d (timeouts %d)\n",
			p.Name, p.AcceptedRate(), p.Accepted, p.AcceptedLatency.P50MS, p.AcceptedLatency.P99MS, p.WinnerRequests, p.Errors, p.Lost, p.Timeouts)
	}
	fmt.Fprintf(w, "  flood    %.1f/s asked (%gx the accepted rate without it, or the floor), %.1f/s offered, %d skipped (in-flight cap); sold out %.1f/s (p50 %.2f ms, p99 %.2f ms); other answers %d (timeouts %d)\n",
		f.FloodRate, r.X, f.OfferedRate(), f.FloodSkipped, f.SoldOutRate(), f.SoldOutLatency.P50MS, f.SoldOutLatency.P99MS, f.FloodErrors, f.FloodTimeouts)
	mark := "met"
	if r.Ratio() < FloodTarget {
		mark = "missed"
	}
	fmt.Fprintf(w, "  accepted during the flood: %.1f%% of the rate without it (target %.0f%%: %s); lost answers %d\n", r.Ratio()*100, FloodTarget*100, mark, r.Lost())
	for _, p := range []FloodPhase{n, f} {
		if p.ToolCPU != nil {
			for _, l := range p.ToolCPU.lines(p.Fired.Seconds(), r.Target) {
				fmt.Fprintf(w, "  %-8s %s\n", p.Name, l)
			}
		}
	}
	for _, p := range []FloodPhase{n, f} {
		if len(p.ErrorKinds) == 0 {
			continue
		}
		kinds := make([]string, 0, len(p.ErrorKinds))
		for k := range p.ErrorKinds {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "  %s errors:", p.Name)
		for _, k := range kinds {
			fmt.Fprintf(w, " %s=%d", k, p.ErrorKinds[k])
		}
		fmt.Fprintln(w)
		for _, s := range p.ErrorSamples[:min(len(p.ErrorSamples), 3)] {
			fmt.Fprintf(w, "    %s\n", s)
		}
	}
	fmt.Fprintln(w, r.Line())
}

// floodRun is one flood pair in progress.
type floodRun struct {
	cfg  Config
	opts Options
	c    *Client
}

// FloodPair runs the flood pair against the stack at cfg.Target (cfg must have passed Validate): it stocks its
// three SKUs (<prefix>win-1, <prefix>win-2, <prefix>gone), checks that the sold-out one is answered sold out,
// and runs the two phases back to back. A cancelled ctx ends it with an error.
func FloodPair(ctx context.Context, cfg Config, opts Options) (*FloodResult, error) {
	opts = opts.withDefaults()
	f := &floodRun{cfg: cfg, opts: opts,
		c: NewClient(cfg.Target, cfg.AdminToken, cfg.WebhookSecret, cfg.Concurrency+cfg.FloodInflight, cfg.RequestTimeout)}
	defer f.c.Close()
	win1, win2, gone := cfg.SKUPrefix+"win-1", cfg.SKUPrefix+"win-2", cfg.SKUPrefix+"gone"
	for _, s := range []struct {
		sku   string
		stock int64
	}{{win1, floodStock}, {win2, floodStock}, {gone, 0}} {
		if _, err := f.c.PutInventory(ctx, s.sku, s.stock, cfg.PriceCents, cfg.PerUserLimit, cfg.StockShards); err != nil {
			return nil, fmt.Errorf("set stock: %w", err)
		}
	}
	a, _, err := f.c.PlaceOrder(ctx, fmt.Sprintf("fs-%s-probe", cfg.RunID), orderBody("fsf-probe", gone, cfg.Qty))
	if err != nil || a.Status != http.StatusConflict || !soldOut(a.Problem) {
		return nil, fmt.Errorf("an order of %s (stock 0) was not answered 409 sold-out: %s", gone, failure(a, err))
	}
	res := &FloodResult{RunID: cfg.RunID, Target: cfg.Target, X: cfg.FloodX, Concurrency: cfg.Concurrency, Warmup: cfg.FloodWarmup}
	res.NoFlood = f.phase(ctx, "no flood", "w1", win1, "", 0)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rate := math.Max(cfg.FloodX*res.NoFlood.AcceptedRate(), cfg.FloodMinRate)
	res.Flood = f.phase(ctx, "flood", "w2", win2, gone, rate)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// phase runs the winners on sku for FloodWarmup + Duration and, with a rate above 0, the flood of orders of
// floodSKU at that rate; tag names the phase in the idempotency keys and users.
func (f *floodRun) phase(ctx context.Context, name, tag, sku, floodSKU string, rate float64) FloodPhase {
	cfg := f.cfg
	p := FloodPhase{Name: name, SKU: sku, Window: cfg.Duration, FloodRate: rate}
	start := time.Now()
	from := start.Add(cfg.FloodWarmup)
	to := from.Add(cfg.Duration)
	st := NewStats(from)
	inWindow := func(t time.Time) bool { return !t.Before(from) && !t.After(to) }
	var (
		requests, errs, lost, timeouts, sent, floodErrs, floodTimeouts atomic.Int64
		skipped                                                        atomic.Int64
	)
	// failed counts an answer that is not the one wanted: lost (no documented answer) or an error.
	failed := func(who string, a Answer, err error) (isLost, isTimeout bool) {
		kind := errorKind(a, err)
		isTimeout = kind == "timeout"
		isLost = a.Status == 0 || a.Status != http.StatusCreated && a.Problem.Type == ""
		if isLost {
			kind = "lost " + kind
		}
		st.Error(who+" "+kind, failure(a, err))
		return isLost, isTimeout
	}
	// bench/ waits for this line to profile the stack during the phase's window.
	fmt.Fprintf(f.opts.Progress, "flashsale flood: phase %q starts: counted after %s for %s\n", name, cfg.FloodWarmup, cfg.Duration)
	pctx, cancel := context.WithDeadline(ctx, to)
	defer cancel()
	took := startToolCPU(f.opts.CPU)
	var wg sync.WaitGroup
	wg.Go(func() {
		closedLoop(pctx, cfg.Concurrency, func(seq int64) {
			requests.Add(1)
			a, o, err := f.c.PlaceOrder(ctx, fmt.Sprintf("fs-%s-%s-%d", cfg.RunID, tag, seq),
				orderBody(fmt.Sprintf("fsw-%s-%s-%d", cfg.RunID, tag, seq), sku, cfg.Qty))
			if err == nil && a.Status == http.StatusCreated && o.OrderID != "" {
				if inWindow(time.Now()) {
					st.Record(OutAccepted, a.Latency)
				}
				return
			}
			if err == nil && a.Status == http.StatusCreated {
				err = fmt.Errorf("201 without order_id")
			}
			if ctx.Err() != nil {
				return // the run is stopping: not the stack's doing
			}
			isLost, isTimeout := failed("winner", a, err)
			switch {
			case isLost:
				lost.Add(1)
			default:
				errs.Add(1)
			}
			if isTimeout {
				timeouts.Add(1)
			}
		})
	})
	if rate > 0 {
		wg.Go(func() {
			openLoop(pctx, start, rate, cfg.FloodInflight, &skipped, func(seq int64) {
				sent.Add(1)
				a, _, err := f.c.PlaceOrder(ctx, fmt.Sprintf("fs-%s-f-%d", cfg.RunID, seq),
					orderBody(fmt.Sprintf("fsf-%s-%d", cfg.RunID, seq), floodSKU, cfg.Qty))
				if err == nil && a.Status == http.StatusConflict && soldOut(a.Problem) {
					if inWindow(time.Now()) {
						st.Record(OutSoldOut, a.Latency)
					}
					return
				}
				if ctx.Err() != nil {
					return
				}
				floodErrs.Add(1)
				if _, isTimeout := failed("flood", a, err); isTimeout {
					floodTimeouts.Add(1)
				}
			})
		})
	}
	wg.Go(func() { f.progress(pctx, name, start, st, &requests, &sent, &skipped) })
	wg.Wait()
	p.ToolCPU = took(requests.Load() + sent.Load())
	p.Fired = to.Sub(start)
	lat := st.Latencies()
	p.WinnerRequests, p.Accepted, p.AcceptedLatency = requests.Load(), st.Total(OutAccepted), lat[OutAccepted.String()]
	p.Errors, p.Lost, p.Timeouts = errs.Load(), lost.Load(), timeouts.Load()
	p.FloodSent, p.FloodSkipped, p.SoldOut, p.SoldOutLatency = sent.Load(), skipped.Load(), st.Total(OutSoldOut), lat[OutSoldOut.String()]
	p.FloodErrors, p.FloodTimeouts = floodErrs.Load(), floodTimeouts.Load()
	p.ErrorKinds, p.ErrorSamples = st.Errors()
	fmt.Fprintf(f.opts.Progress, "flashsale flood: %s done: accepted %.1f/s, sold out %.1f/s, skipped %d, errors %d, lost %d\n",
		name, p.AcceptedRate(), p.SoldOutRate(), p.FloodSkipped, p.Errors+p.FloodErrors, p.Lost)
	return p
}

// progress prints a line every ProgressEvery while the phase fires.
func (f *floodRun) progress(ctx context.Context, name string, start time.Time, st *Stats, requests, sent, skipped *atomic.Int64) {
	t := time.NewTicker(f.cfg.ProgressEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fmt.Fprintf(f.opts.Progress, "flashsale flood: %-8s %5.1fs winners sent %d, accepted %d; flood sent %d, sold out %d, skipped %d (counted from %s)\n",
				name, time.Since(start).Seconds(), requests.Load(), st.Total(OutAccepted), sent.Load(), st.Total(OutSoldOut), skipped.Load(), f.cfg.FloodWarmup)
		}
	}
}
