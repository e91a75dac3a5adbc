package sale

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestReportSaysWhatCPUTheToolTook(t *testing.T) {
	rep := sampleReport(t) // target http://127.0.0.1:8080, fired for 10 s
	rep.ToolCPU = &ToolCPU{Seconds: 8, Requests: 40000, Cores: 2}
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	for _, want := range []string{
		"the tool itself: 8.0 s of CPU while firing for 10.0 s (40 % of this machine's 2 cores), 200µs per request",
		"the target is on this machine (http://127.0.0.1:8080): if the stack runs here, the tool took 40 % of its CPU",
	} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "the tool itself: 8.0 s of CPU") || !strings.Contains(page.String(), "run the tool elsewhere") {
		t.Errorf("the page does not say what the tool took")
	}
	back, _, _ := writeAndReadBack(t, rep)
	if back.ToolCPU == nil || *back.ToolCPU != *rep.ToolCPU {
		t.Errorf("report.json tool_cpu %+v, want %+v", back.ToolCPU, rep.ToolCPU)
	}
}

func TestToolCPUWarnsOnlyForAStackOnThisMachine(t *testing.T) {
	cases := []struct {
		target  string
		seconds float64 // of CPU over 10 s of firing on 2 cores
		warn    bool
	}{
		{"http://127.0.0.1:8080", 4, false}, // 20 %: at the threshold, no warning
		{"http://127.0.0.1:8080", 4.2, true},
		{"http://localhost:8080", 10, true},
		{"http://[::1]:8080", 10, true},
		{"http://shop.example:8080", 10, false}, // another machine: the tool's CPU is not the stack's
		{"http://10.0.0.7:8080", 10, false},
	}
	for _, c := range cases {
		lines := ToolCPU{Seconds: c.seconds, Requests: 1000, Cores: 2}.lines(10, c.target)
		warned := len(lines) == 2 && strings.Contains(lines[1], "the target is on this machine")
		if warned != c.warn {
			t.Errorf("%s, %.1f s of CPU: warned %v, want %v (%q)", c.target, c.seconds, warned, c.warn, lines)
		}
	}
	if got := (ToolCPU{Seconds: 1}).PerRequest(); got != 0 {
		t.Errorf("per request without requests = %s, want 0", got)
	}
	if got := (ToolCPU{Seconds: 1, Cores: 2}).Share(0); got != 0 {
		t.Errorf("share of no firing = %g, want 0", got)
	}
	rep := sampleReport(t)
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	if strings.Contains(sum.String(), "the tool itself") {
		t.Errorf("a report without the tool's CPU mentions it:\n%s", sum.String())
	}
}

// TestProcessCPUCountsWhatTheProcessSpends spins until the process's CPU time has grown by 30 ms (on a loaded
// machine that takes longer than 30 ms of wall time, so the test waits for the count, not for a duration): a
// count that stood still would not get there within 10 s. The count must not exceed what the process's
// threads could have spent meanwhile.
func TestProcessCPUCountsWhatTheProcessSpends(t *testing.T) {
	before, ok := processCPU()
	if !ok {
		t.Skip("this system does not report the process's CPU")
	}
	start := time.Now()
	x := uint64(1)
	var d time.Duration
	for d < 30*time.Millisecond {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the process's CPU grew by %s over 10 s of spinning (x=%d), want 30 ms", d, x)
		}
		for range 100000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		now, _ := processCPU()
		d = now - before
	}
	if most := time.Since(start)*time.Duration(runtime.NumCPU()) + 20*time.Millisecond; d > most {
		t.Errorf("the process spent %s of CPU in %s of wall time on %d CPUs, more than it could", d, time.Since(start), runtime.NumCPU())
	}
}
