package sale

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// sampleReport is a report with every section filled, built without a run.
func sampleReport(t testing.TB) *Report {
	t.Helper()
	cfg := DefaultConfig()
	cfg.AdminToken, cfg.WebhookSecret = "secret-admin", "secret-hook"
	cfg.Target = "http://127.0.0.1:8080"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	st := NewStats(time.Now())
	for i := range 500 {
		st.Record(OutSoldOut, time.Duration(200+i*7)*time.Microsecond)
		if i%5 == 0 {
			st.Record(OutAccepted, time.Duration(8+i%40)*time.Millisecond)
		}
	}
	st.Record(OutError, 3*time.Second)
	st.Error("http_503", `{"type":"about:blank"}`)
	snap := providerSnapshot()
	snap.SKUs[0].API.Holds = ptr[int64](1) // something to show among the findings
	v := Check(snap)
	rep := &Report{
		Tool: "ordersaga flashsale", RunID: cfg.RunID, Params: cfg.Params(), SKUs: cfg.SKUNames(), Snapshot: snap, OfferedRate: 100,
		Started: t0, Finished: t0.Add(30 * time.Second), FireSeconds: 10, QuietSeconds: 5, Sent: 501,
		Counts: map[string]int64{"accepted": 100, "sold_out": 500, "error": 1}, Latency: st.Latencies(),
		Throughput: []ThroughputPoint{{T: 0, Counts: map[string]int64{"sold_out": 250, "accepted": 50}}, {T: 1, Counts: map[string]int64{"sold_out": 250, "accepted": 50, "error": 1}}},
		Stock:      map[string][]StockPoint{"FS-A": {{T: 0, DBStock: 10, RedisAvailable: ptr[int64](10)}, {T: 1, DBStock: 8, RedisAvailable: ptr[int64](7), Holds: 1}, {T: 2, DBStock: 8, RedisAvailable: nil}}},
		Orders:     map[string]map[string]int{ActionPay: {"PAID": 50}, ActionExpire: {"EXPIRED": 50}},
		Payments:   map[string]map[string]int{"on_time": {"applied": 50}, "late": {"refunded": 3, "duplicate": 3}},
		Final:      snap.SKUs, Verdict: v,
	}
	rep.Errors, rep.ErrorSamples = st.Errors()
	return rep
}

func TestReportHTMLIsSelfContained(t *testing.T) {
	rep := sampleReport(t)
	var buf bytes.Buffer
	if err := rep.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	z := html.NewTokenizer(strings.NewReader(page))
	tags := map[string]int{}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatalf("page does not tokenize: %v", z.Err())
			}
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		tags[tok.Data]++
		for _, a := range tok.Attr {
			key := strings.ToLower(a.Key)
			val := strings.ToLower(strings.TrimSpace(a.Val))
			if key == "src" || key == "href" || key == "xlink:href" || key == "srcset" || key == "action" || key == "data" {
				t.Errorf("<%s %s=%q>: the page must not load anything", tok.Data, a.Key, a.Val)
			}
			if strings.Contains(val, "http://") || strings.Contains(val, "https://") || strings.Contains(val, "url(") {
				t.Errorf("<%s %s=%q>: external reference", tok.Data, a.Key, a.Val)
			}
		}
		if tok.Data == "link" || tok.Data == "iframe" || tok.Data == "img" || tok.Data == "object" || tok.Data == "embed" {
			t.Errorf("<%s> in a self-contained page", tok.Data)
		}
	}
	for _, bad := range []string{"@import", "url(", "@font-face", "ZgotmplZ", "secret-admin", "secret-hook"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	// One throughput chart, one stock chart, and a histogram per outcome.
	if want := 2 + len(rep.Latency); tags["svg"] != want {
		t.Errorf("%d <svg> charts, want %d", tags["svg"], want)
	}
	for _, want := range []string{"<polyline", "p99", "sold_out", "lost_units", "FAILED", "stock of FS-A", rep.RunID,
		"unsettled_payments", "refunds_unsent", "refund_ref_mismatch", "Refunds at the provider",
		"<td>3</td><td>3</td><td class=\"zero\">0</td><td class=\"zero\">0</td><td>3</td><td>3</td><td>6</td><td>4</td><td>2</td>", "<td>CNY</td><td>598 (4)</td><td>298 (2)</td><td>598 (4)</td><td>200 (1)</td><td>398 (3)</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil || doc.FirstChild == nil {
		t.Fatalf("page does not parse: %v", err)
	}
}

// writeAndReadBack writes the report's files into a new directory and reads report.json back.
func writeAndReadBack(t *testing.T, rep *Report) (back Report, raw []byte, htmlPath string) {
	t.Helper()
	jsonPath, htmlPath, err := rep.WriteFiles(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err = os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("report.json does not parse: %v", err)
	}
	return back, raw, htmlPath
}

