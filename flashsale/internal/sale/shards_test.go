package sale_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ordersaga/ordersaga/flashsale/internal/sale"
)

// inventoryServer answers PUT and GET /v1/inventory/{sku} with answer (the status and body the test gives for
// the PUT; a GET gets the body of the last PUT answered 200) and records the body of every PUT.
func inventoryServer(t *testing.T, status int, answer func(put map[string]any) string) (url string, puts func() []map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var got []map[string]any
	last := ""
	srv, _ := countConns(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			var body map[string]any
			raw, _ := io.ReadAll(r.Body)
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Errorf("PUT body %q: %v", raw, err)
			}
			if r.Header.Get("Authorization") != "Bearer tok" {
				t.Errorf("PUT without the admin token: %q", r.Header.Get("Authorization"))
			}
			got = append(got, body)
			out := answer(body)
			if status == http.StatusOK {
				last = out
				w.Header().Set("Content-Type", "application/json")
			} else {
				w.Header().Set("Content-Type", "application/problem+json")
			}
			w.WriteHeader(status)
			io.WriteString(w, out)
		case http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, last)
		}
	}))
	return srv.URL, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), got...)
	}
}

// keeping answers a PUT as a server that keeps what it was sent (stock_shards 1 when it was not sent).
func keeping(put map[string]any) string {
	shards := float64(1)
	if v, ok := put["stock_shards"].(float64); ok {
		shards = v
	}
	limit, _ := put["per_user_limit"].(float64)
	b, _ := json.Marshal(map[string]any{"sku": "S", "db_stock": put["stock"], "redis_available": put["stock"], "holds": 0,
		"price_cents": put["price_cents"], "per_user_limit": limit, "drift": 0, "stock_shards": shards})
	return string(b)
}

// With --stock-shards the PUT sends stock_shards, and GET reads it back; without it the field is not sent.
func TestPutInventorySendsStockShards(t *testing.T) {
	url, puts := inventoryServer(t, http.StatusOK, keeping)
	c := sale.NewClient(url, "tok", "", 4, 5*time.Second)
	defer c.Close()
	ctx := context.Background()
	inv, err := c.PutInventory(ctx, "S", 1000, 999, 0, 8)
	if err != nil || inv.DBStock != 1000 {
		t.Fatalf("PUT with 8 shards: %+v, %v", inv, err)
	}
	if _, shards, err := c.GetInventoryShards(ctx, "S"); err != nil || shards != 8 {
		t.Errorf("GET after the PUT: %d shards, %v; want 8", shards, err)
	}
	if _, err := c.PutInventory(ctx, "S", 1000, 999, 2, 0); err != nil {
		t.Fatalf("PUT without shards: %v", err)
	}
	got := puts()
	if len(got) != 2 {
		t.Fatalf("%d PUTs, want 2", len(got))
	}
	if got[0]["stock_shards"] != float64(8) || got[0]["stock"] != float64(1000) || got[0]["price_cents"] != float64(999) {
		t.Errorf("PUT with 8 shards sent %v", got[0])
	}
	if _, ok := got[0]["per_user_limit"]; ok {
		t.Errorf("PUT without a limit sent per_user_limit: %v", got[0])
	}
	if _, ok := got[1]["stock_shards"]; ok || got[1]["per_user_limit"] != float64(2) {
		t.Errorf("PUT with --stock-shards 0 sent %v; want no stock_shards (absent = keep)", got[1])
	}
	if _, shards, err := c.GetInventoryShards(ctx, "S"); err != nil || shards != 1 {
		t.Errorf("GET of a SKU not split: %d shards, %v; want 1", shards, err)
	}
}

