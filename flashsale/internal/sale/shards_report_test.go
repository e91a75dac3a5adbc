package sale

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A run with --stock-shards: the summary and the page state each SKU's shards as GET /v1/inventory read them;
// a run without says nothing of shards; report.json keeps them.
func TestReportShowsTheStockShards(t *testing.T) {
	rep := sampleReport(t)
	cfg := DefaultConfig()
	cfg.StockShards = 8
	rep.Params = cfg.Params()
	rep.Snapshot.SKUs[0].StockShards = 8
	rep.Final = rep.Snapshot.SKUs
	sku := rep.Final[0].SKU
	var sum bytes.Buffer
	rep.WriteSummary(&sum)
	want := fmt.Sprintf("stock shards (GET /v1/inventory at the end): %s=8; --stock-shards 8", sku)
	if !strings.Contains(sum.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, sum.String())
	}
	var page bytes.Buffer
	if err := rep.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<th>stock shards</th>", "<td>8</td></tr>", want} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	back, _, _ := writeAndReadBack(t, rep)
	if back.Final[0].StockShards != 8 || back.Snapshot.SKUs[0].StockShards != 8 || back.Param("stock-shards") != "8" {
		t.Errorf("from report.json: final %d, snapshot %d shards, param %q", back.Final[0].StockShards, back.Snapshot.SKUs[0].StockShards, back.Param("stock-shards"))
	}

	// Asked, but the server showed none: unread.
	rep.Snapshot.SKUs[0].StockShards = 0
	sum.Reset()
	rep.WriteSummary(&sum)
	if !strings.Contains(sum.String(), sku+"=unread; --stock-shards 8") {
		t.Errorf("summary of shards asked but unread:\n%s", sum.String())
	}

	// Without the flag and with SKUs that are not split, nothing of shards.
	plain := sampleReport(t)
	plain.Snapshot.SKUs[0].StockShards = 1
	plain.Final = plain.Snapshot.SKUs
	var s2, p2 bytes.Buffer
	plain.WriteSummary(&s2)
	if err := plain.WriteHTML(&p2); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s2.String(), "stock shards") || strings.Contains(p2.String(), "stock shards") {
		t.Errorf("a run without shards speaks of them:\n%s", s2.String())
	}
	// Without the flag, a SKU split already (another run's, --sku-prefix) is stated.
	plain.Snapshot.SKUs[0].StockShards = 4
	s2.Reset()
	plain.WriteSummary(&s2)
	if !strings.Contains(s2.String(), plain.Final[0].SKU+"=4; --stock-shards not sent") {
		t.Errorf("a split SKU the run did not split:\n%s", s2.String())
	}
}

// Past maxShardSKUs SKUs, the summary counts the SKUs per shard count.
func TestShardsTextCountsManySKUs(t *testing.T) {
	rep := &Report{Params: []Param{{"stock-shards", "8"}}}
	for i := range 12 {
		n := 8
		if i == 5 {
			n = 0
		}
		rep.Final = append(rep.Final, SKUSnapshot{SKU: fmt.Sprintf("S%d", i), StockShards: n})
	}
	want := "stock shards (GET /v1/inventory at the end): unread on 1 SKUs, 8 on 11 SKUs; --stock-shards 8"
	if got := rep.shardsText(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
