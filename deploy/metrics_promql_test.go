package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The PromQL parser of Prometheus is not in this module's graph (and would bring the server's dependencies),
// so the names are read by a small extractor: a lexer and one pass over its tokens. It knows what PromQL
// puts where a name could stand: strings, numbers and durations, range and subquery brackets, Grafana's
// variables, function and aggregation calls (an identifier before "("), keywords, and the label lists of
// by, without, on, ignoring, group_left and group_right. Any other identifier is a metric name, and the
// identifiers left of the operators in its braces are its matchers' label names.

// promqlRefs is what one PromQL expression names.
type promqlRefs struct {
	// Metrics maps each metric selected to the label names of its matchers (in the order written).
	Metrics map[string][]string
	// Grouping lists the label names of the by, without, on, ignoring, group_left and group_right clauses.
	Grouping []string
}

type tokenKind int

const (
	tokIdent tokenKind = iota
	tokNumber
	tokString
	tokVariable
	tokPunct
)

type promToken struct {
	kind tokenKind
	text string
}

// groupingKeywords take a list of label names in parentheses (group_left and group_right may go without).
var groupingKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// otherKeywords are the identifiers of PromQL that are not metrics and may stand without a "(" after them: the
// aggregations (sum by (le) (...)) and the keywords.
var otherKeywords = []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
	"topk", "quantile", "limitk", "limit_ratio", "and", "or", "unless", "atan2", "offset", "bool", "inf", "nan"}

// matchOps are the operators of a label matcher.
var matchOps = []string{"=", "!=", "=~", "!~"}

// parsePromQL returns the metrics and label names expr names.
func parsePromQL(expr string) (promqlRefs, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return promqlRefs{}, err
	}
	refs := promqlRefs{Metrics: map[string][]string{}}
	next := func(i int) string {
		if i+1 < len(toks) && toks[i+1].kind == tokPunct {
			return toks[i+1].text
		}
		return ""
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tokPunct && t.text == "[":
			// A range or a subquery: durations, steps and Grafana's $__rate_interval, no names.
			end := slices.IndexFunc(toks[i:], func(t promToken) bool { return t.kind == tokPunct && t.text == "]" })
			if end < 0 {
				return refs, fmt.Errorf("%q: a [ without its ]", expr)
			}
			i += end
		case t.kind == tokPunct && t.text == "{":
			return refs, fmt.Errorf("%q: a selector without a metric name before its {", expr)
		case t.kind != tokIdent:
		case slices.Contains(groupingKeywords, strings.ToLower(t.text)):
			if next(i) != "(" {
				continue // group_left or group_right without labels
			}
			labels, end, err := labelList(toks, i+1, ")", expr)
			if err != nil {
				return refs, err
			}
			refs.Grouping = append(refs.Grouping, labels...)
			i = end
		case slices.Contains(otherKeywords, strings.ToLower(t.text)):
		case next(i) == "(":
			// A function or an aggregation.
		default:
			labels := refs.Metrics[t.text]
			if next(i) == "{" {
				matched, end, err := labelList(toks, i+1, "}", expr)
				if err != nil {
					return refs, err
				}
				labels = append(labels, matched...)
				i = end
			}
			refs.Metrics[t.text] = labels
		}
	}
	return refs, nil
}

// labelList reads the label names of the list that opens at toks[open] and closes with closer: the names of a
// by (...) clause, or the names left of each matcher's operator in a selector's braces. It returns them and the
// index of the closer.
func labelList(toks []promToken, open int, closer, expr string) ([]string, int, error) {
	var labels []string
	for i := open + 1; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == tokPunct && t.text == closer:
			return labels, i, nil
		case t.kind == tokPunct && t.text == ",":
		case t.kind == tokIdent && closer == ")":
			labels = append(labels, t.text)
		case t.kind == tokIdent && i+2 < len(toks) && slices.Contains(matchOps, toks[i+1].text) &&
			toks[i+1].kind == tokPunct && (toks[i+2].kind == tokString || toks[i+2].kind == tokVariable):
			labels = append(labels, t.text)
			i += 2
		default:
			return nil, 0, fmt.Errorf("%q: %q where a label name was expected", expr, t.text)
		}
	}
	return nil, 0, fmt.Errorf("%q: a list without its %s", expr, closer)
}

// twoCharOps are the operators of two characters; every other punctuation mark is one.
var twoCharOps = []string{"=~", "!=", "!~", "==", ">=", "<="}

