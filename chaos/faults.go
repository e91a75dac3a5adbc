package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/killpoint"
)

// A fault is one kind of failure the run can inject at any time while the load runs. Process faults are
// here; store faults (a Redis restart or stop, SCRIPT FLUSH, MySQL connection kills: internal/faults, built
// apart) join the soak by being added to the list of soakFaults.
type fault interface {
	// Name is the fault's kind, the key of its counter in the RESULT line.
	Name() string
	// Inject causes the failure and returns once the topology is whole again (the process restarted).
	Inject(ctx context.Context) error
}

// recorder keeps the faults' figures for the RESULT line.
type recorder struct {
	mu       sync.Mutex
	injected map[string]int64
	armed    map[string]int64 // kill point -> workers armed at it
	missed   int64            // armed workers that did not die at their point: not reached in time, or exited otherwise
	recovery map[string]time.Duration
	leaked   int64            // API kills whose admission counts were not freed in time
	victims  map[string]int64 // order -> worker kills in its middle
	// refundVictims are the payment events whose refund a worker kill at killpoint.RefundAfterSend hit: the
	// provider had executed it, the row did not say so yet.
	refundVictims    map[string]int64
	blackholesUnseen int64 // provider blackholes during which no refund request reached the provider
	// missedKinds are the faults of a kind tried and not counted, the event that makes one not seen
	// (a replica never promoted, writes that were not lost after all).
	missedKinds map[string]int64
}

func newRecorder() *recorder {
	return &recorder{injected: map[string]int64{}, armed: map[string]int64{}, recovery: map[string]time.Duration{}, victims: map[string]int64{},
		refundVictims: map[string]int64{}, missedKinds: map[string]int64{}}
}

// victim records an order a worker kill hit.
func (r *recorder) victim(order string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.victims[order]++
}

// refundVictim records a payment event whose refund a worker kill hit after the provider's answer.
func (r *recorder) refundVictim(event string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refundVictims[event]++
}

// refundVictimList is the events whose refund a kill hit, sorted.
func (r *recorder) refundVictimList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.refundVictims))
}

// spareList is the orders (and refunds' payment events) killed so far, for killpoint.EnvSpare.
func (r *recorder) spareList() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(slices.Concat(slices.Sorted(maps.Keys(r.victims)), slices.Sorted(maps.Keys(r.refundVictims))), ",")
}

func (r *recorder) count(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.injected[kind]++
}

// recovered keeps the longest recovery time of a kind.
func (r *recorder) recovered(kind string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recovery[kind] = max(r.recovery[kind], d)
}

// arm records a worker armed at a kill point.
func (r *recorder) arm(point string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed[point]++
}

// neverHit is the kill points armed at least once and never hit: the run did not test them.
func (r *recorder) neverHit() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range slices.Sorted(maps.Keys(r.armed)) {
		if r.injected[workerKill{point: p}.Name()] == 0 {
			out = append(out, p)
		}
	}
	return out
}

// unseen records a provider blackhole that held no refund request: it tested nothing.
func (r *recorder) unseen() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blackholesUnseen++
}

func (r *recorder) miss() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missed++
}

// missKind records a fault of kind tried and not counted.
func (r *recorder) missKind(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missedKinds[kind]++
}

func (r *recorder) leak() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leaked++
}

// workerKill restarts a worker with a kill point armed at a random small hit, waits for it to die by SIGKILL
// there while the load runs, and starts it again without the point.
type workerKill struct {
	t     *topology
	rec   *recorder
	point string
	limit time.Duration // how long the armed worker may take to reach its point
	// rekill lets a kill hit an order an earlier kill already hit. Off, the armed worker spares those
	// orders (killpoint.EnvSpare): otherwise the restarted worker's first task is often the retried workflow
	// task of the last victim, killed again and again, a poison order rather than a crash.
	rekill bool
}

func (f workerKill) Name() string { return "worker_kill_" + f.point }

func (f workerKill) Inject(ctx context.Context) error {
	w := f.t.workers[rand.IntN(len(f.t.workers))]
	w.stop(30 * time.Second)
	after := 1 + rand.IntN(3)
	env := []string{killpoint.EnvAt + "=" + f.point, killpoint.EnvAfter + "=" + strconv.Itoa(after)}
	if !f.rekill {
		env = append(env, killpoint.EnvSpare+"="+f.rec.spareList())
	}
	from := fileSize(w.log) // the log is appended to across restarts: this run's lines start here
	if err := w.start(env...); err != nil {
		return err
	}
	f.rec.arm(f.point)
	timedOut := false
	select {
	case <-w.done():
	case <-time.After(f.limit):
		timedOut = true
		_ = w.kill() // this SIGKILL is the tool's, not the point's
	case <-ctx.Done():
		_ = w.kill()
		return ctx.Err()
	}
	order, err := killedAt(w.log, from, f.point)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", w.name, err)
	case order != "" && w.killedBySIGKILL() && f.point == killpoint.RefundAfterSend: // its kill line names the payment event
		f.rec.count(f.Name())
		f.rec.refundVictim(order)
		fmt.Fprintf(f.t.log, "chaos: %s killed at %s (hit %d) in the refund of event %s\n", w.name, f.point, after, order)
	case order != "" && w.killedBySIGKILL(): // its own kill line, written just before its own SIGKILL
		f.rec.count(f.Name())
		f.rec.victim(order)
		fmt.Fprintf(f.t.log, "chaos: %s killed at %s (hit %d) in order %s\n", w.name, f.point, after, order)
	case timedOut:
		f.rec.miss()
		fmt.Fprintf(f.t.log, "chaos: %s: %s not reached within %s (hit %d); killed by the tool, counted as missed\n", w.name, f.point, f.limit, after)
	default:
		f.rec.miss()
		fmt.Fprintf(f.t.log, "chaos: %s armed at %s exited without reaching it (%v); counted as missed (log: %s)\n", w.name, f.point, w.exitStatus(), w.log)
	}
	return w.start()
}

