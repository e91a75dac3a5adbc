package sale

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sort"
)

//go:embed report.html.tmpl
var reportTemplate string

var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":   func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"num":  func(v float64) string { return fmtNum(v) },
	"text": findingText,
}).Parse(reportTemplate))

type checkRow struct {
	Name     string
	N        int64
	BySource map[string]int64
}

type latencyRow struct {
	Name  string
	Color string
	LatencySummary
	Chart template.HTML
}

type stockChart struct {
	SKU   string
	Chart template.HTML
}

type countRow struct {
	Name   string
	Counts string
}

type pageData struct {
	*Report
	OK           bool
	Checks       []checkRow
	Findings     []Finding
	MoreFinds    int
	LatencyRows  []latencyRow
	Throughput   template.HTML
	StockCharts  []stockChart
	OrderRows    []countRow
	PayRows      []countRow
	ErrorRows    []countRow
	ToolCPULines []string
	// ShowShards adds the final inventory's stock shards column; ShardsText states them (Report.shardsText).
	ShowShards bool
	ShardsText string
	// LineChart plots the line's length over time; PositionChart the positions the answers gave ("" when none).
	LineChart     template.HTML
	PositionChart template.HTML
	Lead          string
}

// maxFindingsShown bounds the findings listed on the page (the JSON has them all).
const maxFindingsShown = 200

// WriteHTML renders the report as one self-contained page: inline CSS and SVG, no script, font or image
// fetched from anywhere, so it opens offline.
func (rep *Report) WriteHTML(w io.Writer) error {
	d := pageData{Report: rep, OK: rep.Verdict.OK(), ToolCPULines: rep.toolCPULines(), ShowShards: rep.shardsShown(), ShardsText: rep.shardsText()}
	for _, c := range AllChecks {
		row := checkRow{Name: c, N: rep.Verdict.Counts.get(c), BySource: map[string]int64{}}
		for src, counts := range rep.Verdict.BySource {
			row.BySource[src] = counts.get(c)
		}
		d.Checks = append(d.Checks, row)
	}
	d.Findings = rep.Verdict.Findings
	if len(d.Findings) > maxFindingsShown {
		d.MoreFinds = len(d.Findings) - maxFindingsShown
		d.Findings = d.Findings[:maxFindingsShown]
	}
	for i, name := range rep.latencyOrder() {
		l := rep.Latency[name]
		c := colorOf(name, i)
		d.LatencyRows = append(d.LatencyRows, latencyRow{Name: name, Color: c, LatencySummary: l, Chart: histChart(name, l, c)})
	}
	d.Throughput = throughputChart(rep)
	d.LineChart, d.PositionChart, d.Lead = lineLengthChart(rep.Line), positionChart(rep.Positions), OvertakeLead.String()
	skus := make([]string, 0, len(rep.Stock))
	for sku := range rep.Stock {
		skus = append(skus, sku)
	}
	sort.Strings(skus)
	for _, sku := range skus {
		d.StockCharts = append(d.StockCharts, stockChart{SKU: sku, Chart: stockLines(sku, rep.Stock[sku])})
	}
	for _, a := range sortedMapKeys(rep.Orders) {
		d.OrderRows = append(d.OrderRows, countRow{Name: a, Counts: fmtCounts(rep.Orders[a])})
	}
	for _, k := range sortedMapKeys(rep.Payments) {
		d.PayRows = append(d.PayRows, countRow{Name: k, Counts: fmtCounts(rep.Payments[k])})
	}
	for _, k := range sortedMapKeys(rep.Errors) {
		d.ErrorRows = append(d.ErrorRows, countRow{Name: k, Counts: fmt.Sprint(rep.Errors[k])})
	}
	return reportPage.Execute(w, d)
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// throughputChart plots requests finished per second, per outcome and in total.
func throughputChart(rep *Report) template.HTML {
	var ss []series
	total := series{Name: "total", Color: colorOf("total", 0), Dashed: true}
	for i, name := range outcomeNames {
		s := series{Name: name, Color: colorOf(name, i)}
		any := false
		for _, p := range rep.Throughput {
			n := p.Counts[name]
			any = any || n > 0
			s.Points = append(s.Points, [2]float64{p.T, float64(n)})
		}
		if any {
			ss = append(ss, s)
		}
	}
	for _, p := range rep.Throughput {
		var n int64
		for _, c := range p.Counts {
			n += c
		}
		total.Points = append(total.Points, [2]float64{p.T, float64(n)})
	}
	ss = append(ss, total)
	return lineChart("throughput", "seconds since start", "requests finished per second", ss)
}

// stockLines plots one SKU's stock as the database and Redis showed it, and the Redis holds.
func stockLines(sku string, pts []StockPoint) template.HTML {
	db := series{Name: "db_stock", Color: colorOf("db_stock", 0)}
	rd := series{Name: "redis_available", Color: colorOf("redis_available", 0), Dashed: true}
	holds := series{Name: "holds", Color: colorOf("holds", 0)}
	for _, p := range pts {
		db.Points = append(db.Points, [2]float64{p.T, float64(p.DBStock)})
		if p.RedisAvailable != nil {
			rd.Points = append(rd.Points, [2]float64{p.T, float64(*p.RedisAvailable)})
		}
		holds.Points = append(holds.Points, [2]float64{p.T, float64(p.Holds)})
	}
	return lineChart("stock of "+sku, "seconds since start", "units", []series{db, rd, holds})
}

// lineLengthChart plots the sale buyers arrived and not finally answered, and those told to wait, over time.
func lineLengthChart(pts []LinePoint) template.HTML {
	if len(pts) == 0 {
		return ""
	}
	waiting := series{Name: "waiting", Color: colorOf("waiting", 0)}
	told := series{Name: "told_to_wait", Color: colorOf("told_to_wait", 0), Dashed: true}
	for _, p := range pts {
		waiting.Points = append(waiting.Points, [2]float64{p.T, float64(p.Waiting)})
		told.Points = append(told.Points, [2]float64{p.T, float64(p.ToldToWait)})
	}
	return lineChart("the line", "seconds since start", "buyers waiting", []series{waiting, told})
}

// positionChart plots the positions in the line the answers gave, per second ("" when none gave one).
func positionChart(pts []PositionPoint) template.HTML {
	if len(pts) == 0 {
		return ""
	}
	most := series{Name: "max_position", Color: colorOf("max_position", 0)}
	mean := series{Name: "mean_position", Color: colorOf("mean_position", 0), Dashed: true}
	for _, p := range pts {
		most.Points = append(most.Points, [2]float64{p.T, float64(p.Max)})
		mean.Points = append(mean.Points, [2]float64{p.T, p.Mean})
	}
	return lineChart("positions in the line", "seconds since start", "position", []series{most, mean})
}
