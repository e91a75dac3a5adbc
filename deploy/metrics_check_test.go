package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// externalMetrics are the only metrics a deploy file may name that no ordersaga process exports, each with the
// exporter that does. The test scrapes no such exporter, so their labels are not checked.
var externalMetrics = map[string]string{
	"redis_memory_used_bytes": "redis_exporter (deploy/prometheus/redis.yml)",
	"redis_memory_max_bytes":  "redis_exporter (deploy/prometheus/redis.yml)",
}

// targetLabels are the labels Prometheus gives every series it scrapes: the job of prometheus.yml and the
// target's address. No process exports them; every series in Prometheus has them.
var targetLabels = []string{"job", "instance"}

// query is one PromQL expression of a deploy file, and where it stands there.
type query struct {
	where string
	expr  string
}

// unexported returns what q names that no process exports: a metric, a label of a metric's matchers that none
// of its series carries, or a label of a by, without, on or ignoring clause that none of the expression's
// metrics carries.
func unexported(q query, exp Exported) []string {
	refs, err := parsePromQL(q.expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: cannot read the expression: %v", q.where, err)}
	}
	var problems []string
	names := make([]string, 0, len(refs.Metrics))
	for name := range refs.Metrics {
		names = append(names, name)
	}
	sort.Strings(names)
	carried := map[string]bool{}
	external := false
	for _, name := range names {
		if _, ok := externalMetrics[name]; ok {
			external = true
			continue
		}
		have, ok := exp[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: metric %s: no process exports it", q.where, name))
			continue
		}
		for _, l := range refs.Metrics[name] {
			if !have[l] && !slices.Contains(targetLabels, l) {
				problems = append(problems, fmt.Sprintf("%s: label %s of %s: none of its series carries it", q.where, l, name))
			}
		}
		for l := range have {
			carried[l] = true
		}
	}
	if external {
		return problems // an exporter's labels are not known here
	}
	seen := map[string]bool{}
	for _, l := range refs.Grouping {
		if !seen[l] && !carried[l] && !slices.Contains(targetLabels, l) {
			seen[l] = true
			problems = append(problems, fmt.Sprintf("%s: label %s of a by, without, on or ignoring: none of %s carries it",
				q.where, l, strings.Join(names, ", ")))
		}
	}
	return problems
}

// promFile is what the test reads of a file of deploy/prometheus: a rules file's rules, a promtool test file's
// input series and expressions.
type promFile struct {
	Groups []struct {
		Name  string
		Rules []struct {
			Alert, Record, Expr string
		}
	}
	Tests []struct {
		InputSeries []struct {
			Series string
		} `yaml:"input_series"`
		PromQLExprTest []struct {
			Expr string
		} `yaml:"promql_expr_test"`
	}
}

// ruleQueries returns the expressions of a rules file (every rule's expr) or of a promtool test file (every
// input series, as a selector, and every promql_expr_test); a scrape config has none.
func ruleQueries(name string, data []byte) ([]query, error) {
	var f promFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var qs []query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{fmt.Sprintf("%s: group %s: rule %s%s", name, g.Name, r.Alert, r.Record), r.Expr})
		}
	}
	for i, t := range f.Tests {
		for _, s := range t.InputSeries {
			qs = append(qs, query{fmt.Sprintf("%s: test %d: input series", name, i+1), s.Series})
		}
		for _, e := range t.PromQLExprTest {
			qs = append(qs, query{fmt.Sprintf("%s: test %d: promql_expr_test", name, i+1), e.Expr})
		}
	}
	return qs, nil
}

// dashboardPanel is what the test reads of a Grafana panel: its targets, and the panels of a row.
type dashboardPanel struct {
	Title   string
	Type    string
	Targets []struct {
		RefID string
		Expr  string
	}
	Panels []dashboardPanel
}

// dashboardQueries returns every target's expr of a dashboard, rows' panels included. A panel that is not a
// row and has no expression is an error: it would show nothing.
func dashboardQueries(name string, data []byte) ([]query, error) {
	var d struct {
		Panels []dashboardPanel
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var qs []query
	var walk func([]dashboardPanel) error
	walk = func(panels []dashboardPanel) error {
		for _, p := range panels {
			if p.Type == "row" {
				if err := walk(p.Panels); err != nil {
					return err
				}
				continue
			}
			if len(p.Targets) == 0 {
				return fmt.Errorf("%s: panel %q has no query", name, p.Title)
			}
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					return fmt.Errorf("%s: panel %q: target %s has no expr", name, p.Title, t.RefID)
				}
				qs = append(qs, query{fmt.Sprintf("%s: panel %q: target %s", name, p.Title, t.RefID), t.Expr})
			}
		}
		return nil
	}
	return qs, walk(d.Panels)
}

