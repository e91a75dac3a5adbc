package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// sampleFlood is a FLOOD line as flashsale --flood-pair prints it (flashsale/internal/sale/flood.go).
const sampleFlood = "FLOOD accepted_no_flood=100.0 accepted_flood=90.0 ratio=90.0% target=80% x=10 window=20s concurrency=64 " +
	"accepted_count_no_flood=2000 accepted_count_flood=1800 flood_rate=1000.0 flood_offered=998.5 flood_answered=990.2 " +
	"flood_skipped=3 soldout_count=19804 soldout_p50=1.50ms soldout_p99=25.00ms accepted_p50_no_flood=600.00ms " +
	"accepted_p99_no_flood=1200.00ms accepted_p50_flood=700.00ms accepted_p99_flood=1500.50ms lost=2 lost_no_flood=0 " +
	"lost_flood=2 errors=1 errors_no_flood=1 errors_flood=0 timeouts=2 flood_errors=4 flood_timeouts=1"

func TestParseFloodLine(t *testing.T) {
	out := "flood pair bench-1: 64 closed-loop winners\n  no flood accepted …\n" + sampleFlood + "\n"
	fl, err := parseFloodLine(out)
	if err != nil {
		t.Fatal(err)
	}
	want := floodLine{X: 10, Concurrency: 64, Window: 20 * time.Second, AcceptedNoFlood: 100, AcceptedFlood: 90,
		AcceptedCountNoFlood: 2000, AcceptedCountFlood: 1800, FloodRate: 1000, FloodOffered: 998.5, FloodAnswer: 990.2,
		FloodSkipped: 3, SoldOutCount: 19804, SoldOutP50: 1500 * time.Microsecond, SoldOutP99: 25 * time.Millisecond,
		AcceptedP50NoFlood: 600 * time.Millisecond, AcceptedP99NoFlood: 1200 * time.Millisecond,
		AcceptedP50Flood: 700 * time.Millisecond, AcceptedP99Flood: 1500500 * time.Microsecond,
		Lost: 2, LostFlood: 2, ErrorsNoFlood: 1, Timeouts: 2, FloodErrors: 4, FloodTimeouts: 1,
		ToolCPUNoFlood: -1, ToolCPUFlood: -1} // a flashsale from before its CPU was in the line
	if fl != want {
		t.Errorf("parsed\n%+v\nwant\n%+v", fl, want)
	}

	p := fl.pair()
	if p.Real.Rate() != 90 || p.Limit.Rate() != 100 || math.Abs(p.Ratio()-0.9) > 1e-9 || p.Target != 0.8 {
		t.Errorf("rates %g (flood) / %g (no flood), ratio %g, target %g", p.Real.Rate(), p.Limit.Rate(), p.Ratio(), p.Target)
	}
	if p.Real.P99 != 1500500*time.Microsecond || p.Limit.P50 != 600*time.Millisecond || p.Real.Concurrency != 64 {
		t.Errorf("latencies %s / %s, concurrency %d", p.Real.P99, p.Limit.P50, p.Real.Concurrency)
	}
	if p.Real.Errors != 2 || p.Real.FirstErr == nil || p.Limit.Errors != 1 {
		t.Errorf("errors: flood side %d (%v), no-flood side %d", p.Real.Errors, p.Real.FirstErr, p.Limit.Errors)
	}
	if !strings.HasPrefix(p.Layer, "5 accepted orders during a 10x sold-out flood") {
		t.Errorf("layer %q", p.Layer)
	}
	for _, w := range []string{"1000/s asked", "3 skipped", "990/s answered sold out", "1.5ms / 25ms", "target p99 < 20ms ✗", "(lost): 2"} {
		if !strings.Contains(p.Comment, w) {
			t.Errorf("comment lacks %q: %s", w, p.Comment)
		}
	}
}

func TestParseFloodLineReadsTheToolsCPU(t *testing.T) {
	fl, err := parseFloodLine(sampleFlood + " tool_cpu_no_flood=3.2% tool_cpu_flood=11.5%")
	if err != nil {
		t.Fatal(err)
	}
	if fl.ToolCPUNoFlood != 3.2 || fl.ToolCPUFlood != 11.5 {
		t.Errorf("tool CPU %g %% / %g %%, want 3.2 / 11.5", fl.ToolCPUNoFlood, fl.ToolCPUFlood)
	}
	if c := fl.pair().Comment; !strings.Contains(c, "flashsale itself took 3.2 % of the machine's CPU without the flood, 11.5 % with it") {
		t.Errorf("comment: %s", c)
	}
	if c := (floodLine{ToolCPUNoFlood: -1, ToolCPUFlood: -1}).pair().Comment; strings.Contains(c, "flashsale itself") {
		t.Errorf("a line without the tool's CPU: %s", c)
	}
	if _, err := parseFloodLine(sampleFlood + " tool_cpu_flood=11.5%"); err == nil || !strings.Contains(err.Error(), "no tool_cpu_no_flood") {
		t.Errorf("half of the tool's CPU: %v", err)
	}
}

func TestParseFloodLineRefusesWhatItCannotRead(t *testing.T) {
	if _, err := parseFloodLine("flashsale: the stack did not answer\n"); err == nil || !strings.Contains(err.Error(), "no FLOOD line") {
		t.Errorf("no line: %v", err)
	}
	missing := strings.Replace(sampleFlood, " accepted_count_flood=1800", "", 1)
	if _, err := parseFloodLine(missing); err == nil || !strings.Contains(err.Error(), "no accepted_count_flood") {
		t.Errorf("missing field: %v", err)
	}
	bad := strings.Replace(sampleFlood, "soldout_p99=25.00ms", "soldout_p99=fast", 1)
	if _, err := parseFloodLine(bad); err == nil || !strings.Contains(err.Error(), "soldout_p99=fast") {
		t.Errorf("bad duration: %v", err)
	}
	if _, err := parseFloodLine(sampleFlood + " stray"); err == nil || !strings.Contains(err.Error(), `"stray"`) {
		t.Errorf("stray field: %v", err)
	}
}

func TestFloodPhaseStart(t *testing.T) {
	for line, want := range map[string]string{
		`flashsale flood: phase "no flood" starts: counted after 2s for 20s`: "no flood",
		`flashsale flood: phase "flood" starts: counted after 2s for 20s`:    "flood",
	} {
		if got, ok := floodPhaseStart(line); !ok || got != want {
			t.Errorf("%q: %q %v, want %q", line, got, ok, want)
		}
	}
	if _, ok := floodPhaseStart("flashsale flood: no flood done: accepted 100.0/s"); ok {
		t.Error("a line that is no phase start matched")
	}
}

func TestLocalStackEnvDropsRealServers(t *testing.T) {
	env := localStackEnv([]string{"PATH=/bin", "REDIS_ADDR=127.0.0.1:6379", "MYSQL_DSN=root@tcp(x)/test", "ADMIN_TOKEN=mine", "HOME=/root"}, "bench-admin")
	for _, kv := range env {
		if strings.HasPrefix(kv, "REDIS_ADDR=") || strings.HasPrefix(kv, "MYSQL_DSN=") || kv == "ADMIN_TOKEN=mine" {
			t.Errorf("kept %s", kv)
		}
	}
	for _, kv := range []string{"PATH=/bin", "HOME=/root", "ADMIN_TOKEN=bench-admin"} {
		if !slices.Contains(env, kv) {
			t.Errorf("lacks %s: %v", kv, env)
		}
	}
}