func TestReportFilesRoundTrip(t *testing.T) {
	rep := sampleReport(t)
	back, raw, htmlPath := writeAndReadBack(t, rep)
	if back.RunID != rep.RunID || back.Verdict.LostUnits != 1 || back.Latency["sold_out"].Count != 500 ||
		len(back.Verdict.Money) != 1 || back.Verdict.Money[0].RefundedCents != 398 {
		t.Errorf("report.json lost data: run %q lost %d sold_out %d", back.RunID, back.Verdict.LostUnits, back.Latency["sold_out"].Count)
	}
	if strings.Contains(string(raw), "secret-") {
		t.Error("report.json carries a secret")
	}
	if fi, err := os.Stat(htmlPath); err != nil || fi.Size() == 0 {
		t.Errorf("report.html: %v", err)
	}
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "FAILED") || !strings.Contains(sum.String(), "lost_units=1") ||
		!strings.Contains(sum.String(), "refunds_twice_at_provider=0") ||
		!strings.Contains(sum.String(), "refunds recorded 3 (sent 3, refused 0, unsent 0); at the provider for the run's orders 3, checked 3; provider http://127.0.0.1:8091: requests 6, executed 4, replays 2") ||
		!strings.Contains(sum.String(), "money CNY: sent 598 (4, wrong amount 298 (2)); recorded: captured 598 (4) = applied 200 (1) + refunded 398 (3) + unsettled 0 (0)") {
		t.Errorf("summary:\n%s", sum.String())
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 500}, {0.9, 900}, {0.99, 990}, {1, 1000}} {
		if got := h.Quantile(c.q); got < c.want*0.96 || got > c.want*1.04 {
			t.Errorf("q%.2f = %.1f ms, want %.0f ±4%%", c.q, got, c.want)
		}
	}
	s := h.Summary()
	var n int64
	for _, b := range s.Buckets {
		n += b.Count
	}
	if n != 1000 || s.MaxMS != 1000 {
		t.Errorf("buckets hold %d, max %.1f", n, s.MaxMS)
	}
	for i := range 2000 {
		if lo := bucketLow(bucketOf(uint64(i))); lo > uint64(i) || bucketLow(bucketOf(uint64(i))+1) <= uint64(i) {
			t.Fatalf("value %d in bucket [%d, %d)", i, lo, bucketLow(bucketOf(uint64(i))+1))
		}
	}
}

// A run with a per-user limit and bots: the summary and the page count the limit's refusals apart from the
// sold-out ones and show what the limit check saw.
func TestReportShowsThePerUserLimit(t *testing.T) {
	rep := sampleReport(t)
	cfg := DefaultConfig()
	cfg.PerUserLimit, cfg.BotRatio, cfg.BotAttempts = 1, 0.1, 20
	rep.Params = cfg.Params()
	rep.Counts["limit_exceeded"] = 42
	rep.BotRequests = 300
	rep.Snapshot = limitSnapshot(1)
	rep.Verdict = Check(rep.Snapshot)
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	for _, want := range []string{"sold out 500, limit exceeded 42, errors 1", "per-user limit 1; bots 0.1 of the buyers, up to 20 orders a visit, sent 300 orders",
		"per-user limit (db) 1: most units one user holds of a SKU 2; users at the limit 0, over it 1 (of 1 holding any)",
		"over_limit_units=1", "[api/over_limit_units] sku A, user u: holds 2 units > per-user limit 1 (orders [o1])", "FAILED"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<th>limit exceeded</th>", "<td>42</td>", "Per-user limit", "over_limit_units", "sent 300 orders"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Without a limit or bots the summary says nothing of them.
	plain := sampleReport(t)
	var s2 bytes.Buffer
	plain.WriteSummary(&s2)
	if strings.Contains(s2.String(), "per-user limit") || !strings.Contains(s2.String(), "limit exceeded 0") {
		t.Errorf("summary of a run without a limit:\n%s", s2.String())
	}
}

// A sold-out answer given while units were free: the summary and the page name the check, the SKU and how
// many answers were judged; report.json keeps the request log for --rejudge.
func TestReportShowsUndersold(t *testing.T) {
	rep := sampleReport(t)
	a1 := lines(of("A", 1))
	undersold := runOf(map[string]int64{"A": 100}, reqs(60, 0, 80, OutAccepted, a1), []req{soldOutAt(100, 105, "A", a1)})
	rep.Snapshot.Places = undersold.Places
	rep.Snapshot.SKUs[0].Initial = 100
	rep.Verdict = Check(rep.Snapshot)
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	for _, want := range []string{"undersold_units=40", "sold out: 1 answers judged", "[api/undersold_units] sku A: 1 sold-out answers while units were free",
		"at most 60 of 100 units could be held or sold", "FAILED"} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>undersold_units</td>", "undersold_units judged 1 sold-out answers"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	back, _, _ := writeAndReadBack(t, rep)
	if again := Check(back.Snapshot); again.UndersoldUnits != 40 || back.Verdict.SoldOutJudged != 1 {
		t.Errorf("from report.json: undersold_units %d, judged %d", again.UndersoldUnits, back.Verdict.SoldOutJudged)
	}
}
