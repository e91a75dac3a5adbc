package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fixedPairs is a run's result as the steps return it: two headline pairs (one with a failing side), and a
// row of what a change bought, which the headline table leaves out.
func fixedPairs() []pair {
	sec := func(name string, ops int64) result { return result{Name: name, Ops: ops, Elapsed: 2 * time.Second} }
	http := pair{Layer: "1 sold-out rejections via HTTP", Real: sec("POST /v1/orders → 409 (internal/api)", 40000),
		Limit: sec("bare net/http handler → 409", 80000), Target: 0.8, Only: "http", Load: "0.50 0.40 0.30"}
	bought := pair{Layer: "1 … what the fast path bought", Real: sec("the API", 40000), Limit: sec("before", 4000), Only: "http"}
	temporal := pair{Layer: "3 accepted orders end to end (temporaltest, real stores)", Real: sec("orderclient.Place | real worker", 190),
		Limit: sec("bare workflow", 200), Target: 0.9, Only: "temporal -temporal real", Load: "1.20 0.90 0.70"}
	temporal.Real.Errors, temporal.Real.FirstErr = 3, errors.New("context deadline exceeded")
	return []pair{http, bought, temporal}
}

func TestWriteMarkdownPrintsTheHeadlineTable(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	run := runInfo{CPUs: 2, CPU: "AMD EPYC 7B13", Commit: "abc1234+dirty", Started: time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)}
	writeMarkdown(&b, fixedPairs(), run)
	want := "| layer | measured | ops/s | limit | ops/s | ratio | target | machine | commit | date | reproduce |\n" +
		"|---|---|---:|---|---:|---:|---|---|---|---|---|\n" +
		"| 1 sold-out rejections via HTTP | POST /v1/orders → 409 (internal/api) | 20000 | bare net/http handler → 409 | 40000 | **50 %** | ≥ 80 % ✗ | 2 CPUs, AMD EPYC 7B13, load 0.50 0.40 0.30 | abc1234+dirty | 2026-12-07 | `scripts/bench.sh -only http` |\n" +
		"| 3 accepted orders end to end (temporaltest, real stores) | orderclient.Place \\| real worker | 95 | bare workflow | 100 | **95 %** | ≥ 90 % ✓ | 2 CPUs, AMD EPYC 7B13, load 1.20 0.90 0.70 | abc1234+dirty | 2026-12-07 | `scripts/bench.sh -only temporal -temporal real` |\n" +
		"\n" +
		"- 3 accepted orders end to end (temporaltest, real stores): orderclient.Place | real worker: 3 errors, first: context deadline exceeded\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteMarkdownSaysWhenNoPairRan(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	writeMarkdown(&b, fixedPairs()[1:2], runInfo{CPUs: 2, CPU: "x", Commit: "abc1234"})
	if got := b.String(); !strings.Contains(got, "no headline pair") || strings.Contains(got, "fast path bought") {
		t.Errorf("a run without a headline pair printed:\n%s", got)
	}
}

// A pair without a target marked InMarkdown (the shard pairs) is a row of the table, its target cell "none".
func TestWriteMarkdownKeepsPairsMarkedInMarkdown(t *testing.T) {
	t.Parallel()
	sec := func(name string, ops int64) result { return result{Name: name, Ops: ops, Elapsed: 2 * time.Second} }
	hot := pair{Layer: "2g Lua reserve, hot SKU, 8 shards ÷ 1 shard, cluster", Real: sec("ReserveIn, 8 shards", 30000),
		Limit: sec("ReserveIn, 1 shard", 20000), Only: "redis -redis-cluster", Load: "1.00 1.00 1.00", InMarkdown: true}
	var b strings.Builder
	writeMarkdown(&b, append(fixedPairs(), hot), runInfo{CPUs: 2, CPU: "x", Commit: "abc1234", Started: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)})
	want := "| 2g Lua reserve, hot SKU, 8 shards ÷ 1 shard, cluster | ReserveIn, 8 shards | 15000 | ReserveIn, 1 shard | 10000 | **150 %** | none | 2 CPUs, x, load 1.00 1.00 1.00 | abc1234 | 2026-12-07 | `scripts/bench.sh -only redis -redis-cluster` |\n"
	if got := b.String(); !strings.Contains(got, want) || strings.Contains(got, "fast path bought") {
		t.Errorf("got\n%s\nwant a row\n%s", got, want)
	}
}