// deployQueries reads every query of deploy/prometheus/*.yml and deploy/grafana/dashboards/*.json, and fails
// if a rules file, the promtool tests or a dashboard holds none (a renamed key would check nothing).
func deployQueries(t testing.TB) []query {
	t.Helper()
	var all []query
	read := func(pattern string, parse func(string, []byte) ([]query, error)) {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no file (%v)", pattern, err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			qs, err := parse(f, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(qs) == 0 && filepath.Base(f) != "prometheus.yml" {
				t.Fatalf("%s: no query found", f)
			}
			all = append(all, qs...)
		}
	}
	read(filepath.Join("prometheus", "*.yml"), ruleQueries)
	read(filepath.Join("grafana", "dashboards", "*.json"), dashboardQueries)
	return all
}

// TestUnexported: the checker reports a misspelt metric, a label its series do not carry and a grouping
// label no metric of the expression carries, in a rules file and in a dashboard, and lets through what is
// exported, the external metrics of its list and the labels Prometheus adds at scrape.
func TestUnexported(t *testing.T) {
	t.Parallel()
	exp := Exported{
		"ordersaga_reserve_outcomes_total":               {"outcome": true},
		"ordersaga_step_stuck_total":                     {"step": true},
		"ordersaga_http_request_duration_seconds_bucket": {"route": true, "le": true},
		"ordersaga_reconcile_last_run_timestamp_seconds": {},
	}
	rules := func(expr string) []byte {
		return []byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: " + expr + "\n")
	}
	dashboard := func(expr string) []byte {
		b, _ := json.Marshal(map[string]any{"panels": []any{
			map[string]any{"type": "row", "title": "r", "panels": []any{
				map[string]any{"type": "timeseries", "title": "p", "targets": []any{map[string]any{"refId": "A", "expr": expr}}},
			}},
		}})
		return b
	}
	tests := []struct {
		name  string
		parse func(string, []byte) ([]query, error)
		data  []byte
		want  []string // what each problem mentions, in order; none when empty
	}{
		{"misspelt_metric_in_a_rule", ruleQueries, rules(`sum(rate(ordersaga_reserve_outcome_total[5m])) > 0`),
			[]string{"rule A: metric ordersaga_reserve_outcome_total: no process exports it"}},
		{"misspelt_metric_in_a_dashboard_row", dashboardQueries, dashboard(`sum(rate(ordersaga_step_stuck[5m]))`),
			[]string{`panel "p": target A: metric ordersaga_step_stuck: no process exports it`}},
		{"label_its_series_do_not_carry", ruleQueries, rules(`ordersaga_reserve_outcomes_total{result="in_line"} > 0`),
			[]string{"label result of ordersaga_reserve_outcomes_total"}},
		{"grouping_label_no_metric_carries", ruleQueries, rules(`sum by (kind) (ordersaga_step_stuck_total) > 0`),
			[]string{"label kind of a by"}},
		{"metric_of_an_exporter_not_in_the_list", ruleQueries, rules(`redis_memory_peak_bytes > 0`),
			[]string{"metric redis_memory_peak_bytes: no process exports it"}},
		{"promtool_input_series", ruleQueries,
			[]byte("tests:\n  - input_series:\n      - series: 'ordersaga_reserve_outcomes_total{outcom=\"sold_out\"}'\n"),
			[]string{"test 1: input series: label outcom of ordersaga_reserve_outcomes_total"}},
		{"exported_names", ruleQueries,
			rules(`histogram_quantile(0.99, sum by (le) (rate(ordersaga_http_request_duration_seconds_bucket{route="POST /v1/orders"}[5m]))) > 1`), nil},
		{"external_metrics_and_target_labels", ruleQueries,
			rules(`redis_memory_used_bytes / (redis_memory_max_bytes > 0) > 0.8 or time() - max by (instance) (ordersaga_reconcile_last_run_timestamp_seconds{job="w"}) > 600`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			qs, err := tt.parse("f", tt.data)
			if err != nil || len(qs) != 1 {
				t.Fatalf("%d queries, %v", len(qs), err)
			}
			got := unexported(qs[0], exp)
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d mentioning %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %q, want one mentioning %q", got[i], w)
				}
			}
		})
	}
}
