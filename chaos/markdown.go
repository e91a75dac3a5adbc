package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// markdownRun is what every row of the Markdown table says about the run: the commit of the code, when it
// ran and the command that runs it again.
type markdownRun struct {
	Commit  string // gitCommit
	Started time.Time
	Command string
}

// writeMarkdown prints the run's rows of RELIABILITY.md's table: one per fault kind injected, with how many,
// the run's invariant counters (all 0, or those that are not), its orders, the kind's longest recovery, and
// the commit, date and command of the run.
func writeMarkdown(w io.Writer, res result, run markdownRun) {
	c := res.counters
	invariants := "all 0"
	var bad []string
	for _, k := range slices.Sorted(slices.Values(invariantCounters)) {
		if c[k] != 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", k, c[k]))
		}
	}
	if len(bad) > 0 {
		invariants = "**not 0: " + strings.Join(bad, ", ") + "**"
	}
	orders := fmt.Sprintf("%d placed, %d accepted", c["placed"], c["accepted"])
	if n := c["refused_checked"]; n > 0 {
		orders += fmt.Sprintf(", %d refused (each checked against the database)", n)
	}
	if n := c["refunds_checked"]; n > 0 {
		orders += fmt.Sprintf("; %d refunds checked", n)
	}
	type row struct {
		kind     string
		injected int64
	}
	var rows []row
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if kind, ok := strings.CutPrefix(k, "faults_"); ok && c[k] > 0 {
			rows = append(rows, row{kind, c[k]})
		}
	}
	if len(rows) == 0 {
		rows = append(rows, row{kind: "none (" + res.name + ")"})
	}
	fmt.Fprintln(w, "| fault | injected | invariant counters | orders | recovery | commit | date | command |")
	fmt.Fprintln(w, "|---|---:|---|---|---:|---|---|---|")
	for _, r := range rows {
		recovery := "—"
		if ms, ok := c["recovery_ms_"+r.kind]; ok {
			recovery = fmt.Sprintf("%.1f s", float64(ms)/1000)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | `%s` |\n", r.kind, r.injected, invariants, orders, recovery,
			run.Commit, run.Started.UTC().Format("2006-01-02"), run.Command)
	}
}
