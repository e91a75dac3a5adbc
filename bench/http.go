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

	"go.temporal.io/sdk/client"

	"github.com/ordersaga/ordersaga/internal/admission"
	"github.com/ordersaga/ordersaga/internal/api"
	"github.com/ordersaga/ordersaga/internal/placement"
	"github.com/ordersaga/ordersaga/internal/redisstock"
	"github.com/ordersaga/ordersaga/internal/sqlstore"
)

// benchHTTP is layer 1: sold-out rejections per second through the order API (POST /v1/orders on a SKU
// Redis says is sold out, a new Idempotency-Key each time) against a bare net/http handler that reads the
// body and answers the same 409 problem; both on loopback TCP, through the same kind of client. Measured on
// MariaDB + Redis and on the local stack's stores (SQLite + miniredis), and against the statements the API
// ran before its fast path moved ahead of the database (what that bought).
func benchHTTP(ctx context.Context, o opts) ([]pair, error) {
	problem := []byte(`{"type":"` + api.ProblemTypeBase + `sold-out","title":"Sold out","status":409,"detail":"SKU BENCH-GONE has fewer units than the order asks for","sku":"BENCH-GONE"}`)
	bareSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write(problem)
	}))
	defer bareSrv.Close()
	hc := &http.Client{Transport: &http.Transport{
		DialContext:  (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns: o.conc * 2, MaxIdleConnsPerHost: o.conc * 2, DisableCompression: true,
	}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	run := "h" + randomID()
	post := func(base string) op {
		return func(ctx context.Context, w int, seq int64) error {
			body := []byte(`{"user_id":"bench-u` + strconv.Itoa(w) + `","lines":[{"sku":"` + soldOutSKU + `","qty":1}]}`)
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
	var out []pair
	for _, kind := range []string{"real", "embedded"} {
		rs, store, closeStores, err := openStores(ctx, o, kind)
		if err != nil {
			return nil, err
		}
		defer closeStores()
		apiURL, before, err := soldOutServers(ctx, rs, store)
		if err != nil {
			return nil, err
		}
		if err := post(apiURL)(ctx, 0, -1); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		stores := "MariaDB + real Redis"
		layer := "1 sold-out rejections via HTTP"
		if kind == "embedded" {
			stores, layer = "SQLite + miniredis (the local stack's stores)", "1s sold-out rejections via HTTP, local stack's stores"
		}
		profile := ""
		if kind == "real" {
			profile = "http-soldout"
		}
		real, limit := measurePair(ctx, o, o.conc, profile, "POST /v1/orders → 409 (internal/api)", post(apiURL),
			"bare net/http handler → 409", post(bareSrv.URL))
		now, prev := measurePair(ctx, o, o.conc, "", "POST /v1/orders → 409 (internal/api)", post(apiURL),
			"the API's statements before: key claimed in the DB, then Redis", post(before))
		out = append(out,
			pair{Layer: layer, Real: real, Limit: limit, Target: 0.8,
				Comment: fmt.Sprintf("httptest on loopback, %d keep-alive clients, a new Idempotency-Key per request, %s", o.conc, stores)},
			pair{Layer: layer + " — what the Redis-first fast path bought", Real: now, Limit: prev,
				Comment: "the API (one pipelined Redis round trip: stock + the key's marker) against a handler running the statements the API ran before (INSERT + SELECT of the key, Redis GET, SELECT again), same stores (ratio > 100% = gain)"})
	}
	return out, nil
}

const soldOutSKU = "BENCH-GONE"

// soldOutServers starts the order API on the stores with soldOutSKU sold out, waits until its fast path is on
// (the idempotency markers backfilled), and starts the handler of the statements it ran before. The servers
// stop when ctx is done.
func soldOutServers(ctx context.Context, rs *redisstock.Store, store *sqlstore.Store) (apiURL, beforeURL string, err error) {
	if err := store.SetInventory(ctx, soldOutSKU, 0, 999); err != nil {
		return "", "", err
	}
	if err := rs.SetAvailable(ctx, soldOutSKU, 0); err != nil {
		return "", "", err
	}
	// The sold-out path never reaches Temporal: a lazy client that would fail on first use proves it.
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	if err != nil {
		return "", "", err
	}
	gate := admission.New(rs)
	apiSrv := httptest.NewServer(api.NewServer(api.Deps{Temporal: tc, Store: store, Redis: rs, Gate: gate, Currency: "CNY",
		WebhookSecrets: []string{"bench"}, AdminToken: "bench"}))
	beforeSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		key := r.Header.Get("Idempotency-Key")
		nonce := placement.NewNonce()
		claim := sqlstore.IdempotencyClaim{UserID: req.UserID, Key: key, Fingerprint: "fingerprint", Nonce: nonce,
			OrderID: placement.OrderID(req.UserID, key, nonce, 0)}
		if _, _, err := store.ClaimIdempotencyKey(r.Context(), claim, placement.DefaultRetention); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		avail, loaded, err := rs.Available(r.Context(), req.Lines[0].SKU)
		if err != nil || !loaded || avail >= req.Lines[0].Qty {
			http.Error(w, "not the sold-out path", http.StatusInternalServerError)
			return
		}
		if _, err := store.IdempotencyKey(r.Context(), req.UserID, key); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"type":"` + api.ProblemTypeBase + `sold-out","title":"Sold out","status":409,"sku":"` + soldOutSKU + `"}`))
	}))
	go func() {
		<-ctx.Done()
		apiSrv.Close()
		beforeSrv.Close()
		tc.Close()
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		ready, err := gate.ClaimsReady(ctx)
		if err != nil {
			return "", "", err
		}
		if ready {
			return apiSrv.URL, beforeSrv.URL, nil
		}
		if time.Now().After(deadline) {
			return "", "", errors.New("the order API's sold-out fast path is not on after a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
