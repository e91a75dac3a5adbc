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
		want := api.InventoryBody{SKU: "INV-1", DBStock: 100, RedisAvailable: ptr(int64(100)), Holds: ptr(int64(0)), PriceCents: 999, Drift: ptr(int64(0))}
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
		want := api.InventoryBody{SKU: "INV-HELD", DBStock: 20, RedisAvailable: ptr(int64(17)), Holds: ptr(int64(3)), PriceCents: 100, Drift: ptr(int64(0))}
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
		eq(a.RedisAvailable, b.RedisAvailable) && eq(a.Drift, b.Drift)
}
