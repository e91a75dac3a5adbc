package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/activities"
	"github.com/ordersaga/ordersaga/internal/api"
)

// benchHTTP is layer 1: sold-out rejections per second through the order API (POST /v1/orders on a SKU
// Redis says is sold out, a new Idempotency-Key each time) against a bare net/http handler that reads the
// body and answers the same 409 problem; both on loopback TCP, through the same kind of client.
func benchHTTP(ctx context.Context, o opts) ([]pair, error) {
	dsn, drop, err := createMySQLDatabase(ctx, o.mysqlDSN)
	if err != nil {
		return nil, err
	}
	defer drop()
	store, err := activities.OpenDB(ctx, dsn, "")
	if err != nil {
		return nil, err
	}
	defer store.Close()
	rdb := redis.NewClient(&redis.Options{Addr: o.redisAddr, PoolSize: 128, MinIdleConns: 8})
	defer rdb.Close()
	prefix := "bench" + randomID() + ":"
	defer deleteKeys(context.WithoutCancel(ctx), rdb, prefix)
	rs := activities.NewRedisStock(rdb, prefix, time.Hour)
	const sku = "BENCH-GONE"
	if err := store.SetInventory(ctx, sku, 0, 999); err != nil {
		return nil, err
	}
	if err := rs.SetAvailable(ctx, sku, 0); err != nil {
		return nil, err
	}
	// The sold-out path never reaches Temporal: a lazy client that would fail on first use proves it.
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		return nil, err
	}
	defer tc.Close()
	apiSrv := httptest.NewServer(api.NewServer(api.Deps{Temporal: tc, Store: store, Redis: rs, Currency: "CNY",
		WebhookSecrets: []string{"bench"}, AdminToken: "bench"}))
	defer apiSrv.Close()
	problem := []byte(`{"type":"` + api.ProblemTypeBase + `sold-out","title":"Sold out","status":409,"detail":"SKU BENCH-GONE has fewer units than the order asks for","sku":"BENCH-GONE"}`)
	bareSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write(problem)
	}))
	defer bareSrv.Close()
	// The candidate: the same request decoded, Redis asked first, and the key only read (never written) when
	// Redis says sold out — so a sold-out answer costs a Redis GET and a primary-key SELECT, no INSERT.
	candidate := func(redisOnly bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				UserID string `json:"user_id"`
				Lines  []struct {
					SKU string `json:"sku"`
					Qty int64  `json:"qty"`
				} `json:"lines"`
			}
			dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil || len(req.Lines) == 0 {
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			avail, loaded, err := rs.Available(r.Context(), req.Lines[0].SKU)
			if err != nil || !loaded || avail >= req.Lines[0].Qty {
				http.Error(w, "not the sold-out path", http.StatusInternalServerError)
				return
			}
			key := r.Header.Get("Idempotency-Key")
			if redisOnly {
				// Redis holds a marker per key whose workflow was started; one pipelined round trip.
				pipe := rdb.Pipeline()
				exists := pipe.Exists(r.Context(), prefix+"idem:{"+req.UserID+"}:"+key)
				if _, err := pipe.Exec(r.Context()); err != nil || exists.Val() != 0 {
					http.Error(w, "key known or unreadable", http.StatusInternalServerError)
					return
				}
			} else if _, err := store.IdempotencyKey(r.Context(), req.UserID, key); !errors.Is(err, activities.ErrNotFound) {
				http.Error(w, fmt.Sprintf("key known or unreadable: %v", err), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write(problem)
		})
	}
	candSrv := httptest.NewServer(candidate(false))
	defer candSrv.Close()
	cand2Srv := httptest.NewServer(candidate(true))
	defer cand2Srv.Close()

	hc := &http.Client{Transport: &http.Transport{
		DialContext:  (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns: o.conc * 2, MaxIdleConnsPerHost: o.conc * 2, DisableCompression: true,
	}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	run := "h" + randomID()
	post := func(base string) op {
		return func(ctx context.Context, w int, seq int64) error {
			body := []byte(`{"user_id":"bench-u` + strconv.Itoa(w) + `","lines":[{"sku":"` + sku + `","qty":1}]}`)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/orders", bytes.NewReader(body))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", run+"-"+strconv.FormatInt(seq, 10))
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusConflict || !bytes.Contains(raw, []byte("sold-out")) {
				return fmt.Errorf("want 409 sold-out, got %d %s", resp.StatusCode, raw)
			}
			return nil
		}
	}
	if err := post(apiSrv.URL)(ctx, 0, -1); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	real, limit := measurePair(ctx, o, o.conc, "http-soldout", "POST /v1/orders → 409 (internal/api)", post(apiSrv.URL),
		"bare net/http handler → 409", post(bareSrv.URL))
	cand, limit2 := measurePair(ctx, o, o.conc, "", "candidate handler: Redis first, key only read", post(candSrv.URL),
		"bare net/http handler → 409", post(bareSrv.URL))
	cand2, limit3 := measurePair(ctx, o, o.conc, "", "candidate handler: Redis only", post(cand2Srv.URL),
		"bare net/http handler → 409", post(bareSrv.URL))
	return []pair{
		{Layer: "1 sold-out rejections via HTTP", Real: real, Limit: limit, Target: 0.8,
			Comment: fmt.Sprintf("httptest on loopback, %d keep-alive clients, a new Idempotency-Key per request, MariaDB + real Redis", o.conc)},
		{Layer: "1 … candidate: Redis check before the key claim", Real: cand, Limit: limit2,
			Comment: "candidate, not in the code: decode, Redis GET, SELECT of the key (no INSERT), 409"},
		{Layer: "1 … candidate: Redis check and a Redis key marker", Real: cand2, Limit: limit3,
			Comment: "candidate, not in the code: decode, Redis GET of the stock + EXISTS of a per-key marker the API would set when it starts a workflow, 409"},
	}, nil
}