// lexPromQL splits expr into tokens; comments (# to the end of the line) and white space are dropped.
func lexPromQL(expr string) ([]promToken, error) {
	var toks []promToken
	r := []rune(expr)
	identStart := func(c rune) bool { return c == '_' || c == ':' || unicode.IsLetter(c) }
	identPart := func(c rune) bool { return identStart(c) || unicode.IsDigit(c) }
	for i := 0; i < len(r); {
		c := r[i]
		start := i
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '#':
			for i < len(r) && r[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			i++
			for i < len(r) && r[i] != c {
				if r[i] == '\\' && c != '`' {
					i++
				}
				i++
			}
			if i >= len(r) {
				return nil, fmt.Errorf("%q: a string without its closing %c", expr, c)
			}
			i++
			toks = append(toks, promToken{tokString, string(r[start:i])})
		case unicode.IsDigit(c) || c == '.' && i+1 < len(r) && unicode.IsDigit(r[i+1]):
			// Numbers, with exponents (1e-3), hex (0x1f) and durations (5m, 1h30m).
			for i < len(r) && (identPart(r[i]) || r[i] == '.') {
				if (r[i] == 'e' || r[i] == 'E') && i+1 < len(r) && (r[i+1] == '+' || r[i+1] == '-') {
					i++
				}
				i++
			}
			toks = append(toks, promToken{tokNumber, string(r[start:i])})
		case c == '$':
			// A Grafana variable: $name, ${name} or ${name:format}.
			i++
			if i < len(r) && r[i] == '{' {
				for i < len(r) && r[i] != '}' {
					i++
				}
				i++
			} else {
				for i < len(r) && identPart(r[i]) {
					i++
				}
			}
			if i > len(r) || i == start+1 {
				return nil, fmt.Errorf("%q: a $ that names no variable", expr)
			}
			toks = append(toks, promToken{tokVariable, string(r[start:i])})
		case identStart(c):
			for i < len(r) && identPart(r[i]) {
				i++
			}
			toks = append(toks, promToken{tokIdent, string(r[start:i])})
		case strings.ContainsRune("(){}[],+-*/%^=<>!@", c):
			i++
			if i < len(r) && slices.Contains(twoCharOps, string(r[start:i+1])) {
				i++
			}
			if string(r[start:i]) == "!" {
				return nil, fmt.Errorf("%q: a ! without = or ~", expr)
			}
			toks = append(toks, promToken{tokPunct, string(r[start:i])})
		default:
			return nil, fmt.Errorf("%q: unexpected %q", expr, c)
		}
	}
	return toks, nil
}

func TestParsePromQL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		expr     string
		metrics  map[string][]string
		grouping []string
	}{
		{
			name:    "ratio_of_two_selectors_with_matchers",
			expr:    `sum(rate(ordersaga_http_requests_total{code=~"5..", route!="GET /readyz"}[5m])) / sum(rate(ordersaga_http_requests_total{route!="GET /readyz"}[5m])) > 0.01`,
			metrics: map[string][]string{"ordersaga_http_requests_total": {"code", "route", "route"}},
		},
		{
			name:     "histogram_quantile_by_le_with_a_grafana_interval",
			expr:     `histogram_quantile(0.99, sum by (le) (rate(ordersaga_http_request_duration_seconds_bucket{route="POST /v1/orders"}[$__rate_interval])))`,
			metrics:  map[string][]string{"ordersaga_http_request_duration_seconds_bucket": {"route"}},
			grouping: []string{"le"},
		},
		{
			name:     "by_after_the_aggregation_and_without",
			expr:     "sum(increase(ordersaga_reconcile_repairs_total[10m])) by (kind) > 0 or max without (instance, job) (ordersaga_reconcile_last_repairs)",
			metrics:  map[string][]string{"ordersaga_reconcile_repairs_total": nil, "ordersaga_reconcile_last_repairs": nil},
			grouping: []string{"kind", "instance", "job"},
		},
		{
			name:     "vector_matching_and_set_operators",
			expr:     "a_total / on (kind) group_left (step) b unless ignoring(code) c offset 5m and d @ start() > bool 1e-3",
			metrics:  map[string][]string{"a_total": nil, "b": nil, "c": nil, "d": nil},
			grouping: []string{"kind", "step", "code"},
		},
		{
			name:    "time_subquery_and_comment",
			expr:    "time() - max(ordersaga_reconcile_last_run_timestamp_seconds) > 600 # stale\n+ max_over_time(x:recorded[1h:5m])",
			metrics: map[string][]string{"ordersaga_reconcile_last_run_timestamp_seconds": nil, "x:recorded": nil},
		},
		{
			name:     "grafana_variable_as_a_matcher_value_and_group_left_without_labels",
			expr:     `a{instance=~"$instance"} * on (instance) group_left c{job="${job}"}`,
			metrics:  map[string][]string{"a": {"instance"}, "c": {"job"}},
			grouping: []string{"instance"},
		},
		{
			name:    "a_series_of_a_promtool_test",
			expr:    `ordersaga_reserve_outcomes_total{outcome="sold_out_fast_path"}`,
			metrics: map[string][]string{"ordersaga_reserve_outcomes_total": {"outcome"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parsePromQL(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Metrics) != fmt.Sprint(tt.metrics) {
				t.Errorf("metrics %v, want %v", got.Metrics, tt.metrics)
			}
			if !slices.Equal(got.Grouping, tt.grouping) {
				t.Errorf("grouping %q, want %q", got.Grouping, tt.grouping)
			}
		})
	}
}

func TestParsePromQL_RefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		`rate(x[5m)`,                 // a [ without its ]
		`x{job="a"`,                  // braces not closed
		`x{job="a}`,                  // a string not closed
		`{__name__="x"}`,             // no metric name before the braces
		`sum by (kind (x)`,           // a by list not closed
		`x{job}`,                     // a matcher without operator and value
		`x ! y`,                      // not an operator
		"x{job=\"a\"} \u00a7 y",      // not PromQL
		`sum by ("kind") (x)`,        // a string where a label name goes
		`x{job=~"a", "b"="c"}`,       // a quoted label name
		`x{job=~"a", code=5}`,        // a matcher value that is not a string
		`histogram_quantile(0.9, $)`, // a $ that names nothing
		`x{route="POST /v1/orders"`,  // braces not closed after a string
		`x[5m] offset 5m {job="a"}`,  // braces after no metric
		`sum without (job, "x") (y)`, // a string in a without list
		`a / on (kind group_left b`,  // an on list not closed
		`a{job=~"x"} or {job=~"y"}`,  // a selector without a metric name
	} {
		if refs, err := parsePromQL(expr); err == nil {
			t.Errorf("%q: read as %+v, want an error", expr, refs)
		}
	}
}
