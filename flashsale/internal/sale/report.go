package sale

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is a run as the JSON file holds it; the HTML page renders the same.
type Report struct {
	Tool     string    `json:"tool"`
	RunID    string    `json:"run_id"`
	Params   []Param   `json:"params"`
	SKUs     []string  `json:"skus"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// FireSeconds is how long buyers were fired; QuietSeconds how long the wait for quiet took.
	FireSeconds  float64 `json:"fire_seconds"`
	QuietSeconds float64 `json:"quiet_seconds"`
	OfferedRate  float64 `json:"offered_rate,omitempty"`
	// Sent counts buyers fired; Skipped those not sent because Concurrency requests were in flight.
	Sent    int64 `json:"sent"`
	Skipped int64 `json:"skipped"`
	// BotRequests counts the orders bots sent (every order of every bot visit; a visit is one buyer of Sent).
	BotRequests int64 `json:"bot_requests,omitempty"`
	// ToolCPU is the tool's own CPU while firing (absent where the system does not say).
	ToolCPU *ToolCPU `json:"tool_cpu,omitempty"`
	// AnsweredRate is the buyers' first requests answered per second of firing.
	AnsweredRate float64                   `json:"answered_rate"`
	Counts       map[string]int64          `json:"counts"`
	Errors       map[string]int64          `json:"errors"`
	ErrorSamples []string                  `json:"error_samples"`
	Latency      map[string]LatencySummary `json:"latency"`
	Throughput   []ThroughputPoint         `json:"throughput"`
	Stock        map[string][]StockPoint   `json:"stock"`
	// Line is the line as the tool sees it over time: the sale buyers arrived and not finally answered, and
	// those of them told to wait (503); Positions the places in the line the answers gave, per second (none
	// when no answer gave one).
	Line      []LinePoint     `json:"line,omitempty"`
	Positions []PositionPoint `json:"positions,omitempty"`
	// Orders counts the accepted orders by planned action and final status.
	Orders map[string]map[string]int `json:"orders"`
	// Payments counts the webhook answers by kind (on time / late / wrong amount) and result.
	Payments map[string]map[string]int `json:"payments"`
	Final    []SKUSnapshot             `json:"final_inventory"`
	Verdict  Verdict                   `json:"verdict"`
	// Rejudged is when the verdict was last taken again (flashsale --rejudge); zero for the run's own.
	Rejudged time.Time `json:"rejudged,omitzero"`
	// Snapshot is everything the verdict was judged on (what --rejudge starts from).
	Snapshot Snapshot `json:"snapshot"`
}

func (r *Runner) buildReport(started time.Time, snap Snapshot, v Verdict) *Report {
	rep := &Report{
		Tool: "ordersaga flashsale", RunID: r.cfg.RunID, Params: r.cfg.Params(), SKUs: r.skus,
		Started: started.UTC(), Finished: r.opts.Now().UTC(),
		FireSeconds: r.fireEnd.Sub(r.fireStart).Seconds(), QuietSeconds: snap.TakenAt.Sub(r.fireEnd).Seconds(),
		OfferedRate: r.cfg.Rate, Sent: r.sent.Load(), Skipped: r.skipped.Load(), BotRequests: r.botRequests.Load(),
		Counts: map[string]int64{}, Latency: r.stats.Latencies(), Throughput: r.stats.Throughput(),
		Stock: map[string][]StockPoint{}, Orders: map[string]map[string]int{}, Payments: map[string]map[string]int{},
		Final: snap.SKUs, Verdict: v, Snapshot: snap, ToolCPU: r.toolCPU,
	}
	for o := range nOutcomes {
		rep.Counts[o.String()] = r.stats.Total(o)
	}
	if rep.FireSeconds > 0 {
		rep.AnsweredRate = float64(rep.Counts["accepted"]+rep.Counts["sold_out"]+rep.Counts["limit_exceeded"]+rep.Counts["error"]+rep.Counts["wait"]) / rep.FireSeconds
	}
	if r.places != nil {
		off := r.places.from.Sub(r.stats.start).Seconds()
		rep.Line, rep.Positions = snap.Buyers.Line(off), r.buyers.positions(off)
	}
	rep.Errors, rep.ErrorSamples = r.stats.Errors()
	r.mu.Lock()
	for sku, pts := range r.samples {
		rep.Stock[sku] = append([]StockPoint(nil), pts...)
	}
	r.mu.Unlock()
	rep.tally()
	return rep
}

// tally counts the orders by planned action and final status, and the webhook answers by kind.
func (rep *Report) tally() {
	rep.Orders, rep.Payments = map[string]map[string]int{}, map[string]map[string]int{}
	snap := rep.Snapshot
	for _, o := range snap.Orders {
		if rep.Orders[o.Action] == nil {
			rep.Orders[o.Action] = map[string]int{}
		}
		st := string(o.Status)
		if st == "" {
			st = "UNKNOWN"
		}
		rep.Orders[o.Action][st]++
	}
	for _, p := range snap.Payments {
		kind := "on_time"
		switch {
		case p.Late:
			kind = "late"
		case p.WrongAmount:
			kind = "wrong_amount"
		}
		if rep.Payments[kind] == nil {
			rep.Payments[kind] = map[string]int{}
		}
		for _, res := range p.Results {
			rep.Payments[kind][res]++
		}
		if p.Failed > 0 {
			rep.Payments[kind]["failed_deliveries"] += p.Failed
		}
	}
}

// WriteFiles writes report.json and report.html into dir (created if missing) and returns their paths.
func (rep *Report) WriteFiles(dir string) (jsonPath, htmlPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	jsonPath, htmlPath = filepath.Join(dir, "report.json"), filepath.Join(dir, "report.html")
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(jsonPath, append(js, '\n'), 0o644); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	f, err := os.Create(htmlPath)
	if err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	if err := rep.WriteHTML(f); err != nil {
		f.Close()
		return "", "", fmt.Errorf("write report: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", "", fmt.Errorf("write report: %w", err)
	}
	return jsonPath, htmlPath, nil
}

// Param is the value of one of the run's parameters ("" when unknown).
func (rep *Report) Param(name string) string {
	for _, p := range rep.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// latencyOrder lists outcomes in the order the report shows them.
func (rep *Report) latencyOrder() []string {
	var out []string
	for o := range nOutcomes {
		if _, ok := rep.Latency[o.String()]; ok {
			out = append(out, o.String())
		}
	}
	return out
}

// WriteSummary prints the run in a few lines: counts, latencies, outcomes, the verdict.
func (rep *Report) WriteSummary(w io.Writer) {
	mode := fmt.Sprintf("closed loop, %s buyers in parallel", rep.Param("concurrency"))
	if rep.OfferedRate > 0 {
		mode = fmt.Sprintf("%.0f req/s offered, at most %s in flight", rep.OfferedRate, rep.Param("concurrency"))
	}
	fmt.Fprintf(w, "flash sale %s on %s: %d SKU(s) × %s units, %s for %s\n", rep.RunID, rep.Param("target"), len(rep.SKUs),
		rep.Param("stock"), mode, rep.Param("duration"))
	if !rep.Rejudged.IsZero() {
		fmt.Fprintf(w, "  verdict taken again at %s\n", rep.Rejudged.Format(time.DateTime+" MST"))
	}
	if l, b := rep.Param("per-user-limit"), rep.Param("bot-ratio"); l != "" && l != "none" || b != "" && b != "0" {
		fmt.Fprintf(w, "  per-user limit %s; bots %s of the buyers, up to %s orders a visit, sent %d orders\n", orDash(l), orDash(b), orDash(rep.Param("bot-attempts")), rep.BotRequests)
	}
	if l := rep.shardsText(); l != "" {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "  buyers sent %d (skipped %d), answered %.0f/s: accepted %d, sold out %d, limit exceeded %d, errors %d, waits (503, came back) %d; resends %d\n",
		rep.Sent, rep.Skipped, rep.AnsweredRate, rep.Counts["accepted"], rep.Counts["sold_out"], rep.Counts["limit_exceeded"], rep.Counts["error"], rep.Counts["wait"], rep.Counts["duplicate"])
	for _, l := range rep.toolCPULines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintf(w, "  %-10s %8s %9s %9s %9s %9s %9s\n", "latency", "count", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms")
	for _, name := range rep.latencyOrder() {
		l := rep.Latency[name]
		fmt.Fprintf(w, "  %-10s %8d %9.2f %9.2f %9.2f %9.2f %9.2f\n", name, l.Count, l.P50MS, l.P90MS, l.P99MS, l.P999MS, l.MaxMS)
	}
	if len(rep.Errors) > 0 {
		kinds := make([]string, 0, len(rep.Errors))
		for k := range rep.Errors {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "  errors:")
		for _, k := range kinds {
			fmt.Fprintf(w, " %s=%d", k, rep.Errors[k])
		}
		fmt.Fprintln(w)
	}
	actions := make([]string, 0, len(rep.Orders))
	for a := range rep.Orders {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		fmt.Fprintf(w, "  orders to %-8s %s\n", a, fmtCounts(rep.Orders[a]))
	}
	for _, k := range []string{"on_time", "late", "wrong_amount"} {
		if m, ok := rep.Payments[k]; ok {
			fmt.Fprintf(w, "  payments %-8s %s\n", k, fmtCounts(m))
		}
	}
	for _, m := range rep.Verdict.Money {
		fmt.Fprintf(w, "  money %s: %s\n", m.Currency, m.text())
	}
	for _, u := range rep.Verdict.UserLimits {
		fmt.Fprintf(w, "  per-user limit (%s) %s\n", u.Source, u.text())
	}
	if n := rep.Verdict.SoldOutJudged; n > 0 {
		fmt.Fprintf(w, "  sold out: %d answers judged against the units the requests sent before each could hold (%s=%d)\n", n, CheckUndersold, rep.Verdict.UndersoldUnits)
	}
	if t := rep.Verdict.Refunds; t != nil {
		fmt.Fprintf(w, "  refunds %s\n", t.text())
	}
	if why := rep.Verdict.RefundsNotChecked; why != "" {
		fmt.Fprintf(w, "  %s\n", why)
	}
	for _, l := range rep.Verdict.Fairness.lines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	v := rep.Verdict
	fmt.Fprintf(w, "verdict (%s; quiet=%v):", strings.Join(v.Sources, "+"), v.Quiet)
	for _, c := range AllChecks {
		fmt.Fprintf(w, " %s=%d", c, v.Counts.get(c))
	}
	if f := v.Fairness; f != nil && f.MaxOvertakes != nil {
		fmt.Fprintf(w, " %s=%d (at most %d)", CheckOvertakes, f.Overtakes, *f.MaxOvertakes)
	}
	if v.OK() {
		fmt.Fprintln(w, "  => OK")
	} else {
		fmt.Fprintln(w, "  => FAILED")
	}
	for i, f := range v.Findings {
		if i == 20 {
			fmt.Fprintf(w, "  … %d more findings in the report\n", len(v.Findings)-20)
			break
		}
		fmt.Fprintf(w, "  [%s/%s] %s\n", f.Source, f.Check, findingText(f))
	}
}

// shardsShown reports whether the report states the SKUs' stock shards: the run asked for some
// (--stock-shards), or a SKU's stock is split (stock_shards above 1 at the end).
func (rep *Report) shardsShown() bool {
	if asked := rep.Param("stock-shards"); asked != "" && asked != "not sent" {
		return true
	}
	for _, s := range rep.Final {
		if s.StockShards > 1 {
			return true
		}
	}
	return false
}

// maxShardSKUs is the most SKUs whose stock shards shardsText names one by one; past it, it counts the SKUs
// per shard count.
const maxShardSKUs = 10

// shardsText states the stock shards of each SKU as GET /v1/inventory showed them at the end, and what the
// run asked for ("" when shardsShown is false).
func (rep *Report) shardsText() string {
	if !rep.shardsShown() {
		return ""
	}
	shown := func(n int) string {
		if n == 0 {
			return "unread"
		}
		return strconv.Itoa(n)
	}
	var parts []string
	if len(rep.Final) <= maxShardSKUs {
		for _, s := range rep.Final {
			parts = append(parts, s.SKU+"="+shown(s.StockShards))
		}
	} else {
		count := map[int]int{}
		for _, s := range rep.Final {
			count[s.StockShards]++
		}
		ns := slices.Sorted(maps.Keys(count))
		for _, n := range ns {
			parts = append(parts, fmt.Sprintf("%s on %d SKUs", shown(n), count[n]))
		}
	}
	return fmt.Sprintf("stock shards (GET /v1/inventory at the end): %s; --stock-shards %s", strings.Join(parts, ", "), orDash(rep.Param("stock-shards")))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

func findingText(f Finding) string {
	var about []string
	if f.SKU != "" {
		about = append(about, "sku "+f.SKU)
	}
	if f.OrderID != "" {
		about = append(about, "order "+f.OrderID)
	}
	if f.EventID != "" {
		about = append(about, "event "+f.EventID)
	}
	if f.UserID != "" {
		about = append(about, "user "+f.UserID)
	}
	if len(about) == 0 {
		return f.Detail
	}
	return strings.Join(about, ", ") + ": " + f.Detail
}
