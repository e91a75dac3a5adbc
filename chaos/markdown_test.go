package main

import (
	"strings"
	"testing"
	"time"
)

// shortResult is a short run's figures as the verdict leaves them: three fault kinds (one with a recovery
// time), the load's counters and every invariant counter, one of them given by the caller.
func shortResult(stuck int64) result {
	c := map[string]int64{"placed": 320, "accepted": 318, "refunds_checked": 41,
		"faults_worker_kill_deduct-after-commit": 1, "faults_api_kill": 2, "faults_redis_stop_10s": 1,
		"recovery_ms_api_kill": 8795, "recovery_ms_redis_stop_10s": 10105}
	for _, k := range invariantCounters {
		c[k] = 0
	}
	c["stuck"] = stuck
	return result{name: "short", counters: c}
}

func TestWriteMarkdownPrintsARowPerFaultKind(t *testing.T) {
	t.Parallel()
	run := markdownRun{Commit: "abc1234", Started: time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC), Command: "go run ./chaos short"}
	var b strings.Builder
	writeMarkdown(&b, shortResult(0), run)
	tail := " | abc1234 | 2026-12-07 | `go run ./chaos short` |\n"
	want := "| fault | injected | invariant counters | orders | recovery | commit | date | command |\n" +
		"|---|---:|---|---|---:|---|---|---|\n" +
		"| api_kill | 2 | all 0 | 320 placed, 318 accepted; 41 refunds checked | 8.8 s" + tail +
		"| redis_stop_10s | 1 | all 0 | 320 placed, 318 accepted; 41 refunds checked | 10.1 s" + tail +
		"| worker_kill_deduct-after-commit | 1 | all 0 | 320 placed, 318 accepted; 41 refunds checked | —" + tail
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteMarkdownNamesTheCountersThatAreNotZero(t *testing.T) {
	t.Parallel()
	res := shortResult(3)
	res.counters["refunds_unsent"] = 1
	var b strings.Builder
	writeMarkdown(&b, res, markdownRun{Commit: "abc1234+dirty", Command: "x"})
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")[2:]
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3:\n%s", len(rows), b.String())
	}
	for _, r := range rows {
		if !strings.Contains(r, "| **not 0: refunds_unsent=1, stuck=3** |") || !strings.Contains(r, "abc1234+dirty") {
			t.Errorf("row %q: want the counters not 0 named, and the dirty commit", r)
		}
	}
}

func TestWriteMarkdownSaysWhenNoFaultWasInjected(t *testing.T) {
	t.Parallel()
	res := shortResult(0)
	for k := range res.counters {
		if strings.HasPrefix(k, "faults_") {
			delete(res.counters, k)
		}
	}
	var b strings.Builder
	writeMarkdown(&b, res, markdownRun{Commit: "abc1234", Command: "go run ./chaos short"})
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")[2:]
	if len(rows) != 1 || !strings.HasPrefix(rows[0], "| none (short) | 0 | all 0 |") {
		t.Errorf("a run without a fault: %q", rows)
	}
}

func TestParseScenarioReadsMarkdown(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	sc, err := parseScenario("refund-kill", []string{"-markdown"}, &sb)
	if err != nil || !sc.Markdown {
		t.Errorf("-markdown: %+v, %v", sc, err)
	}
	if sc, _ := parseScenario("refund-kill", nil, &sb); sc.Markdown {
		t.Error("markdown on without -markdown")
	}
}