// fileSize is the size of the file at path, 0 when it does not exist yet.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// killedAt is the order named by a kill line (killpoint.KillLine) at point in the worker's log from offset
// from on (what the run armed at from wrote), or "" when there is none: a line an earlier run wrote, or one
// naming another point, is not this run's kill.
func killedAt(logPath string, from int64, point string) (string, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", fmt.Errorf("read its log: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, from, 1<<40))
	if err != nil {
		return "", fmt.Errorf("read its log: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, order, ok := killpoint.ParseKillLine(line); ok && p == point {
			return order, nil
		}
	}
	return "", nil
}

// apiKill sends SIGKILL to one order API with requests in flight and starts it again.
type apiKill struct {
	t   *topology
	rec *recorder
	// restartAfter is how long the API stays dead (the clients retry against the other one meanwhile).
	restartAfter time.Duration
}

func (apiKill) Name() string { return "api_kill" }

func (f apiKill) Inject(ctx context.Context) error {
	i := rand.IntN(len(f.t.apis))
	if err := f.t.apis[i].kill(); err != nil {
		return err
	}
	f.rec.count(f.Name())
	fmt.Fprintf(f.t.log, "chaos: %s killed\n", f.t.apis[i].name)
	select {
	case <-ctx.Done():
	case <-time.After(f.restartAfter):
	}
	return f.restartAPI(ctx, i)
}

// restartAPI starts the API again and waits until it listens. An API that exits while it starts (the starter
// refuses to start when Temporal does not answer its boot calls in time, as it may just after a fault on a
// loaded machine) is started again, as a process supervisor would, up to five times.
func (f apiKill) restartAPI(ctx context.Context, i int) error {
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if err = f.t.apis[i].start(); err != nil {
			return err
		}
		if err = f.t.waitAPI(ctx, i); err == nil || ctx.Err() != nil {
			return err
		}
		fmt.Fprintf(f.t.log, "chaos: %s did not come up (attempt %d): %v; starting it again\n", f.t.apis[i].name, attempt, err)
		_ = f.t.apis[i].kill()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return err
}

// serverRestart SIGKILLs one of the run's servers (the Temporal server, its Redis, its own MariaDB), waits
// down, starts it again with restart (which returns once it serves), and records the time from the kill until
// then as the kind's recovery.
type serverRestart struct {
	rec     *recorder
	kind    string // the RESULT name: temporal_restart, redis_restart, ...
	what    string // for the log
	p       *proc
	down    time.Duration
	restart func(context.Context) error
	log     io.Writer
}

func (f serverRestart) Name() string { return f.kind }

func (f serverRestart) Inject(ctx context.Context) error {
	if err := f.p.kill(); err != nil {
		return err
	}
	start := time.Now()
	f.rec.count(f.kind)
	select {
	case <-ctx.Done():
	case <-time.After(f.down):
	}
	if err := f.restart(ctx); err != nil {
		return fmt.Errorf("%s: %w", f.kind, err)
	}
	took := time.Since(start)
	f.rec.recovered(f.kind, took)
	fmt.Fprintf(f.log, "chaos: %s killed and back after %s\n", f.what, took.Round(time.Millisecond))
	return nil
}

// temporalRestart kills the Temporal server process and starts it again on the same file and port.
func (r *runState) temporalRestart() serverRestart {
	return serverRestart{rec: r.rec, kind: "temporal_restart", what: "temporal server", p: r.t.temporal,
		down: 2 * time.Second, restart: r.t.restartTemporal, log: r.log}
}

// admissionRecovery polls, after an API's death, until no SKU's admission gate counts any unit: run once the
// load's placements have all finished, what is still counted then is the dead process's. Each poll reaps
// (admission.Gate.ReapAdmissions), as the next process that refuses a buyer of the SKU does. It returns the
// time from the kill until then, and false when limit passed first.
func admissionRecovery(ctx context.Context, t *topology, skus []string, killed time.Time, limit time.Duration) (time.Duration, bool) {
	gate := admission.New(t.rs)
	for time.Since(killed) < limit && ctx.Err() == nil {
		var total int64
		for _, sku := range skus {
			n, err := gate.ReapAdmissions(ctx, sku)
			if err != nil {
				total = -1
				break
			}
			total += n
		}
		if total == 0 {
			return time.Since(killed), true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(killed), false
}
