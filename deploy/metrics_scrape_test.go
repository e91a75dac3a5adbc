package deploy_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs a /metrics in the text exposition format, as Prometheus does, and returns its families by name.
func scrape(tb testing.TB, url string) map[string]*dto.MetricFamily {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("scrape %s: %v", url, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		tb.Fatalf("scrape %s: %s", url, res.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		tb.Fatalf("scrape %s: %v", url, err)
	}
	return families
}

// Exported is what the processes export: each series name (a histogram's _bucket, _sum and _count, a
// summary's _sum and _count, as Prometheus stores them) with the label names its series carry.
type Exported map[string]map[string]bool

// Add adds the families of one scrape.
func (e Exported) Add(families map[string]*dto.MetricFamily) {
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				e.add(name+"_bucket", append(labels, model.BucketLabel))
				e.add(name+"_sum", labels)
				e.add(name+"_count", labels)
			case dto.MetricType_SUMMARY:
				e.add(name, append(labels, model.QuantileLabel))
				e.add(name+"_sum", labels)
				e.add(name+"_count", labels)
			default:
				e.add(name, labels)
			}
		}
	}
}

func (e Exported) add(name string, labels []string) {
	if e[name] == nil {
		e[name] = map[string]bool{}
	}
	for _, l := range labels {
		e[name][l] = true
	}
}
