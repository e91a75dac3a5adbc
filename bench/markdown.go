package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// runInfo is what every row of the Markdown table says about the run that measured it: the machine, the
// commit of the code and when.
type runInfo struct {
	CPUs    int
	CPU     string // the model, from /proc/cpuinfo
	Commit  string // gitCommit
	Started time.Time
}

// writeMarkdown prints the headline table of BENCHMARKS.md: one row per layer measured against its limit
// (the pairs with a target, and those marked InMarkdown, such as the shard pairs; the rows of what a change
// bought stay in the text output), each row with its machine, commit, date and the command that measures it
// again; then a line for each side that had errors.
func writeMarkdown(w io.Writer, pairs []pair, run runInfo) {
	var rows []pair
	for _, p := range pairs {
		if p.Target > 0 || p.InMarkdown {
			rows = append(rows, p)
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "(no headline pair ran: -only names none of http, redis, db, temporal, flood)")
		return
	}
	fmt.Fprintln(w, "| layer | measured | ops/s | limit | ops/s | ratio | target | machine | commit | date | reproduce |")
	fmt.Fprintln(w, "|---|---|---:|---|---:|---:|---|---|---|---|---|")
	for _, p := range rows {
		target := p.targetMark(" ", "none")
		machine := fmt.Sprintf("%d CPUs, %s, load %s", run.CPUs, run.CPU, p.Load)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | **%.0f %%** | %s | %s | %s | %s | `scripts/bench.sh -only %s` |\n",
			cell(p.Layer), cell(p.Real.Name), fmtRate(p.Real), cell(p.Limit.Name), fmtRate(p.Limit), p.Ratio()*100,
			target, cell(machine), run.Commit, run.Started.UTC().Format("2006-01-02"), p.Only)
	}
	var notes []string
	for _, p := range rows {
		for _, r := range []result{p.Real, p.Limit} {
			if r.Errors > 0 {
				notes = append(notes, fmt.Sprintf("- %s: %s: %d errors, first: %v", p.Layer, r.Name, r.Errors, r.FirstErr))
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	}
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
