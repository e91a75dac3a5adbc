package admission_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/testenv"
)

// TestScriptsAndTransactions_KeysShareOneTag runs every gate call that runs a script (lua/line.lua,
// lua/unadmit.lua and the scripts written inline), and checks each call's keys share one hash tag: Redis
// Cluster refuses a script whose keys cross slots. (The gate runs no MULTI: were one added, its keys would be
// checked too, since go-redis would split a MULTI across slots into one per slot.)
func TestScriptsAndTransactions_KeysShareOneTag(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb, prefix := testenv.RedisClient(t)
	calls := testenv.RecordKeyCalls(rdb)
	rs := redisstock.New(rdb, prefix, 0)
	g := admission.New(rs)
	t.Cleanup(g.Kill)
	sku := "SKU-" + testenv.RandomID(4)
	if err := rs.SetAvailable(ctx, sku, 1); err != nil {
		t.Fatal(err)
	}
	a, refused, err := g.AdmitNow(ctx, []ordersaga.Line{{SKU: sku, Qty: 1}}, time.Minute)
	if err != nil || refused != "" {
		t.Fatalf("admit: %q %v", refused, err)
	}
	if _, refused, err := g.AdmitNow(ctx, []ordersaga.Line{{SKU: sku, Qty: 1}}, time.Minute); err != nil || refused != sku {
		t.Fatalf("admit past the stock: %q %v, want %s refused", refused, err, sku)
	}
	a.Done(ctx)
	if _, err := g.ReapAdmissions(ctx, sku); err != nil {
		t.Fatal(err)
	}
	token, err := g.BeginClaimsBackfill(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.FinishClaimsBackfill(ctx, token); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"line.lua", "unadmit.lua"} {
		src, err := os.ReadFile(filepath.Join("lua", name))
		if err != nil {
			t.Fatal(err)
		}
		if len(calls.Script(string(src))) == 0 {
			t.Errorf("%s: no call ran it", name)
		}
	}
	if n := calls.Scripts(); n != 4 {
		t.Errorf("%d scripts ran, want 4 (line.lua, unadmit.lua, the reap, the backfill's finish)", n)
	}
	all, _ := calls.All()
	for _, keys := range all {
		testenv.CheckOneSlot(t, "a script or MULTI", keys)
	}
}
