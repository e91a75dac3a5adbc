package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/invariants"
	"github.com/ordersaga/ordersaga/internal/invariants/orderledger"
	"github.com/ordersaga/ordersaga/internal/killpoint"
)

// envFakeWorker makes this test binary play a worker process (TestMain): "reach" calls killpoint.Hit at the
// armed point for a new order every 10 ms (so an armed process dies there, as a real worker does), "idle"
// never reaches any point, "crash" exits 1 at once.
const envFakeWorker = "CHAOS_FAKE_WORKER"

// fakeWorker is the worker process TestMain runs when envFakeWorker is set.
func fakeWorker(mode string) int {
	switch mode {
	case "reach":
		point := os.Getenv(killpoint.EnvAt)
		for i := 0; ; i++ {
			if point != "" {
				killpoint.Hit(point, fmt.Sprintf("o-new-%d", i))
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "crash":
		return 1
	default:
		time.Sleep(time.Hour)
		return 0
	}
}

// TestWorkerKillCountsOnlyAKillAtThePoint arms a worker process and judges how its run ended: a kill counts
// (and names its victim) only when the worker died at the armed point, by its own kill line, in the run the
// tool armed. A worker that did not reach the point in time, which the tool had to kill itself, or one that
// exited on its own, is a miss and names no victim, even when its log holds an earlier kill's line.
func TestWorkerKillCountsOnlyAKillAtThePoint(t *testing.T) {
	t.Parallel()
	const point = killpoint.DeductAfterCommit
	earlier := killpoint.KillLine + point + " (hit 1) order o-earlier\n"
	for _, c := range []struct {
		name       string
		mode       string
		limit      time.Duration
		wantKilled int64
		wantMissed int64
		wantVictim string // a prefix; "" for none
		wantOK     bool   // the run's verdict, with nothing else wrong
	}{
		{"reached: one kill, its own order", "reach", time.Minute, 1, 0, "o-new-", true},
		{"not reached in time: a miss, no victim, the point never hit", "idle", 2 * time.Second, 0, 1, "", false},
		{"exited on its own: a miss, no victim, the point never hit", "crash", time.Minute, 0, 1, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			logPath := filepath.Join(dir, "worker-0.log")
			if err := os.WriteFile(logPath, []byte(earlier), 0o644); err != nil {
				t.Fatal(err)
			}
			w := &proc{name: "worker-0", bin: os.Args[0], env: []string{envFakeWorker + "=" + c.mode}, log: logPath}
			t.Cleanup(func() { w.stop(5 * time.Second) })
			rec := newRecorder()
			f := workerKill{t: &topology{workers: []*proc{w}, log: io.Discard}, rec: rec, point: point, limit: c.limit}
			if err := f.Inject(t.Context()); err != nil {
				t.Fatalf("inject: %v", err)
			}
			if got := rec.injected[f.Name()]; got != c.wantKilled {
				t.Errorf("kills counted at %s = %d, want %d", point, got, c.wantKilled)
			}
			if rec.missed != c.wantMissed {
				t.Errorf("kill points missed = %d, want %d", rec.missed, c.wantMissed)
			}
			var victims []string
			for o := range rec.victims {
				victims = append(victims, o)
			}
			switch {
			case c.wantVictim == "" && len(victims) != 0:
				t.Errorf("victims %v, want none", victims)
			case c.wantVictim != "" && (len(victims) != 1 || len(victims[0]) <= len(c.wantVictim) || victims[0][:len(c.wantVictim)] != c.wantVictim):
				t.Errorf("victims %v, want the one order of this run's kill line (%s...)", victims, c.wantVictim)
			}
			res := result{counters: map[string]int64{}}
			(&runState{rec: rec, log: io.Discard}).faultCounters(res.counters)
			if res.OK() != c.wantOK {
				t.Errorf("verdict ok=%v, want %v (%s)", res.OK(), c.wantOK, res.Line())
			}
		})
	}
}

// TestReportCountersCountLedgerLines: an order line whose ledger breaks the rule is counted apart, and fails
// the verdict.
func TestReportCountersCountLedgerLines(t *testing.T) {
	t.Parallel()
	line := invariants.LineReport{OrderID: "o1", SKU: "A",
		Line:    orderledger.Line{Status: ordersaga.StatusPaid, Qty: 1, Deducted: 2},
		Problem: orderledger.Problem{Fault: orderledger.Twice, Text: "taken 2 units of 1 ordered: deducted more than once"}}
	res := result{counters: map[string]int64{}}
	reportCounters(invariants.Report{Lines: []invariants.LineReport{line}, Violations: []string{line.String()}}, res.counters)
	if res.counters["line_ledger_faults"] != 1 || res.counters["violations"] != 1 || res.OK() {
		t.Errorf("counters %v, ok=%v; want line_ledger_faults 1, violations 1, not ok", res.counters, res.OK())
	}
	res = result{counters: map[string]int64{}}
	reportCounters(invariants.Report{}, res.counters)
	if !res.OK() {
		t.Errorf("an empty report: %s", res.Line())
	}
}
