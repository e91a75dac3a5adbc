package sale

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
)

// series is one line of a chart.
type series struct {
	Name   string
	Color  string
	Points [][2]float64
	Dashed bool
}

// palette colours the outcomes and series consistently.
var palette = map[string]string{
	"accepted": "#2e7d32", "sold_out": "#1565c0", "limit_exceeded": "#9e9d24", "error": "#c62828", "duplicate": "#8e24aa",
	"pay": "#ef6c00", "cancel": "#6d4c41", "late_pay": "#00838f", "wait": "#f9a825", "total": "#424242",
	"waiting": "#6a1b9a", "told_to_wait": "#f9a825", "max_position": "#6a1b9a", "mean_position": "#00897b",
	"db_stock": "#1565c0", "redis_available": "#c62828", "holds": "#ef6c00",
}

func colorOf(name string, i int) string {
	if c, ok := palette[name]; ok {
		return c
	}
	extra := []string{"#5e35b1", "#00897b", "#f9a825", "#d81b60", "#3949ab", "#7cb342"}
	return extra[i%len(extra)]
}

// niceStep is a 1-2-5 step that cuts span into about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	case a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

const (
	chartW, chartH           = 760, 260
	padL, padR, padT, padB   = 60, 16, 14, 40
	legendRowH               = 18
	histW, histH             = 360, 190
	histPadL, histPadB, hpad = 48, 56, 10
)

// lineChart draws series over a shared x axis (seconds) as inline SVG.
func lineChart(title, xLabel, yLabel string, ss []series) template.HTML {
	var b strings.Builder
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	for _, s := range ss {
		for _, p := range s.Points {
			minX, maxX, maxY = math.Min(minX, p[0]), math.Max(maxX, p[0]), math.Max(maxY, p[1])
		}
	}
	if math.IsInf(minX, 1) {
		return template.HTML(`<p class="empty">` + html.EscapeString(title) + `: no data</p>`)
	}
	if maxX == minX {
		maxX = minX + 1
	}
	ystep := niceStep(maxY, 5)
	maxY = math.Max(ystep, math.Ceil(maxY/ystep)*ystep)
	legendH := legendRowH * ((len(ss) + 3) / 4)
	h := chartH + legendH
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	x := func(v float64) float64 { return padL + (v-minX)/(maxX-minX)*plotW }
	y := func(v float64) float64 { return padT + plotH - v/maxY*plotH }
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, chartW, h, chartW, h, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" class="plot"/>`, padL, padT, plotW, plotH)
	for v := 0.0; v <= maxY+ystep/2; v += ystep {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" class="grid"/><text x="%d" y="%.1f" class="tick" text-anchor="end">%s</text>`,
			padL, padL+plotW, y(v), y(v), padL-6, y(v)+4, fmtNum(v))
	}
	xstep := niceStep(maxX-minX, 8)
	for v := math.Ceil(minX/xstep) * xstep; v <= maxX+xstep/1000; v += xstep {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="grid"/><text x="%.1f" y="%.1f" class="tick" text-anchor="middle">%s</text>`,
			x(v), x(v), float64(padT), padT+plotH, x(v), padT+plotH+16, fmtNum(v))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axis" text-anchor="middle">%s</text>`, padL+plotW/2, chartH-6, html.EscapeString(xLabel))
	fmt.Fprintf(&b, `<text x="14" y="%.1f" class="axis" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, padT+plotH/2, padT+plotH/2, html.EscapeString(yLabel))
	for i, s := range ss {
		if len(s.Points) == 0 {
			continue
		}
		var pts strings.Builder
		for _, p := range s.Points {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(p[0]), y(p[1]))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.8"%s points="%s"><title>%s</title></polyline>`,
			s.Color, dash, strings.TrimSpace(pts.String()), html.EscapeString(s.Name))
		lx, ly := padL+(i%4)*180, chartH+legendRowH*(i/4)+4
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="4" fill="%s"/><text x="%d" y="%d" class="legend">%s</text>`,
			lx, ly+4, s.Color, lx+20, ly+10, html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// histChart draws one outcome's latency histogram as bars over its (log-spaced) buckets.
func histChart(name string, s LatencySummary, color string) template.HTML {
	var b strings.Builder
	if len(s.Buckets) == 0 {
		return ""
	}
	var most int64
	for _, bk := range s.Buckets {
		most = max(most, bk.Count)
	}
	plotW, plotH := float64(histW-histPadL-hpad), float64(histH-hpad-histPadB)
	bw := plotW / float64(len(s.Buckets))
	fmt.Fprintf(&b, `<svg class="hist" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s latency histogram">`,
		histW, histH, histW, histH, html.EscapeString(name))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" class="plot"/>`, histPadL, hpad, plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick" text-anchor="end">%s</text><text x="%d" y="%.0f" class="tick" text-anchor="end">0</text>`,
		histPadL-4, hpad+8, fmtNum(float64(most)), histPadL-4, float64(hpad)+plotH)
	for i, bk := range s.Buckets {
		bh := float64(bk.Count) / float64(max(most, 1)) * plotH
		x := float64(histPadL) + float64(i)*bw
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s–%s ms: %d</title></rect>`,
			x+1, float64(hpad)+plotH-bh, math.Max(bw-2, 1), bh, color, fmtNum(bk.LowMS), fmtNum(bk.HighMS), bk.Count)
		if len(s.Buckets) <= 12 || i%2 == 0 {
			lx, ly := x+bw/2, float64(hpad)+plotH+10
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="tick" text-anchor="end" transform="rotate(-45 %.1f %.1f)">%s</text>`,
				lx, ly, lx, ly, fmtNum(bk.LowMS))
		}
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="axis" text-anchor="middle">latency (ms, bucket start)</text>`, float64(histPadL)+plotW/2, histH-4)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
