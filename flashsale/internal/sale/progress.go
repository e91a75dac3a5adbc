package sale

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows the run as it goes: a bar on a terminal, plain lines otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	cfg      Config
	bar      *progressbar.ProgressBar
	spinner  *progressbar.ProgressBar
}

func newProgress(w io.Writer, terminal bool, cfg Config) *progress {
	return &progress{w: w, terminal: terminal, cfg: cfg}
}

// progressView is one reading of the counters.
type progressView struct {
	phase                            string
	elapsed                          time.Duration
	requests, accepted, soldOut, err int64
	limitExceeded, waits             int64
	skipped, inflight                int64
	open, placed                     int
	rate                             float64
	waiting                          string
}

func (v progressView) line() string {
	s := fmt.Sprintf("req %d  accepted %d  sold out %d", v.requests, v.accepted, v.soldOut)
	if v.limitExceeded > 0 {
		s += fmt.Sprintf("  limit exceeded %d", v.limitExceeded)
	}
	if v.waits > 0 {
		s += fmt.Sprintf("  waits (503) %d", v.waits)
	}
	s += fmt.Sprintf("  errors %d  %.0f/s", v.err, v.rate)
	if v.skipped > 0 {
		s += fmt.Sprintf("  skipped %d", v.skipped)
	}
	if v.phase != "firing" {
		s += fmt.Sprintf("  | %s: %d of %d orders open", v.phase, v.open, v.placed)
		if v.waiting != "" {
			s += " (" + v.waiting + ")"
		}
	}
	return s
}

func (p *progress) show(v progressView) {
	if !p.terminal {
		fmt.Fprintf(p.w, "flashsale %6.1fs %s\n", v.elapsed.Seconds(), v.line())
		return
	}
	if v.phase == "firing" {
		if p.bar == nil {
			p.bar = progressbar.NewOptions64(p.cfg.Duration.Milliseconds(),
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetWidth(24),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetPredictTime(false),
				progressbar.OptionShowElapsedTimeOnFinish(),
				progressbar.OptionSetRenderBlankState(true),
			)
		}
		p.bar.Describe(v.line())
		_ = p.bar.Set64(min(v.elapsed.Milliseconds(), p.cfg.Duration.Milliseconds()))
		return
	}
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		p.bar = nil
	}
	if p.spinner == nil {
		p.spinner = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSpinnerType(14),
		)
	}
	p.spinner.Describe(v.line())
	_ = p.spinner.Add(1)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
	if p.spinner != nil {
		_ = p.spinner.Finish()
		fmt.Fprintln(p.w)
	}
}

// report feeds the progress until ctx ends.
func (r *Runner) report(ctx context.Context, p *progress) {
	every := r.cfg.ProgressEvery
	if p.terminal {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastT, lastN := r.opts.Now(), int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := r.opts.Now()
		v := progressView{
			elapsed:       now.Sub(r.stats.start),
			accepted:      r.stats.Total(OutAccepted),
			soldOut:       r.stats.Total(OutSoldOut),
			limitExceeded: r.stats.Total(OutLimitExceeded),
			err:           r.stats.Total(OutError),
			waits:         r.stats.Total(OutWait),
			skipped:       r.skipped.Load(),
			inflight:      r.inflight.Load(),
		}
		v.requests = v.accepted + v.soldOut + v.limitExceeded + v.err + v.waits + r.stats.Total(OutDuplicate)
		if dt := now.Sub(lastT).Seconds(); dt > 0 {
			v.rate = float64(v.requests-lastN) / dt
		}
		lastT, lastN = now, v.requests
		r.mu.Lock()
		v.phase, v.waiting = r.phase, r.waiting
		r.mu.Unlock()
		if !r.fireStart.IsZero() && v.phase == "firing" {
			v.elapsed = now.Sub(r.fireStart)
		}
		v.open, v.placed = r.openCounts()
		p.show(v)
	}
}
