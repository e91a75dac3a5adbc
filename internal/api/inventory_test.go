package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/api"
)

func (r response) inventory(t testing.TB) api.InventoryBody {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("inventory: %s", r)
	}
	var b api.InventoryBody
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("inventory body %s: %v", r.body, err)
	}
	return b
}

// TestInventory covers GET and PUT /v1/inventory/{sku}.
func TestInventory(t *testing.T) {
	t.Parallel()
	e := newAPI(t)
	ctx := context.Background()
	admin := map[string]string{"Authorization": "Bearer " + testAdmin}
	put := func(sku, body string, h map[string]string) response {
		return e.do(http.MethodPut, "/v1/inventory/"+sku, []byte(body), h)
	}

	t.Run("put_needs_the_admin_token", func(t *testing.T) {
		t.Parallel()
		for name, h := range map[string]map[string]string{
			"none":          nil,
			"wrong":         {"Authorization": "Bearer not-the-token"},
			"prefix":        {"Authorization": "Bearer " + testAdmin[:5]},
			"longer":        {"Authorization": "Bearer " + testAdmin + "x"},
			"not_bearer":    {"Authorization": "Basic " + testAdmin},
			"lower_case":    {"Authorization": "bearer " + testAdmin},
			"token_no_auth": {"X-Admin-Token": testAdmin},
		} {
			r := put("INV-AUTH", `{"stock":1,"price_cents":1}`, h)
			if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: got %s, want 401 with WWW-Authenticate", name, r)
				continue
			}
			r.wantProblem(t, http.StatusUnauthorized, "unauthorized")
		}
		if _, err := e.Store.Inventory(ctx, "INV-AUTH"); err == nil {
			t.Error("an unauthorized PUT created the SKU")
		}
	})

	t.Run("put_refuses_negative_or_missing_values", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ name, body, kind, field string }{
			{"negative_stock", `{"stock":-1,"price_cents":1}`, "invalid-field", "stock"},
			{"negative_price", `{"stock":1,"price_cents":-1}`, "invalid-field", "price_cents"},
			{"no_stock", `{"price_cents":1}`, "invalid-field", "stock"},
			{"no_price", `{"stock":1}`, "invalid-field", "price_cents"},
			{"fraction", `{"stock":1.5,"price_cents":1}`, "invalid-body", ""},
			{"unknown_field", `{"stock":1,"price_cents":1,"name":"x"}`, "invalid-body", ""},
			{"not_json", `stock=1`, "invalid-body", ""},
		} {
			p := put("INV-BAD", tc.body, admin).wantProblem(t, http.StatusBadRequest, tc.kind)
			if p.Field != tc.field {
				t.Errorf("%s: field %q, want %q", tc.name, p.Field, tc.field)
			}
		}
		put("bad%20sku", `{"stock":1,"price_cents":1}`, admin).wantProblem(t, http.StatusBadRequest, "invalid-field")
	})

	// The scripts keep a stock exact up to 2^53 (a Lua number is a double): past it the PUT is refused, naming
	// the field and the limit; at it, the database and Redis hold the same number.
	t.Run("put_refuses_stock_past_the_lua_limit", func(t *testing.T) {
		t.Parallel()
		const limit = "9007199254740992" // 2^53
		p := put("INV-BIG", `{"stock":9007199254740993,"price_cents":1}`, admin).wantProblem(t, http.StatusBadRequest, "invalid-field")
		if p.Field != "stock" || !strings.Contains(p.Detail, limit) {
			t.Errorf("problem %+v: want field stock and the limit %s in the detail", p, limit)
		}
		if _, err := e.Store.Inventory(ctx, "INV-BIG"); err == nil {
			t.Error("a refused PUT created the SKU")
		}

		b := put("INV-BIG", `{"stock":`+limit+`,"price_cents":1}`, admin).inventory(t)
		if strconv.FormatInt(b.DBStock, 10) != limit || b.RedisAvailable == nil || strconv.FormatInt(*b.RedisAvailable, 10) != limit || *b.Drift != 0 {
			t.Errorf("at the limit: %+v, want db_stock = redis_available = %s", b, limit)
		}
		if raw, err := e.Redis.Client().Get(ctx, e.Redis.AvailKey("INV-BIG")).Result(); err != nil || raw != limit {
			t.Errorf("redis counter %q, %v; want %q", raw, err, limit)
		}
		if inv, err := e.Store.Inventory(ctx, "INV-BIG"); err != nil || strconv.FormatInt(inv.Stock, 10) != limit {
			t.Errorf("db stock %d, %v; want %s", inv.Stock, err, limit)
		}
	})

	t.Run("put_then_get", func(t *testing.T) {
		t.Parallel()
		b := put("INV-1", `{"stock":100,"price_cents":999}`, admin).inventory(t)
		want := api.InventoryBody{SKU: "INV-1", DBStock: 100, RedisAvailable: ptr(int64(100)),
			Holds: ptr(int64(0)), PriceCents: 999, Drift: ptr(int64(0)), StockShards: 1}
		if !equalInventory(b, want) {
			t.Errorf("PUT answered %+v, want %+v", b, want)
		}
		if got := e.do(http.MethodGet, "/v1/inventory/INV-1", nil, nil).inventory(t); !equalInventory(got, want) {
			t.Errorf("GET answered %+v, want %+v", got, want)
		}
		// A second PUT replaces stock and price.
		b = put("INV-1", `{"stock":5,"price_cents":1000}`, admin).inventory(t)
		if b.DBStock != 5 || b.PriceCents != 1000 || *b.RedisAvailable != 5 || *b.Drift != 0 {
			t.Errorf("second PUT answered %+v", b)
		}
	})

	t.Run("put_while_orders_hold_units_never_promises_more_than_the_db", func(t *testing.T) {
		t.Parallel()
		put("INV-HELD", `{"stock":10,"price_cents":100}`, admin).inventory(t)
		// Two orders hold 3 units in Redis; their deducts have not run.
		for _, o := range []struct {
			id  string
			qty int64
		}{{"o-held-1", 1}, {"o-held-2", 2}} {
			if _, err := e.Redis.Reserve(ctx, o.id, "", "INV-HELD", o.qty); err != nil {
				t.Fatal(err)
			}
		}
		b := put("INV-HELD", `{"stock":20,"price_cents":100}`, admin).inventory(t)
		want := api.InventoryBody{SKU: "INV-HELD", DBStock: 20, RedisAvailable: ptr(int64(17)),
			Holds: ptr(int64(3)), PriceCents: 100, Drift: ptr(int64(0)), StockShards: 1}
		if !equalInventory(b, want) {
			t.Errorf("got %+v, want %+v", b, want)
		}
	})

	// The order was restored in the database and its Redis release is still to come when the stock is set:
	// the release must not lift Redis above the database (I3).
	t.Run("put_before_a_pending_release_never_promises_more_than_the_db", func(t *testing.T) {
		t.Parallel()
		const sku, order = "INV-PENDING", "o-inv-pending"
		lines := []ordersaga.Line{{SKU: sku, Qty: 3}}
		put(sku, `{"stock":10,"price_cents":100}`, admin).inventory(t)
		if _, err := e.Redis.Reserve(ctx, order, "", sku, 3); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.Deduct(ctx, ordersaga.DeductInput{OrderID: order, UserID: "u-inv", Currency: testCurrency,
			PayBy: time.Now().Add(time.Hour), Lines: lines}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Redis.Confirm(ctx, order, sku); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Store.Restore(ctx, order, lines); err != nil {
			t.Fatal(err)
		}
		put(sku, `{"stock":12,"price_cents":100}`, admin).inventory(t)
		if _, err := e.Redis.Release(ctx, order, "", sku); err != nil {
			t.Fatal(err)
		}
		b := e.do(http.MethodGet, "/v1/inventory/"+sku, nil, nil).inventory(t)
		if b.RedisAvailable == nil || *b.RedisAvailable > b.DBStock-b.HeldUnits() || *b.Drift != 0 {
			t.Errorf("after the release: redis_available %v, db_stock %d, holds %d; want redis_available = db_stock − holds",
				deref(b.RedisAvailable), b.DBStock, b.HeldUnits())
		}
	})

	// stock_shards: 1 to 64, absent keeps the SKU's (1 for a new SKU), never lowered (409 shards-decrease,
	// nothing changed); the body shows it, on GET too.
	t.Run("put_stock_shards", func(t *testing.T) {
		t.Parallel()
		const sku = "INV-SHARDS"
		for _, tc := range []struct{ name, body, kind, field string }{
			{"zero", `{"stock":1,"price_cents":1,"stock_shards":0}`, "invalid-field", "stock_shards"},
			{"negative", `{"stock":1,"price_cents":1,"stock_shards":-1}`, "invalid-field", "stock_shards"},
			{"65", `{"stock":1,"price_cents":1,"stock_shards":65}`, "invalid-field", "stock_shards"},
			{"string", `{"stock":1,"price_cents":1,"stock_shards":"x"}`, "invalid-body", ""}, // a wrong type, as for every field
			{"fraction", `{"stock":1,"price_cents":1,"stock_shards":1.5}`, "invalid-body", ""},
		} {
			p := put(sku, tc.body, admin).wantProblem(t, http.StatusBadRequest, tc.kind)
			if p.Field != tc.field || !strings.Contains(p.Detail, "stock_shards") {
				t.Errorf("%s: problem %+v, want field %q and stock_shards in the detail", tc.name, p, tc.field)
			}
			if tc.kind == "invalid-field" && !strings.Contains(p.Detail, "from 1 to 64") {
				t.Errorf("%s: detail %q, want the bounds 1 to 64", tc.name, p.Detail)
			}
		}
		if _, err := e.Store.Inventory(ctx, sku); err == nil {
			t.Fatal("a refused PUT created the SKU")
		}

		shardsOf := func(r response) int {
			t.Helper()
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(r.body, &raw); err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(string(raw["stock_shards"]))
			if err != nil {
				t.Fatalf("body %s: stock_shards is not an integer: %v", r.body, err)
			}
			return n
		}
		get := func() response { return e.do(http.MethodGet, "/v1/inventory/"+sku, nil, nil) }
		check := func(step string, r response, stock int64, shards int) {
			t.Helper()
			if b := r.inventory(t); b.DBStock != stock || shardsOf(r) != shards || b.StockShards != shards {
				t.Errorf("%s: %s, want db_stock %d, stock_shards %d", step, r.body, stock, shards)
			}
			if g := get(); shardsOf(g) != shards {
				t.Errorf("%s: GET %s, want stock_shards %d", step, g.body, shards)
			}
			if inv, err := e.Store.Inventory(ctx, sku); err != nil || inv.StockShards != shards || inv.Stock != stock {
				t.Errorf("%s: row %+v, %v; want stock %d, stock_shards %d", step, inv, err, stock, shards)
			}
		}

		check("create with 8", put(sku, `{"stock":10,"price_cents":100,"stock_shards":8}`, admin), 10, 8)
		check("again without the field", put(sku, `{"stock":12,"price_cents":100}`, admin), 12, 8)
		check("grow to 16", put(sku, `{"stock":12,"price_cents":100,"stock_shards":16}`, admin), 12, 16)
		check("the same 16", put(sku, `{"stock":12,"price_cents":100,"stock_shards":16}`, admin), 12, 16)

		p := put(sku, `{"stock":3,"price_cents":100,"stock_shards":8}`, admin).wantProblem(t, http.StatusConflict, "shards-decrease")
		if p.Field != "stock_shards" || p.SKU != sku || !strings.Contains(p.Detail, "stock_shards") ||
			!strings.Contains(p.Detail, "16") || !strings.Contains(p.Detail, "8") {
			t.Errorf("decrease: problem %+v, want field stock_shards, sku %s, a detail naming stock_shards, 16 and 8", p, sku)
		}
		check("after the refused decrease", get(), 12, 16) // nothing changed, the stock asked with it neither

		if r := put("INV-SHARDS-NEW", `{"stock":1,"price_cents":1}`, admin); shardsOf(r) != 1 {
			t.Errorf("new SKU without stock_shards: %s, want stock_shards 1", r.body)
		}
		if r := put("INV-SHARDS-MAX", `{"stock":1,"price_cents":1,"stock_shards":64}`, admin); shardsOf(r) != 64 {
			t.Errorf("new SKU with 64 shards: %s, want stock_shards 64", r.body)
		}
	})

	t.Run("get_unknown_is_404", func(t *testing.T) {
		t.Parallel()
		e.do(http.MethodGet, "/v1/inventory/NO-SUCH-SKU", nil, nil).wantProblem(t, http.StatusNotFound, "unknown-sku")
		e.do(http.MethodGet, "/v1/inventory/bad%20sku", nil, nil).wantProblem(t, http.StatusNotFound, "unknown-sku")
	})

	t.Run("get_not_loaded_in_redis_is_null", func(t *testing.T) {
		t.Parallel()
		if err := e.Store.SetInventory(ctx, "INV-COLD", 7, 50); err != nil {
			t.Fatal(err)
		}
		r := e.do(http.MethodGet, "/v1/inventory/INV-COLD", nil, nil)
		b := r.inventory(t)
		if b.RedisAvailable != nil || b.Drift != nil || b.DBStock != 7 || b.PriceCents != 50 {
			t.Errorf("got %+v, want redis_available and drift null", b)
		}
		var raw map[string]any
		if err := json.Unmarshal(r.body, &raw); err != nil {
			t.Fatal(err)
		}
		if v, ok := raw["redis_available"]; !ok || v != nil {
			t.Errorf("body %s: want \"redis_available\":null", r.body)
		}
	})

	t.Run("drift_shows_redis_out_of_line", func(t *testing.T) {
		t.Parallel()
		put("INV-DRIFT", `{"stock":10,"price_cents":100}`, admin).inventory(t)
		if err := e.Redis.SetAvailable(ctx, "INV-DRIFT", 12); err != nil {
			t.Fatal(err)
		}
		if b := e.do(http.MethodGet, "/v1/inventory/INV-DRIFT", nil, nil).inventory(t); b.Drift == nil || *b.Drift != 2 {
			t.Errorf("got %+v, want drift 2", b)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func equalInventory(a, b api.InventoryBody) bool {
	eq := func(x, y *int64) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return a.SKU == b.SKU && a.DBStock == b.DBStock && eq(a.Holds, b.Holds) && a.PriceCents == b.PriceCents &&
		eq(a.RedisAvailable, b.RedisAvailable) && eq(a.Drift, b.Drift) && a.StockShards == b.StockShards
}
