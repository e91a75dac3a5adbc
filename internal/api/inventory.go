package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ordersaga/ordersaga"
	"github.com/ordersaga/ordersaga/internal/reconcile"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// InventoryBody is the body of GET and PUT /v1/inventory/{sku}.
type InventoryBody = ordersaga.InventoryBody

func inventoryBody(v reconcile.StockView) InventoryBody {
	b := InventoryBody{
		SKU: v.SKU, DBStock: v.DBStock, RedisAvailable: v.RedisAvailable,
		PriceCents: v.PriceCents, PerUserLimit: v.PerUserLimit, Drift: v.Drift(), StockShards: v.StockShards,
	}
	if !v.RedisDown {
		b.Holds = &v.Holds // null while Redis is unreachable
	}
	return b
}

// inventoryRequest is the body of PUT /v1/inventory/{sku}; stock and price_cents are required,
// per_user_limit is optional (absent or 0: no limit), stock_shards is optional (absent: the SKU's, 1 for a
// new SKU).
type inventoryRequest struct {
	Stock        *int64 `json:"stock"`
	PriceCents   *int64 `json:"price_cents"`
	PerUserLimit *int64 `json:"per_user_limit"`
	StockShards  *int64 `json:"stock_shards"`
}

// handleGetInventory is GET /v1/inventory/{sku}.
func (s *server) handleGetInventory() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sku := r.PathValue("sku")
		if !ordersaga.ValidName(sku) {
			writeUnknownSKU(w, "")
			return
		}
		v, err := reconcile.ReadStock(r.Context(), s.Store, s.Redis, sku)
		switch {
		case errors.Is(err, ordersaga.ErrNotFound):
			writeUnknownSKU(w, sku)
		case err != nil:
			s.Logger.Warn("read inventory", "sku", sku, "error", err)
			writeProblem(w, newProblem(kindUnavailable, "the inventory cannot be read right now"))
		default:
			writeJSON(w, http.StatusOK, inventoryBody(v))
		}
	})
}

// handlePutInventory is PUT /v1/inventory/{sku}: sets the database's stock and price and loads Redis to
// match, safe while orders are in flight (reconcile.SetStock). A stock_shards below the SKU's is refused
// (409 shards-decrease): a SKU's shards only grow.
func (s *server) handlePutInventory() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sku := r.PathValue("sku")
		if !ordersaga.ValidName(sku) {
			pr := newProblem(kindInvalidField, "sku: "+nameRule)
			pr.Field = "sku"
			writeProblem(w, pr)
			return
		}
		body, prob := readBody(w, r)
		if prob != nil {
			writeProblem(w, prob)
			return
		}
		var req inventoryRequest
		if err := decodeStrict(body, &req); err != nil {
			writeProblem(w, newProblem(kindInvalidBody, err.Error()))
			return
		}
		var zero int64
		if req.PerUserLimit == nil {
			req.PerUserLimit = &zero
		}
		for _, f := range []struct {
			name     string
			v        *int64
			min, max int64
			rule     string
			optional bool // absent is valid (it was given its default above, or means keep)
		}{
			{"stock", req.Stock, 0, ordersaga.MaxStock, "required, an integer", false},
			{"price_cents", req.PriceCents, 0, ordersaga.MaxPriceCents, "required, an integer", false},
			{"per_user_limit", req.PerUserLimit, 0, ordersaga.MaxStock, "optional, 0 (no limit) or a whole number of units", false},
			{"stock_shards", req.StockShards, 1, ordersaga.MaxStockShards, "optional (absent: the SKU's, 1 for a new SKU), a whole number of Redis counters", true},
		} {
			// The stock's and the limit's bound is the Redis scripts' (ordersaga.MaxStock): past it they round.
			// The price's keeps the largest order's amount within ordersaga.MaxAmountCents.
			if f.v == nil && f.optional {
				continue
			}
			if f.v == nil || *f.v < f.min || *f.v > f.max {
				pr := newProblem(kindInvalidField, fmt.Sprintf("%s: %s from %d to %d", f.name, f.rule, f.min, f.max))
				pr.Field = f.name
				writeProblem(w, pr)
				return
			}
		}
		var shards int // 0: keep the SKU's
		if req.StockShards != nil {
			shards = int(*req.StockShards)
		}
		v, err := reconcile.SetStock(r.Context(), s.Store, s.Redis, sqlstore.InventorySpec{
			SKU: sku, Stock: *req.Stock, PriceCents: *req.PriceCents, PerUserLimit: *req.PerUserLimit, StockShards: shards,
		})
		if errors.Is(err, sqlstore.ErrShardsDecrease) {
			s.Logger.Info("set inventory refused", "sku", sku, "error", err)
			writeProblem(w, shardsDecreaseProblem(sku, shards, err))
			return
		}
		if err != nil {
			s.Logger.Error("set inventory", "sku", sku, "error", err)
			writeProblem(w, newProblem(kindUnavailable, "the inventory could not be set, or Redis not loaded to match; the same PUT is safe to retry"))
			return
		}
		s.placement.Known(sku)
		s.Logger.Info("inventory set", "sku", sku, "stock", v.DBStock, "price_cents", v.PriceCents, "per_user_limit", v.PerUserLimit,
			"stock_shards", v.StockShards, "redis_available", v.RedisAvailable, "holds", v.Holds)
		writeJSON(w, http.StatusOK, inventoryBody(v))
	})
}

// shardsDecreaseProblem is the 409 of a PUT whose stock_shards (asked) is below the SKU's: the order saga
// fixes each order's shard count for its life and a release must find every shard the order could have
// touched, so a SKU's shards only grow. Nothing was changed.
func shardsDecreaseProblem(sku string, asked int, err error) *Problem {
	detail := fmt.Sprintf("stock_shards %d is below the SKU's; a SKU's stock_shards only grows, and nothing was changed", asked)
	if de := (*sqlstore.ShardsDecreaseError)(nil); errors.As(err, &de) {
		detail = fmt.Sprintf("stock_shards %d is below the SKU's %d; a SKU's stock_shards only grows, and nothing was changed", de.Asked, de.Current)
	}
	pr := newProblem(kindShardsDecrease, detail)
	pr.Field, pr.SKU = "stock_shards", sku
	return pr
}

// writeUnknownSKU answers 404 for sku ("" for a name that cannot be a SKU, which is not echoed).
func writeUnknownSKU(w http.ResponseWriter, sku string) {
	if sku == "" {
		writeProblem(w, newProblem(kindUnknownSKU, "no such SKU"))
		return
	}
	pr := newProblem(kindUnknownSKU, "no SKU "+sku+" in the inventory")
	pr.SKU = sku
	writeProblem(w, pr)
}

// requireAdmin lets a request through only with `Authorization: Bearer <ADMIN_TOKEN>`. The comparison is of
// SHA-256 digests in constant time, so neither the token's content nor its length leaks through timing.
func (s *server) requireAdmin(h http.Handler) http.Handler {
	want := sha256.Sum256([]byte(s.AdminToken))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !ok || s.AdminToken == "" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ordersaga admin"`)
			writeProblem(w, newProblem(kindUnauthorized, "PUT /v1/inventory needs Authorization: Bearer <ADMIN_TOKEN>"))
			return
		}
		h.ServeHTTP(w, r)
	})
}