// A server that does not show the shards back, or refuses the field, is named as such.
func TestPutInventoryStockShardsRefused(t *testing.T) {
	ctx := context.Background()
	t.Run("answer without stock_shards", func(t *testing.T) {
		url, _ := inventoryServer(t, http.StatusOK, func(map[string]any) string {
			return `{"sku":"S","db_stock":10,"redis_available":10,"holds":0,"price_cents":1,"per_user_limit":0,"drift":0}`
		})
		c := sale.NewClient(url, "tok", "", 4, 5*time.Second)
		defer c.Close()
		_, err := c.PutInventory(ctx, "S", 10, 1, 0, 8)
		if err == nil || !strings.Contains(err.Error(), "stock_shards 8 sent, the answer shows none") {
			t.Errorf("a server that ignores stock_shards: %v", err)
		}
		if _, shards, err := c.GetInventoryShards(ctx, "S"); err != nil || shards != 0 {
			t.Errorf("GET without stock_shards: %d, %v; want 0 (unread)", shards, err)
		}
	})
	t.Run("answer with other shards", func(t *testing.T) {
		url, _ := inventoryServer(t, http.StatusOK, func(put map[string]any) string {
			return strings.Replace(keeping(put), `"stock_shards":8`, `"stock_shards":16`, 1)
		})
		c := sale.NewClient(url, "tok", "", 4, 5*time.Second)
		defer c.Close()
		if _, err := c.PutInventory(ctx, "S", 10, 1, 0, 8); err == nil || !strings.Contains(err.Error(), "the answer shows 16") {
			t.Errorf("a server that shows 16 shards for 8: %v", err)
		}
	})
	t.Run("400 on stock_shards", func(t *testing.T) {
		url, _ := inventoryServer(t, http.StatusBadRequest, func(map[string]any) string {
			return `{"type":"https://ordersaga.dev/problems/invalid-field","title":"A field of the request is not valid","status":400,"detail":"unknown field \"stock_shards\""}`
		})
		c := sale.NewClient(url, "tok", "", 4, 5*time.Second)
		defer c.Close()
		if _, err := c.PutInventory(ctx, "S", 10, 1, 0, 8); err == nil || !strings.Contains(err.Error(), "does the server take stock_shards yet?") {
			t.Errorf("a 400 to a PUT with shards: %v", err)
		}
	})
	t.Run("409 shards-decrease", func(t *testing.T) {
		url, _ := inventoryServer(t, http.StatusConflict, func(map[string]any) string {
			return `{"type":"https://ordersaga.dev/problems/shards-decrease","title":"A SKU's stock shards cannot decrease","status":409,"detail":"stock_shards 2 is below the SKU's 8","field":"stock_shards","sku":"S"}`
		})
		c := sale.NewClient(url, "tok", "", 4, 5*time.Second)
		defer c.Close()
		_, err := c.PutInventory(ctx, "S", 10, 1, 0, 2)
		var ae *sale.APIError
		if !errorsAs(err, &ae) || ae.Status != http.StatusConflict || ae.Field != "stock_shards" || !strings.Contains(err.Error(), "below the SKU's 8") {
			t.Errorf("a 409 shards-decrease: %v", err)
		}
	})
}

func TestValidateStockShards(t *testing.T) {
	for _, tt := range []struct {
		shards int
		ok     bool
	}{{0, true}, {1, true}, {8, true}, {64, true}, {65, false}, {-1, false}} {
		cfg := sale.DefaultConfig()
		cfg.AdminToken, cfg.WebhookSecret, cfg.StockShards = "a", "b", tt.shards
		err := cfg.Validate()
		if (err == nil) != tt.ok || !tt.ok && !strings.Contains(err.Error(), "--stock-shards") {
			t.Errorf("--stock-shards %d: %v, want ok %v", tt.shards, err, tt.ok)
		}
	}
	cfg := sale.DefaultConfig()
	if p := (&sale.Report{Params: cfg.Params()}).Param("stock-shards"); p != "not sent" {
		t.Errorf("param stock-shards by default %q, want not sent", p)
	}
	cfg.StockShards = 8
	if p := (&sale.Report{Params: cfg.Params()}).Param("stock-shards"); p != "8" {
		t.Errorf("param stock-shards %q, want 8", p)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
